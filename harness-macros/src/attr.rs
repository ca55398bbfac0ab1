//! Parses `#[browser_fault(key = value, ...)]` into [`Args`]: the syntax of each value, one
//! setter per key that rejects a key set twice. What the values mean (known names, valid
//! durations) is checked in `valid.rs`.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Error, Expr, ExprLit, Lit, LitStr, Meta, Path, Result, Token};

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
    /// `command = "python3 agent.py"`: the scenario is that command.
    pub(crate) command: Option<LitStr>,
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
        let (path, value) = match meta {
            Meta::NameValue(nv) => (nv.path, nv.value),
            Meta::Path(path) => {
                let key = key_of(&path)?;
                return Err(Error::new_spanned(
                    &path,
                    format!(
                        "`{name}` needs a value: `{name} = {example}`",
                        name = key.name,
                        example = key.example
                    ),
                ));
            }
            Meta::List(list) => {
                let key = key_of(&list.path)?;
                return Err(Error::new_spanned(
                    &list,
                    format!(
                        "write `{name} = {example}`, not `{name}(...)`",
                        name = key.name,
                        example = key.example
                    ),
                ));
            }
        };
        let key = key_of(&path)?;
        self.first(key.name, &path)?;
        (key.parse)(self, value)
    }

    /// Rejects the second occurrence of a key.
    fn first(&mut self, name: &'static str, key: &Path) -> Result<()> {
        if self.seen.contains(&name) {
            return Err(Error::new_spanned(key, format!("`{name}` set twice")));
        }
        self.seen.push(name);
        Ok(())
    }
}

/// One option key of `#[browser_fault(...)]`: its name, an example value for messages, and
/// how its value is read into [`Args`].
pub(crate) struct Key {
    /// As written: `at`, `every_step`.
    pub(crate) name: &'static str,
    /// A value as a user writes it, for "needs a value" messages.
    pub(crate) example: &'static str,
    /// Reads the value; the key was checked to be set once.
    parse: fn(&mut Args, Expr) -> Result<()>,
}

/// Every option key, in the order the docs list them: the one list that parsing, the
/// unknown-option message (its list and its suggestion) and the examples all read.
pub(crate) const KEYS: [Key; 11] = [
    Key {
        name: "at",
        example: "\"after_click\"",
        parse: |args, value| {
            args.at = Some(names_value(&value, "boundary", "after_click")?);
            Ok(())
        },
    },
    Key {
        name: "site",
        example: "my_crate::my_site",
        parse: |args, value| {
            args.site = Some(site_value(value)?);
            Ok(())
        },
    },
    Key {
        name: "account",
        example: "\"acct-test-42\"",
        parse: |args, value| {
            args.account = Some(string_value(&value, "an account", "\"acct-test-42\"")?);
            Ok(())
        },
    },
    Key {
        name: "crash",
        example: "\"kill\"",
        parse: |args, value| {
            args.crash = Some(string_value(
                &value,
                "a crash mode",
                "\"kill\" or \"abort\"",
            )?);
            Ok(())
        },
    },
    Key {
        name: "timeout",
        example: "\"45s\"",
        parse: |args, value| {
            args.timeout = Some(string_value(&value, "a duration", "\"45s\"")?);
            Ok(())
        },
    },
    Key {
        name: "hazards",
        example: "[\"expired_session\"]",
        parse: |args, value| {
            args.hazards = Some(names_value(&value, "hazard", "expired_session")?);
            Ok(())
        },
    },
    Key {
        name: "effects",
        example: "[\"42\"]",
        parse: |args, value| {
            args.effects = Some(names_value(&value, "object", "42")?);
            Ok(())
        },
    },
    Key {
        name: "every_step",
        example: "40",
        parse: |args, value| {
            args.every_step = Some(int_value(&value, "a number of trials", "40")?);
            Ok(())
        },
    },
    Key {
        name: "depth",
        example: "2",
        parse: |args, value| {
            args.depth = Some(int_value(&value, "a depth", "2")?);
            Ok(())
        },
    },
    Key {
        name: "seeded",
        example: "8",
        parse: |args, value| {
            args.seeded = Some(int_value(&value, "a number of trials", "8")?);
            Ok(())
        },
    },
    Key {
        name: "command",
        example: "\"python3 agent.py\"",
        parse: |args, value| {
            args.command = Some(string_value(
                &value,
                "a command line",
                "\"python3 agent.py\"",
            )?);
            Ok(())
        },
    },
];

/// The option keys' names, in [`KEYS`] order.
pub(crate) fn key_names() -> Vec<&'static str> {
    KEYS.iter().map(|k| k.name).collect()
}

/// The key of `key = value`, or the unknown-option error.
fn key_of(path: &Path) -> Result<&'static Key> {
    let known = path
        .get_ident()
        .and_then(|ident| KEYS.iter().find(|k| ident == k.name));
    known.ok_or_else(|| {
        let given = path.to_token_stream().to_string().replace(' ', "");
        Error::new_spanned(path, names::unknown_option(&given, &key_names()))
    })
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
    fn every_key_accepts_its_own_example_and_says_it_when_the_value_is_missing() {
        for key in &KEYS {
            let written: TokenStream = format!("{} = {}", key.name, key.example).parse().unwrap();
            let (_, errors) = parse(written);
            assert_eq!(errors, Vec::<String>::new(), "`{}`", key.name);
            let bare: TokenStream = key.name.parse().unwrap();
            let (_, errors) = parse(bare);
            assert_eq!(
                errors,
                [format!(
                    "`{0}` needs a value: `{0} = {1}`",
                    key.name, key.example
                )]
            );
        }
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
