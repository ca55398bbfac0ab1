//! Parses `#[browser_fault(key = value, ...)]` into [`Args`]: the syntax of each value, one
//! setter per key that rejects a key set twice. What the values mean (known names, valid
//! durations) is checked in `valid.rs`.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Error, Expr, ExprLit, Ident, Lit, LitStr, Meta, MetaNameValue, Path, Result, Token};

use crate::names;

/// Errors gathered from independent checks, reported together.
#[derive(Default)]
pub(crate) struct Errors(Option<Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Keeps the value of `result`, recording its error.
    pub(crate) fn ok<T>(&mut self, result: Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    pub(crate) fn finish(self) -> Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// A value that names boundaries or hazards: `"name"` or `["name", ...]`.
#[derive(Debug)]
pub(crate) enum Names {
    One(LitStr),
    List {
        /// The `[...]` tokens, for errors about the list as a whole.
        list: TokenStream,
        items: Vec<LitStr>,
    },
}

/// The arguments as written, before their meaning is checked.
#[derive(Debug, Default)]
pub(crate) struct Args {
    pub(crate) at: Option<Names>,
    pub(crate) site: Option<Path>,
    pub(crate) account: Option<LitStr>,
    pub(crate) crash: Option<LitStr>,
    pub(crate) timeout: Option<LitStr>,
    pub(crate) hazards: Option<Names>,
    /// The objects of the scenario's intended side effects: `"42"` or `["42", "43"]`.
    pub(crate) effects: Option<Names>,
    /// `every_step = N`: at most N step trials.
    pub(crate) every_step: Option<syn::LitInt>,
    /// `depth = 2`.
    pub(crate) depth: Option<syn::LitInt>,
    /// `seeded = N`.
    pub(crate) seeded: Option<syn::LitInt>,
    /// Keys already given, so that a key set twice is rejected even when its first value
    /// was malformed.
    seen: Vec<&'static str>,
}

impl Args {
    /// Parses the attribute's arguments, recording every error and keeping what is valid.
    pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> Args {
        let mut args = Args::default();
        let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens) {
            Ok(metas) => metas,
            Err(e) => {
                errors.push(e);
                return args;
            }
        };
        for meta in metas {
            if let Err(e) = args.set(meta) {
                errors.push(e);
            }
        }
        args
    }

    fn set(&mut self, meta: Meta) -> Result<()> {
        let nv = match meta {
            Meta::NameValue(nv) => nv,
            Meta::Path(path) => {
                let key = key_of(&path)?;
                return Err(Error::new_spanned(
                    &path,
                    format!("`{key}` needs a value: `{key} = {}`", example(&key)),
                ));
            }
            Meta::List(list) => {
                let key = key_of(&list.path)?;
                return Err(Error::new_spanned(
                    &list,
                    format!("write `{key} = {}`, not `{key}(...)`", example(&key)),
                ));
            }
        };
        let key = key_of(&nv.path)?;
        match key.to_string().as_str() {
            "at" => self.set_at(&key, nv),
            "site" => self.set_site(&key, nv),
            "account" => self.set_account(&key, nv),
            "crash" => self.set_crash(&key, nv),
            "timeout" => self.set_timeout(&key, nv),
            "hazards" => self.set_hazards(&key, nv),
            "effects" => self.set_effects(&key, nv),
            "every_step" => {
                self.first("every_step", &key)?;
                self.every_step = Some(int_value(&nv.value, "a number of trials", "40")?);
                Ok(())
            }
            "depth" => {
                self.first("depth", &key)?;
                self.depth = Some(int_value(&nv.value, "a depth", "2")?);
                Ok(())
            }
            "seeded" => {
                self.first("seeded", &key)?;
                self.seeded = Some(int_value(&nv.value, "a number of trials", "8")?);
                Ok(())
            }
            _ => unreachable_key(&key),
        }
    }

    fn set_at(&mut self, key: &Ident, nv: MetaNameValue) -> Result<()> {
        self.first("at", key)?;
        self.at = Some(names_value(&nv.value, "boundary", "after_click")?);
        Ok(())
    }

    fn set_site(&mut self, key: &Ident, nv: MetaNameValue) -> Result<()> {
        self.first("site", key)?;
        self.site = Some(site_value(nv.value)?);
        Ok(())
    }

    fn set_account(&mut self, key: &Ident, nv: MetaNameValue) -> Result<()> {
        self.first("account", key)?;
        self.account = Some(string_value(&nv.value, "an account", "\"acct-test-42\"")?);
        Ok(())
    }

    fn set_crash(&mut self, key: &Ident, nv: MetaNameValue) -> Result<()> {
        self.first("crash", key)?;
        self.crash = Some(string_value(
            &nv.value,
            "a crash mode",
            "\"kill\" or \"abort\"",
        )?);
        Ok(())
    }

    fn set_timeout(&mut self, key: &Ident, nv: MetaNameValue) -> Result<()> {
        self.first("timeout", key)?;
        self.timeout = Some(string_value(&nv.value, "a duration", "\"45s\"")?);
        Ok(())
    }

    fn set_hazards(&mut self, key: &Ident, nv: MetaNameValue) -> Result<()> {
        self.first("hazards", key)?;
        self.hazards = Some(names_value(&nv.value, "hazard", "expired_session")?);
        Ok(())
    }

    fn set_effects(&mut self, key: &Ident, nv: MetaNameValue) -> Result<()> {
        self.first("effects", key)?;
        self.effects = Some(names_value(&nv.value, "object", "42")?);
        Ok(())
    }

    /// Rejects the second occurrence of a key.
    fn first(&mut self, name: &'static str, key: &Ident) -> Result<()> {
        if self.seen.contains(&name) {
            return Err(Error::new_spanned(key, format!("`{name}` set twice")));
        }
        self.seen.push(name);
        Ok(())
    }
}

/// The key of `key = value` as one identifier, or the unknown-option error.
fn key_of(path: &Path) -> Result<Ident> {
    match path.get_ident() {
        Some(ident) if names::OPTIONS.contains(&ident.to_string().as_str()) => Ok(ident.clone()),
        _ => {
            let given = path.to_token_stream().to_string().replace(' ', "");
            Err(Error::new_spanned(path, names::unknown_option(&given)))
        }
    }
}

/// `key_of` only returns known keys; this keeps the match exhaustive without a panic.
fn unreachable_key(key: &Ident) -> Result<()> {
    Err(Error::new_spanned(
        key,
        names::unknown_option(&key.to_string()),
    ))
}

/// An example value for each key, for "needs a value" messages.
fn example(key: &Ident) -> &'static str {
    match key.to_string().as_str() {
        "at" => "\"after_click\"",
        "site" => "my_crate::my_site",
        "account" => "\"acct-test-42\"",
        "crash" => "\"kill\"",
        "timeout" => "\"45s\"",
        "effects" => "[\"42\"]",
        "every_step" => "40",
        "depth" => "2",
        "seeded" => "8",
        _ => "[\"expired_session\"]",
    }
}

/// `"name"` or `["name", ...]`.
fn names_value(value: &Expr, what: &str, example: &str) -> Result<Names> {
    match value {
        Expr::Array(array) => {
            let mut errors = Errors::default();
            let items = array
                .elems
                .iter()
                .filter_map(|elem| errors.ok(name_in_list(elem, what, example)))
                .collect();
            errors.finish()?;
            Ok(Names::List {
                list: array.to_token_stream(),
                items,
            })
        }
        other => match string_lit(other) {
            Some(lit) => Ok(Names::One(lit.clone())),
            None => Err(Error::new_spanned(
                other,
                format!(
                    "expected {} {what} name or a list of them, e.g. \"{example}\" or [\"{example}\"]{}",
                    article(what),
                    quote_hint(other)
                ),
            )),
        },
    }
}

fn name_in_list(elem: &Expr, what: &str, example: &str) -> Result<LitStr> {
    string_lit(elem).cloned().ok_or_else(|| {
        Error::new_spanned(
            elem,
            format!(
                "expected {} {what} name as a string, e.g. \"{example}\"{}",
                article(what),
                quote_hint(elem)
            ),
        )
    })
}

/// "a" or "an" before `word`.
fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// An integer literal: `every_step = 40`.
fn int_value(value: &Expr, what: &str, example: &str) -> Result<syn::LitInt> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => Ok(i.clone()),
        _ => Err(Error::new_spanned(
            value,
            format!("expected {what} as an integer, e.g. {example}"),
        )),
    }
}

fn string_value(value: &Expr, what: &str, example: &str) -> Result<LitStr> {
    string_lit(value).cloned().ok_or_else(|| {
        Error::new_spanned(
            value,
            format!(
                "expected {what} as a string, e.g. {example}{}",
                quote_hint(value)
            ),
        )
    })
}

/// `site = path::to::fn`.
fn site_value(value: Expr) -> Result<Path> {
    match value {
        Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => Ok(p.path),
        Expr::Call(call) if call.args.is_empty() => Err(Error::new_spanned(
            &call,
            format!(
                "`site` takes the fn itself, not a call: write `site = {}`",
                call.func.to_token_stream().to_string().replace(' ', "")
            ),
        )),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Err(Error::new_spanned(
            &s,
            "`site` takes the path of a fn returning `SiteSpec`, not a string: write `site = my_crate::my_site`",
        )),
        other => Err(Error::new_spanned(
            other,
            "expected the path of a fn returning `SiteSpec`, e.g. `site = my_crate::my_site`",
        )),
    }
}

fn string_lit(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s),
        Expr::Group(g) => string_lit(&g.expr),
        _ => None,
    }
}

/// "; write it in quotes" when the user wrote a bare name where a string belongs.
fn quote_hint(expr: &Expr) -> String {
    match expr {
        Expr::Path(p) if p.qself.is_none() => match p.path.get_ident() {
            Some(ident) => format!("; write it in quotes: \"{ident}\""),
            None => String::new(),
        },
        _ => String::new(),
    }
}

impl Names {
    /// The tokens of the whole value.
    pub(crate) fn tokens(&self) -> TokenStream {
        match self {
            Names::One(lit) => lit.to_token_stream(),
            Names::List { list, .. } => list.clone(),
        }
    }

    pub(crate) fn span(&self) -> Span {
        self.tokens().span()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn parse(tokens: TokenStream) -> (Args, Vec<String>) {
        let mut errors = Errors::default();
        let args = Args::parse(tokens, &mut errors);
        let messages = match errors.finish() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        };
        (args, messages)
    }

    #[test]
    fn accepts_no_arguments() {
        let (args, errors) = parse(quote!());
        assert!(errors.is_empty());
        assert!(args.at.is_none() && args.site.is_none() && args.hazards.is_none());
    }

    #[test]
    fn accepts_every_option_once() {
        let (args, errors) = parse(quote!(
            at = ["after_click", "browser_crash"],
            site = browser_fault::site::fixture_site,
            account = "acct-test-42",
            crash = "abort",
            timeout = "45s",
            hazards = "all",
            effects = ["42", "42"],
        ));
        assert_eq!(errors, Vec::<String>::new());
        assert!(matches!(args.effects, Some(Names::List { ref items, .. }) if items.len() == 2));
        assert!(matches!(args.at, Some(Names::List { ref items, .. }) if items.len() == 2));
        assert!(matches!(args.hazards, Some(Names::One(ref s)) if s.value() == "all"));
        assert_eq!(args.crash.map(|c| c.value()), Some("abort".to_owned()));
    }

    #[test]
    fn rejects_a_key_set_twice_even_after_a_bad_first_value() {
        let (_, errors) = parse(quote!(at = 5, at = "after_click"));
        assert_eq!(errors.len(), 2);
        assert!(
            errors[0].starts_with("expected a boundary name"),
            "{errors:?}"
        );
        assert_eq!(errors[1], "`at` set twice");
    }

    #[test]
    fn reports_every_bad_option_at_once() {
        let (_, errors) = parse(quote!(timout = "1s", crash = kill, site = "fixture"));
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("did you mean `timeout`?"));
        assert!(
            errors[1].ends_with("write it in quotes: \"kill\""),
            "{errors:?}"
        );
        assert!(errors[2].contains("not a string"));
    }

    #[test]
    fn rejects_a_key_without_a_value() {
        let (_, errors) = parse(quote!(at));
        assert_eq!(errors, ["`at` needs a value: `at = \"after_click\"`"]);
    }

    #[test]
    fn rejects_a_call_as_site() {
        let (_, errors) = parse(quote!(site = my::site()));
        assert_eq!(
            errors,
            ["`site` takes the fn itself, not a call: write `site = my::site`"]
        );
    }

    #[test]
    fn rejects_a_bare_name_in_a_list() {
        let (_, errors) = parse(quote!(at = ["after_click", browser_crash]));
        assert_eq!(
            errors,
            [
                "expected a boundary name as a string, e.g. \"after_click\"; write it in quotes: \"browser_crash\""
            ]
        );
    }

    #[test]
    fn rejects_a_path_key() {
        let (_, errors) = parse(quote!(browser_fault::at = "all"));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("unknown option `browser_fault::at`"));
    }
}
