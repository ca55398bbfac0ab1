//! What an invalid `#[browser_fault]` expands to: the user's fn exactly as written, plus the
//! errors. Nothing is registered, and no secondary error follows from half-generated code;
//! editors keep seeing the fn.

use proc_macro2::TokenStream;

/// `item` unchanged, followed by one `compile_error!` per error.
pub(crate) fn expand(mut item: TokenStream, error: syn::Error) -> TokenStream {
    item.extend(error.into_compile_error());
    item
}
