//! The annotated fn: attributes, visibility and signature parsed, the body kept as the
//! original tokens (never parsed, never rewritten: the user's fn is emitted untouched).

use proc_macro2::{Delimiter, Group, Span};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Error, Result, Signature, Token, Visibility};

/// The item under `#[browser_fault]`.
#[derive(Debug)]
pub(crate) struct ScenarioFn {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) sig: Signature,
}

impl Parse for ScenarioFn {
    fn parse(input: ParseStream<'_>) -> Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let _vis: Visibility = input.parse()?;
        if !starts_a_fn(input) {
            return Err(input.error(
                "#[browser_fault] goes on a scenario: `async fn name(w: &mut Worker) -> TaskResult`",
            ));
        }
        let sig: Signature = input.parse()?;
        if input.peek(Token![;]) {
            return Err(input.error("a scenario fn needs a body"));
        }
        let body: Group = input.parse()?;
        if body.delimiter() != Delimiter::Brace {
            return Err(Error::new(body.span(), "expected the fn body in `{ ... }`"));
        }
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the fn body"));
        }
        Ok(ScenarioFn { attrs, sig })
    }
}

fn starts_a_fn(input: ParseStream<'_>) -> bool {
    input.peek(Token![fn])
        || input.peek(Token![async])
        || input.peek(Token![const])
        || input.peek(Token![unsafe])
        || input.peek(Token![extern])
}

/// The source line of `span`, or 0 outside a compiler-driven expansion (unit tests).
pub(crate) fn line_of(span: Span) -> u32 {
    if proc_macro::is_available() {
        // `Span::unwrap` converts to the compiler's span (it is not `Option::unwrap`); it
        // cannot panic once `is_available` holds. `proc_macro::Span::line` is stable since
        // Rust 1.88.
        u32::try_from(span.unwrap().line()).unwrap_or(0)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn parses_a_pub_async_fn_with_docs_and_attributes() {
        let f: ScenarioFn = syn::parse2(quote! {
            /// Sends a message.
            #[allow(unused)]
            pub(crate) async fn send_message(w: &mut Worker) -> TaskResult { w.go().await?; Ok(Outcome::Completed) }
        })
        .expect("parses");
        assert_eq!(f.sig.ident, "send_message");
        assert_eq!(f.attrs.len(), 2);
    }

    #[test]
    fn rejects_a_struct() {
        let e = syn::parse2::<ScenarioFn>(quote!(
            struct S;
        ))
        .expect_err("not a fn");
        assert!(
            e.to_string()
                .starts_with("#[browser_fault] goes on a scenario")
        );
    }

    #[test]
    fn rejects_a_fn_without_a_body() {
        let e = syn::parse2::<ScenarioFn>(quote!(
            async fn f(w: &mut W) -> T;
        ))
        .expect_err("no body");
        assert_eq!(e.to_string(), "a scenario fn needs a body");
    }

    #[test]
    fn reports_line_zero_outside_the_compiler() {
        assert_eq!(line_of(Span::call_site()), 0);
    }
}
