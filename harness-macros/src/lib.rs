//! The `#[browser_fault]` attribute. Use it through `browser-fault`, which re-exports it.
