//! browser-fault suites.
