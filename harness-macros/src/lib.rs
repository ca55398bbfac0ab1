//! The `#[browser_fault]` attribute. Use it through `browser-fault`, which re-exports it.

use proc_macro::TokenStream;

/// See `browser_fault::browser_fault`.
#[proc_macro_attribute]
pub fn browser_fault(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
