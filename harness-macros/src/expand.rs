//! Code generation: the user's fn untouched, a boxed entry point, the registration, and the
//! `#[test]` for ordinary libtest targets. Everything generated is named after the fn's ident
//! and reaches its dependencies through `::browser_fault::__private_v<major>_<minor>`, named
//! after this crate's release: `browser-fault` pins this crate with `=`, so the two agree, and
//! a skew would say the module is missing rather than fail on a type in the user's code.

use proc_macro2::{Delimiter, Group, Ident, Literal, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, ReturnType};

use crate::ast::{self, ScenarioFn};
use crate::attr::{Args, Errors};
use crate::fallback;
use crate::valid::{self, Plan};

/// `#[browser_fault(args)] item`.
pub(crate) fn browser_fault(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let func: ScenarioFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(e) => {
            // Still parse the arguments, so that their errors come in the same build.
            let _ = Args::parse(args, &mut errors);
            errors.push(e);
            return with_errors(item, errors);
        }
    };
    let args = Args::parse(args, &mut errors);
    let plan = valid::check(args, &func, &mut errors);
    match (errors.finish(), plan) {
        (Ok(()), Some(plan)) => expand(&func, &plan, item),
        (Err(e), _) => fallback::expand(item, e),
        // `check` returns `None` only after recording an error; kept total without a panic.
        (Ok(()), None) => fallback::expand(
            item,
            syn::Error::new(Span::call_site(), "invalid #[browser_fault] arguments"),
        ),
    }
}

fn with_errors(item: TokenStream, errors: Errors) -> TokenStream {
    match errors.finish() {
        Ok(()) => item,
        Err(e) => fallback::expand(item, e),
    }
}

/// `::browser_fault::__private_v<major>_<minor>`, this release's private path, spanned at
/// `span`: a type error in a path that starts with it is put where `span` points.
fn private_path(span: Span) -> TokenStream {
    let module = format_ident!(
        "__private_v{}_{}",
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        span = span
    );
    quote_spanned!(span=> ::browser_fault::#module)
}

fn expand(func: &ScenarioFn, plan: &Plan, item: TokenStream) -> TokenStream {
    let private = private_path(Span::call_site());
    let ident = &func.sig.ident;
    let name = ident.unraw().to_string();
    let entry = format_ident!("__browser_fault_entry_{}", name);
    // A `#[cfg]` written below `#[browser_fault]` is still on the item; the generated items
    // must come and go with the fn.
    let cfgs: Vec<_> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect();

    let line = Literal::u32_unsuffixed(ast::line_of(ident.span()));
    let boundaries = plan.boundaries.iter().map(|b| {
        let variant = Ident::new(b.variant, Span::call_site());
        quote!(#private::Boundary::#variant)
    });
    let hazards = plan.hazards.iter().map(|h| {
        let variant = Ident::new(h.variant, Span::call_site());
        quote!(#private::Hazard::#variant)
    });
    let crash = Ident::new(plan.crash.variant, Span::call_site());
    let timeout = match plan.timeout_ms {
        Some(ms) => {
            let ms = Literal::u64_unsuffixed(ms);
            quote!(#private::Duration::from_millis(#ms))
        }
        None => quote!(#private::Scenario::DEFAULT_TIMEOUT),
    };
    let account = match &plan.account {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => quote!(::core::option::Option::None),
    };
    let effects = match &plan.effects {
        Some(objects) => quote!(::core::option::Option::Some(&[#(#objects),*])),
        None => quote!(::core::option::Option::None),
    };
    let every_step = Literal::u32_unsuffixed(plan.explore.every_step);
    let depth = Literal::u8_unsuffixed(plan.explore.depth);
    let seeded = Literal::u32_unsuffixed(plan.explore.seeded);
    // A `site` fn of the wrong type is reported on the user's path alone: the expected
    // type is spelled with the path's span, outside the registration's struct literal.
    let site = match &plan.site {
        Some(path) => {
            let span = path.span();
            let private = private_path(span);
            let ty = quote_spanned!(span=> fn() -> #private::SiteSpec);
            quote_spanned!(span=> { let site: #ty = #path; site })
        }
        None => quote!(#private::default_site),
    };

    // Spans that put type errors on the user's tokens: a parameter that is not
    // `&mut Worker` on the parameter's type, an output that is not `TaskResult` (or a
    // future that is not `Send`) on the return type.
    let worker = match func.sig.inputs.first() {
        Some(FnArg::Typed(pat)) => spanning(&pat.ty, quote!(worker)),
        _ => quote!(worker),
    };
    let output_span = match &func.sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => ident.span(),
    };
    let boxed = private_path(output_span);
    let call = match &plan.command {
        None => quote_spanned!(output_span=> #boxed::Box::pin(#ident(#worker))),
        // The command, split at compile time, run from the user's crate's folder, after the
        // fn has adjusted it; a fn of the wrong types is reported on its own tokens.
        Some(words) => {
            let program = &words[0];
            let rest = &words[1..];
            let agent = match func.sig.inputs.first() {
                Some(FnArg::Typed(pat)) => spanning(
                    &pat.ty,
                    quote!(#private::AgentCommand::new(#program)
                        #(.arg(#rest))*
                        .current_dir(::core::env!("CARGO_MANIFEST_DIR"))),
                ),
                _ => quote!(#private::AgentCommand::new(#program)),
            };
            quote_spanned!(output_span=> {
                let agent: #boxed::AgentCommand = #ident(#agent);
                #boxed::Box::pin(async move { worker.run_agent(&agent).await })
            })
        }
    };

    quote! {
        #item

        #(#cfgs)*
        #[doc(hidden)]
        fn #entry<'a>(
            worker: &'a mut #private::Worker,
        ) -> #private::ScenarioFuture<'a> {
            #call
        }

        #(#cfgs)*
        #private::inventory::submit! {
            #private::ScenarioDef {
                name: #name,
                module_path: ::core::module_path!(),
                file: ::core::file!(),
                line: #line,
                boundaries: &[#(#boundaries),*],
                hazards: &[#(#hazards),*],
                crash_mode: #private::CrashMode::#crash,
                timeout: #timeout,
                account: #account,
                effects: #effects,
                site: #site,
                run: #entry,
                every_step: #every_step,
                depth: #depth,
                seeded: #seeded,
            }
            .into_scenario()
        }

        // Ordinary libtest targets (`cargo test` without `harness = false`): one `#[test]`
        // per scenario that runs all its trials, so the scenario never silently runs nothing.
        // In a `harness = false` target `cfg(test)` is off and `browser_fault::main!()` runs
        // the trials instead. Fns and modules live in different namespaces, so the module
        // can share the fn's name, and the test is listed as `<fn>::browser_fault_trials`.
        //
        // `module_path!()` is expanded inside this module: it is the scenario's module path
        // followed by `::<fn>`. `libtest_entry` strips that last segment to find the
        // registration (`Scenario::module_path`, `Scenario::name`).
        #(#cfgs)*
        #[cfg(test)]
        #[doc(hidden)]
        #[allow(clippy::module_inception)]
        mod #ident {
            #[::core::prelude::v1::test]
            fn browser_fault_trials() {
                #private::libtest_entry(::core::module_path!(), #name)
            }
        }
    }
}

/// `expr` as an expression whose span covers all of `tokens`: `(expr,).0`, with the tuple
/// spanned at the first token and the index at the last, so that rustc's error underlines
/// the whole of the user's tokens (a `Span::join` on stable).
fn spanning(tokens: &impl ToTokens, expr: TokenStream) -> TokenStream {
    let mut iter = tokens.to_token_stream().into_iter();
    let Some(first) = iter.next() else {
        return expr;
    };
    let start = first.span();
    let end = iter.last().map_or(start, |t| t.span());
    let mut tuple = Group::new(Delimiter::Parenthesis, quote!(#expr,));
    tuple.set_span(start);
    let mut index = Literal::usize_unsuffixed(0);
    index.set_span(end);
    quote!(#tuple.#index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(args: TokenStream, item: TokenStream) -> String {
        browser_fault(args, item).to_string()
    }

    #[test]
    fn emits_the_fn_unchanged_with_the_errors_when_invalid() {
        let item = quote!(
            pub async fn send(w: &mut Worker) -> TaskResult {
                body()
            }
        );
        let out = expand_str(quote!(at = "nowhere"), item.clone());
        assert!(out.starts_with(&item.to_string()), "{out}");
        assert!(out.contains("compile_error"), "{out}");
        assert!(!out.contains("inventory"), "{out}");
    }

    #[test]
    fn emits_a_non_fn_item_unchanged_with_the_errors() {
        let out = expand_str(
            quote!(timout = "1s"),
            quote!(
                struct S;
            ),
        );
        assert!(out.starts_with("struct S ;"), "{out}");
        assert_eq!(out.matches("compile_error").count(), 2, "{out}");
    }

    #[test]
    fn names_generated_items_after_the_fn() {
        let out = expand_str(
            quote!(at = "after_click", timeout = "45s", account = "acct"),
            quote!(
                async fn r#send(w: &mut Worker) -> TaskResult {
                    body()
                }
            ),
        );
        assert!(
            out.contains("fn __browser_fault_entry_send < 'a >"),
            "{out}"
        );
        assert!(out.contains("mod r#send"), "{out}");
        assert!(out.contains("\"send\""), "{out}");
        assert!(out.contains("Boundary :: AfterClick"), "{out}");
        assert!(out.contains("Duration :: from_millis (45000)"), "{out}");
        assert!(out.contains("Option :: Some (\"acct\")"), "{out}");
        assert!(out.contains("__private_v0_1 :: default_site"), "{out}");
        assert!(out.contains("ScenarioDef {"), "{out}");
        assert!(out.contains("every_step : 0"), "{out}");
    }

    #[test]
    fn copies_cfg_attributes_to_every_generated_item() {
        let out = expand_str(
            quote!(),
            quote!(
                #[cfg(feature = "x")]
                async fn send(w: &mut Worker) -> TaskResult {
                    body()
                }
            ),
        );
        assert_eq!(out.matches("# [cfg (feature = \"x\")]").count(), 4, "{out}");
    }
}
