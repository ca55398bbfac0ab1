//! The `#[browser_fault]` attribute: parse (`attr.rs`, `ast.rs`) → check (`valid.rs`) →
//! generate (`expand.rs`, or `fallback.rs` on error). Use it through `browser-fault`, which
//! re-exports it with its documentation.

mod ast;
mod attr;
mod expand;
mod fallback;
mod names;
mod valid;

use proc_macro::TokenStream;

/// See `browser_fault::browser_fault`.
#[proc_macro_attribute]
pub fn browser_fault(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::browser_fault(args.into(), item.into()).into()
}
