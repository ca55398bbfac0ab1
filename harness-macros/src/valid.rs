//! Every check on the arguments and on the annotated fn. Independent errors are combined, so
//! one build reports all of them.

use syn::spanned::Spanned;
use syn::{Error, FnArg, LitStr, Path, ReturnType, Signature, Type};

use crate::ast::ScenarioFn;
use crate::attr::{Args, Errors, Names};
use crate::names::{self, Name};

/// The longest timeout a trial may have: one hour.
const MAX_TIMEOUT_MS: u64 = 60 * 60 * 1000;

/// A checked `#[browser_fault]`: what `expand.rs` generates from.
#[derive(Debug)]
pub(crate) struct Plan {
    /// In lifecycle order, without repeats, never empty.
    pub(crate) boundaries: Vec<Name>,
    /// In `Hazard::ALL` order, without repeats.
    pub(crate) hazards: Vec<Name>,
    pub(crate) crash: Name,
    /// `None`: `Scenario::DEFAULT_TIMEOUT`.
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) account: Option<LitStr>,
    /// `None`: the private path's `default_site`.
    pub(crate) site: Option<Path>,
    /// The objects of the intended side effects, one entry per effect; `None`: one effect
    /// on an undeclared object.
    pub(crate) effects: Option<Vec<LitStr>>,
    /// `every_step`, `depth`, `seeded`.
    pub(crate) explore: Explore,
    /// `command = "..."` split into its program and arguments: the scenario runs that
    /// command, and the fn only adjusts it (`fn(AgentCommand) -> AgentCommand`).
    pub(crate) command: Option<Vec<String>>,
}

/// The trials beyond the named boundaries: `Scenario::explore` as the attribute wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Explore {
    /// `every_step = N` (0 when not given).
    pub(crate) every_step: u32,
    /// `depth = 2` (1 when not given).
    pub(crate) depth: u8,
    /// `seeded = N` (0 when not given).
    pub(crate) seeded: u32,
}

/// Checks the arguments and the fn; all errors found are recorded in `errors`.
pub(crate) fn check(args: Args, func: &ScenarioFn, errors: &mut Errors) -> Option<Plan> {
    let boundaries = match &args.at {
        None => Some(names::BOUNDARIES.to_vec()),
        Some(at) => errors.ok(boundaries(at)),
    };
    let hazards = match &args.hazards {
        None => Some(Vec::new()),
        Some(h) => errors.ok(hazards(h)),
    };
    let crash = match &args.crash {
        None => Some(names::CRASH_MODES[0]),
        Some(lit) => errors.ok(crash(lit)),
    };
    let timeout_ms = match &args.timeout {
        None => Some(None),
        Some(lit) => errors.ok(parse_duration(&lit.value())
            .map(Some)
            .map_err(|m| Error::new(lit.span(), m))),
    };
    if let Some(account) = &args.account
        && account.value().trim().is_empty()
    {
        errors.push(Error::new(
            account.span(),
            "`account` must not be empty; omit it to use the site's default account",
        ));
    }
    let effects = match &args.effects {
        None => Some(None),
        Some(e) => errors.ok(effects(e)).map(Some),
    };
    let every_step = errors.ok(bounded(
        args.every_step.as_ref(),
        0,
        1,
        10_000,
        "every_step",
    ));
    let depth = errors.ok(bounded(args.depth.as_ref(), 1, 1, 2, "depth"));
    let seeded = errors.ok(bounded(args.seeded.as_ref(), 0, 1, 1_000, "seeded"));
    let command = match &args.command {
        None => Some(None),
        Some(lit) => errors.ok(command(lit)).map(Some),
    };
    // After the arguments, so that errors come roughly in source order.
    if args.command.is_some() {
        check_command_fn(func, errors);
    } else {
        check_fn(func, errors);
    }
    Some(Plan {
        boundaries: boundaries?,
        hazards: hazards?,
        crash: crash?,
        timeout_ms: timeout_ms?,
        account: args.account,
        site: args.site,
        effects: effects?,
        explore: Explore {
            every_step: every_step?,
            depth: u8::try_from(depth?).ok()?,
            seeded: seeded?,
        },
        command: command?,
    })
}

/// `command = "python3 agent.py --fast"`: split at white space, `'…'` and `"…"` quoting
/// (no escapes, no variables: it is not a shell), as `AgentCommand::parse` splits it.
fn command(lit: &LitStr) -> syn::Result<Vec<String>> {
    let line = lit.value();
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.get_or_insert_default().push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            None if c.is_whitespace() => words.extend(word.take()),
            None => word.get_or_insert_default().push(c),
        }
    }
    if let Some(q) = quote {
        return Err(Error::new(
            lit.span(),
            format!(
                "the command has an unclosed {q} quote (it is split like a shell's words, without escapes)"
            ),
        ));
    }
    words.extend(word);
    if words.is_empty() {
        return Err(Error::new(
            lit.span(),
            "`command` names the agent's program and its arguments, e.g. \"python3 agent.py\"; it cannot be empty",
        ));
    }
    if line.contains('$') || line.contains('|') || line.contains('>') || line.contains('<') {
        return Err(Error::new(
            lit.span(),
            "`command` is not run by a shell: `$`, `|`, `<` and `>` have no meaning here; \
             set variables with `AgentCommand::env` in the fn, or run `sh -c '...'`",
        ));
    }
    Ok(words)
}

/// With `command`, the fn adjusts the command before it runs:
/// `fn name(agent: AgentCommand) -> AgentCommand`, neither async nor generic.
fn check_command_fn(func: &ScenarioFn, errors: &mut Errors) {
    const FORM: &str = "with `command`, the scenario fn adjusts the command: \
                        `fn name(agent: AgentCommand) -> AgentCommand { agent }`";
    let sig = &func.sig;
    check_plain_fn(func, errors);
    if let Some(a) = &sig.asyncness {
        errors.push(Error::new_spanned(
            a,
            format!("{FORM}; it is not `async` (the harness runs the command)"),
        ));
    }
    check_generics(sig, errors);
    match (sig.inputs.len(), sig.inputs.first()) {
        (1, Some(FnArg::Typed(pat))) if !matches!(&*pat.ty, Type::Reference(_)) => {}
        (_, Some(first)) => errors.push(Error::new_spanned(first, FORM)),
        (_, None) => errors.push(Error::new(sig.paren_token.span.join(), FORM)),
    }
    if let ReturnType::Default = sig.output {
        errors.push(Error::new(
            sig.paren_token.span.close(),
            format!("{FORM}: add `-> AgentCommand`"),
        ));
    }
}

/// An integer option within `min..=max`, or `default` when not given.
fn bounded(
    lit: Option<&syn::LitInt>,
    default: u32,
    min: u32,
    max: u32,
    key: &str,
) -> syn::Result<u32> {
    let Some(lit) = lit else {
        return Ok(default);
    };
    let value: u32 = lit.base10_parse().map_err(|_| {
        Error::new(
            lit.span(),
            format!("`{key}` takes a whole number from {min} to {max}"),
        )
    })?;
    if !(min..=max).contains(&value) {
        let hint = if key == "depth" {
            " (1: the recovery is not crashed; 2: it is crashed too, once)"
        } else {
            ""
        };
        return Err(Error::new(
            lit.span(),
            format!("`{key}` takes a whole number from {min} to {max}, not {value}{hint}"),
        ));
    }
    Ok(value)
}

/// `effects = "42"` or `["42", "42", "43"]`: one entry per intended side effect, naming
/// the object it acts on (the same object twice means two effects on it). `[]` declares a
/// scenario that must leave no side effect at all.
fn effects(value: &Names) -> syn::Result<Vec<LitStr>> {
    let items: Vec<LitStr> = match value {
        Names::One(lit) => vec![lit.clone()],
        Names::List { items, .. } => items.clone(),
    };
    let mut errors = Errors::default();
    for lit in &items {
        if lit.value().trim().is_empty() {
            errors.push(Error::new(
                lit.span(),
                "an intended effect names the object it acts on, e.g. \"42\"; it cannot be empty",
            ));
        }
    }
    errors.finish()?;
    Ok(items)
}

fn boundaries(at: &Names) -> syn::Result<Vec<Name>> {
    let what = Kind {
        what: "boundary",
        plural: "boundaries",
        key: "at",
        table: &names::BOUNDARIES,
        if_empty: "`at` needs at least one boundary; omit `at` to strike at all eight",
    };
    what.resolve(at)
}

fn hazards(h: &Names) -> syn::Result<Vec<Name>> {
    let what = Kind {
        what: "hazard",
        plural: "hazards",
        key: "hazards",
        table: &names::HAZARDS,
        if_empty: "`hazards` needs at least one hazard; omit `hazards` to run none",
    };
    what.resolve(h)
}

fn crash(lit: &LitStr) -> syn::Result<Name> {
    names::lookup(&names::CRASH_MODES, &lit.value()).ok_or_else(|| {
        Error::new(
            lit.span(),
            names::unknown(
                "crash mode",
                "crash modes",
                &lit.value(),
                &names::CRASH_MODES,
                "",
            ),
        )
    })
}

/// A list of names from one table, with `"all"` for the whole table.
struct Kind {
    what: &'static str,
    plural: &'static str,
    key: &'static str,
    table: &'static [Name],
    if_empty: &'static str,
}

impl Kind {
    fn resolve(&self, value: &Names) -> syn::Result<Vec<Name>> {
        match value {
            Names::One(lit) if lit.value() == "all" => Ok(self.table.to_vec()),
            Names::One(lit) => Ok(vec![self.one(lit)?]),
            Names::List { items, .. } if items.is_empty() => {
                Err(Error::new(value.span(), self.if_empty))
            }
            Names::List { items, .. } => {
                let mut errors = Errors::default();
                let mut found: Vec<(Name, &LitStr)> = Vec::new();
                for lit in items {
                    if lit.value() == "all" {
                        errors.push(Error::new(
                            lit.span(),
                            format!(
                                "\"all\" cannot be part of a list: write `{} = \"all\"` alone",
                                self.key
                            ),
                        ));
                        continue;
                    }
                    let Some(name) = errors.ok(self.one(lit)) else {
                        continue;
                    };
                    if found.iter().any(|(n, _)| *n == name) {
                        errors.push(Error::new(
                            lit.span(),
                            format!("{} `{}` listed twice", self.what, name.name),
                        ));
                        continue;
                    }
                    found.push((name, lit));
                }
                errors.finish()?;
                // The order of the table: lifecycle order for boundaries.
                Ok(self
                    .table
                    .iter()
                    .copied()
                    .filter(|n| found.iter().any(|(f, _)| f == n))
                    .collect())
            }
        }
    }

    fn one(&self, lit: &LitStr) -> syn::Result<Name> {
        names::lookup(self.table, &lit.value()).ok_or_else(|| {
            Error::new(
                lit.span(),
                names::unknown(
                    self.what,
                    self.plural,
                    &lit.value(),
                    self.table,
                    ", or \"all\"",
                ),
            )
        })
    }
}

/// `"500ms"`, `"45s"`, `"2m"`: a whole number and a unit, > 0 and at most one hour.
/// Returns milliseconds, or the message for an invalid duration.
pub(crate) fn parse_duration(text: &str) -> Result<u64, String> {
    const EXPECTED: &str = "a whole number and a unit (ms, s or m), e.g. \"45s\"";
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    if text.starts_with('-') {
        return Err(format!("a timeout cannot be negative; expected {EXPECTED}"));
    }
    if digits.is_empty() {
        return Err(format!("invalid duration `{text}`: expected {EXPECTED}"));
    }
    if unit.starts_with('.') {
        return Err(format!(
            "invalid duration `{text}`: fractions are not supported; use a smaller unit, e.g. \"1500ms\""
        ));
    }
    if unit.starts_with(char::is_whitespace) || unit.ends_with(char::is_whitespace) {
        return Err(format!(
            "invalid duration `{text}`: write it without spaces, e.g. \"45s\""
        ));
    }
    let per_unit: u64 = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60 * 1000,
        "" => {
            return Err(format!(
                "duration `{text}` has no unit; write e.g. \"{text}s\" (units: ms, s, m)"
            ));
        }
        "h" => {
            return Err(format!(
                "unknown unit `h` in `{text}`; use ms, s or m (the timeout is at most \"60m\")"
            ));
        }
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`; use ms, s or m"
            ));
        }
    };
    let too_long = || format!("timeout `{text}` is too long: at most 1 hour (\"60m\")");
    let count: u64 = digits.parse().map_err(|_| too_long())?;
    let ms = count.checked_mul(per_unit).ok_or_else(too_long)?;
    if ms == 0 {
        return Err("timeout must be greater than zero".to_owned());
    }
    if ms > MAX_TIMEOUT_MS {
        return Err(too_long());
    }
    Ok(ms)
}

/// The fn must be `async fn name(w: &mut Worker) -> TaskResult`, neither generic nor
/// `const`, `unsafe`, `extern`.
fn check_fn(func: &ScenarioFn, errors: &mut Errors) {
    let sig = &func.sig;
    check_plain_fn(func, errors);
    if sig.asyncness.is_none() {
        errors.push(Error::new_spanned(
            sig.fn_token,
            "a scenario must be an `async fn`: write `async fn`",
        ));
    }
    check_generics(sig, errors);
    check_inputs(sig, errors);
    if let ReturnType::Default = sig.output {
        errors.push(Error::new(
            sig.paren_token.span.close(),
            "a scenario fn must return `TaskResult`: add `-> TaskResult`",
        ));
    }
}

/// What every scenario fn must not be, in either form: marked twice or `#[test]`, `const`,
/// `unsafe` or `extern`.
fn check_plain_fn(func: &ScenarioFn, errors: &mut Errors) {
    let sig = &func.sig;
    if let Some(attr) = func
        .attrs
        .iter()
        .find(|a| is_path(a.path(), "browser_fault"))
    {
        errors.push(Error::new_spanned(
            attr,
            "#[browser_fault] is applied twice to this fn",
        ));
    }
    if let Some(attr) = func.attrs.iter().find(|a| is_path(a.path(), "test")) {
        errors.push(Error::new_spanned(
            attr,
            "remove #[test]: #[browser_fault] generates the test for this scenario",
        ));
    }
    if let Some(c) = &sig.constness {
        errors.push(Error::new_spanned(c, "a scenario fn cannot be `const`"));
    }
    if let Some(u) = &sig.unsafety {
        errors.push(Error::new_spanned(u, "a scenario fn cannot be `unsafe`"));
    }
    if let Some(abi) = &sig.abi {
        errors.push(Error::new_spanned(abi, "a scenario fn cannot be `extern`"));
    }
}

fn check_generics(sig: &Signature, errors: &mut Errors) {
    // Lifetime parameters are harmless (`async fn f<'a>(w: &'a mut Worker)`); types and
    // consts are not: the harness calls the fn with one concrete `Worker`.
    let params = &sig.generics.params;
    if params
        .iter()
        .any(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
    {
        errors.push(Error::new_spanned(
            &sig.generics,
            "a scenario fn cannot be generic: the harness calls it with one concrete `&mut Worker`",
        ));
    }
    if let Some(wc) = &sig.generics.where_clause {
        errors.push(Error::new_spanned(
            wc,
            "a scenario fn cannot have a `where` clause",
        ));
    }
}

fn check_inputs(sig: &Signature, errors: &mut Errors) {
    if let Some(variadic) = &sig.variadic {
        errors.push(Error::new_spanned(
            variadic,
            "a scenario fn cannot be variadic",
        ));
    }
    let mut inputs = sig.inputs.iter();
    let Some(first) = inputs.next() else {
        errors.push(Error::new(
            sig.paren_token.span.join(),
            "a scenario fn takes one parameter: `(w: &mut Worker)`",
        ));
        return;
    };
    match first {
        FnArg::Receiver(receiver) => errors.push(Error::new_spanned(
            receiver,
            "a scenario is a free fn, not a method: take `w: &mut Worker` instead of `self`",
        )),
        FnArg::Typed(pat) => match &*pat.ty {
            Type::Reference(r) if r.mutability.is_some() => {}
            Type::Reference(r) => errors.push(Error::new_spanned(
                r,
                "a scenario takes its worker by mutable reference: `&mut Worker`",
            )),
            other => errors.push(Error::new_spanned(
                other,
                "a scenario takes its worker by mutable reference: `&mut Worker`",
            )),
        },
    }
    let rest: Vec<&FnArg> = inputs.collect();
    if let (Some(first_extra), Some(last)) = (rest.first(), rest.last()) {
        let span = first_extra
            .span()
            .join(last.span())
            .unwrap_or_else(|| first_extra.span());
        errors.push(Error::new(
            span,
            "a scenario fn takes exactly one parameter, `&mut Worker`; remove the others",
        ));
    }
}

fn is_path(path: &Path, last: &str) -> bool {
    path.segments.last().is_some_and(|s| s.ident == last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::TokenStream;
    use quote::quote;

    fn check_all(args: TokenStream, func: TokenStream) -> Result<Plan, Vec<String>> {
        let mut errors = Errors::default();
        let args = Args::parse(args, &mut errors);
        let func: ScenarioFn = match syn::parse2(func) {
            Ok(f) => f,
            Err(e) => return Err(vec![e.to_string()]),
        };
        let plan = check(args, &func, &mut errors);
        match (errors.finish(), plan) {
            (Ok(()), Some(plan)) => Ok(plan),
            (Err(e), _) => Err(e.into_iter().map(|e| e.to_string()).collect()),
            (Ok(()), None) => Err(vec!["no plan and no error".to_owned()]),
        }
    }

    fn good_fn() -> TokenStream {
        quote!(
            async fn send(w: &mut Worker) -> TaskResult {
                Ok(Outcome::Completed)
            }
        )
    }

    fn errors(args: TokenStream, func: TokenStream) -> Vec<String> {
        match check_all(args, func) {
            Ok(plan) => panic!("expected errors, got {plan:?}"),
            Err(e) => e,
        }
    }

    fn names(list: &[Name]) -> Vec<&'static str> {
        list.iter().map(|n| n.name).collect()
    }

    #[test]
    fn defaults_to_all_boundaries_no_hazards_kill_and_the_default_timeout() {
        let plan = check_all(quote!(), good_fn()).expect("valid");
        assert_eq!(plan.boundaries, names::BOUNDARIES.to_vec());
        assert!(plan.hazards.is_empty());
        assert_eq!(plan.crash.name, "kill");
        assert_eq!(plan.timeout_ms, None);
        assert!(plan.account.is_none() && plan.site.is_none());
    }

    #[test]
    fn puts_a_boundary_list_in_lifecycle_order() {
        let plan =
            check_all(quote!(at = ["browser_crash", "after_login"]), good_fn()).expect("valid");
        assert_eq!(names(&plan.boundaries), ["after_login", "browser_crash"]);
    }

    #[test]
    fn expands_all_hazards() {
        let plan = check_all(quote!(hazards = "all"), good_fn()).expect("valid");
        assert_eq!(plan.hazards, names::HAZARDS.to_vec());
    }

    #[test]
    fn rejects_a_boundary_listed_twice_on_the_second_one() {
        let e = errors(
            quote!(at = ["after_click", "after_login", "after_click"]),
            good_fn(),
        );
        assert_eq!(e, ["boundary `after_click` listed twice"]);
    }

    #[test]
    fn rejects_an_empty_list() {
        let e = errors(quote!(at = []), good_fn());
        assert_eq!(
            e,
            ["`at` needs at least one boundary; omit `at` to strike at all eight"]
        );
    }

    #[test]
    fn rejects_all_inside_a_list() {
        let e = errors(quote!(hazards = ["all", "stale_tab"]), good_fn());
        assert_eq!(
            e,
            ["\"all\" cannot be part of a list: write `hazards = \"all\"` alone"]
        );
    }

    #[test]
    fn suggests_the_nearest_boundary() {
        let e = errors(quote!(at = "after_clik"), good_fn());
        assert_eq!(e.len(), 1);
        assert!(
            e[0].starts_with("unknown boundary `after_clik`; did you mean `after_click`? valid boundaries: after_profile_created,"),
            "{e:?}"
        );
        assert!(e[0].ends_with(", or \"all\""), "{e:?}");
    }

    #[test]
    fn rejects_an_unknown_crash_mode() {
        let e = errors(quote!(crash = "sigkill"), good_fn());
        assert_eq!(
            e,
            ["unknown crash mode `sigkill`; did you mean `kill`? valid crash modes: kill, abort"]
        );
    }

    #[test]
    fn parses_durations_in_each_unit() {
        assert_eq!(parse_duration("500ms"), Ok(500));
        assert_eq!(parse_duration("45s"), Ok(45_000));
        assert_eq!(parse_duration("2m"), Ok(120_000));
        assert_eq!(parse_duration("60m"), Ok(3_600_000));
    }

    #[test]
    fn rejects_zero_overflow_and_more_than_an_hour() {
        assert_eq!(
            parse_duration("0s"),
            Err("timeout must be greater than zero".to_owned())
        );
        assert!(parse_duration("61m").is_err_and(|m| m.contains("at most 1 hour")));
        assert!(parse_duration("99999999999999999999s").is_err_and(|m| m.contains("too long")));
        assert!(parse_duration("18446744073709551615m").is_err_and(|m| m.contains("too long")));
    }

    #[test]
    fn rejects_durations_without_a_unit_or_with_a_bad_one() {
        assert!(parse_duration("45").is_err_and(|m| m.contains("has no unit; write e.g. \"45s\"")));
        assert!(parse_duration("45sec").is_err_and(|m| m.starts_with("unknown unit `sec`")));
        assert!(parse_duration("1h").is_err_and(|m| m.contains("\"60m\"")));
        assert!(parse_duration("1.5s").is_err_and(|m| m.contains("fractions")));
        assert!(parse_duration("45 s").is_err_and(|m| m.contains("without spaces")));
        assert!(parse_duration("-5s").is_err_and(|m| m.contains("negative")));
        assert!(parse_duration("").is_err_and(|m| m.starts_with("invalid duration")));
        assert!(parse_duration("s").is_err_and(|m| m.starts_with("invalid duration")));
    }

    #[test]
    fn rejects_an_empty_account() {
        let e = errors(quote!(account = " "), good_fn());
        assert_eq!(
            e,
            ["`account` must not be empty; omit it to use the site's default account"]
        );
    }

    #[test]
    fn rejects_a_non_async_fn() {
        let e = errors(
            quote!(),
            quote!(
                fn send(w: &mut Worker) -> TaskResult {}
            ),
        );
        assert_eq!(e, ["a scenario must be an `async fn`: write `async fn`"]);
    }

    #[test]
    fn rejects_each_wrong_signature() {
        let cases = [
            (
                quote!(
                    async fn f() -> T {}
                ),
                "takes one parameter",
            ),
            (
                quote!(
                    async fn f(a: &mut W, b: u8) -> T {}
                ),
                "exactly one parameter",
            ),
            (
                quote!(
                    async fn f(w: W) -> T {}
                ),
                "by mutable reference",
            ),
            (
                quote!(
                    async fn f(w: &W) -> T {}
                ),
                "by mutable reference",
            ),
            (
                quote!(
                    async fn f(&mut self) -> T {}
                ),
                "not a method",
            ),
            (
                quote!(
                    async fn f(w: &mut W) {}
                ),
                "must return `TaskResult`",
            ),
            (
                quote!(
                    async fn f<T>(w: &mut T) -> T {}
                ),
                "cannot be generic",
            ),
            (
                quote!(
                    async fn f(w: &mut W) -> T
                    where
                        W: Send,
                    {
                    }
                ),
                "`where` clause",
            ),
            (
                quote!(
                    async unsafe fn f(w: &mut W) -> T {}
                ),
                "`unsafe`",
            ),
            (
                quote!(
                    async extern "C" fn f(w: &mut W) -> T {}
                ),
                "`extern`",
            ),
            (
                quote!(
                    #[test]
                    async fn f(w: &mut W) -> T {}
                ),
                "remove #[test]",
            ),
        ];
        for (func, expected) in cases {
            let e = errors(quote!(), func.clone());
            assert_eq!(e.len(), 1, "{func}: {e:?}");
            assert!(e[0].contains(expected), "{func}: {e:?}");
        }
    }

    #[test]
    fn accepts_lifetime_parameters() {
        check_all(
            quote!(),
            quote!(
                async fn f<'a>(w: &'a mut W) -> T {}
            ),
        )
        .expect("valid");
    }

    #[test]
    fn reports_argument_and_signature_errors_together() {
        let e = errors(
            quote!(at = "nowhere", timeout = "0s", crash = "kil"),
            quote!(
                fn f(w: &W) {}
            ),
        );
        assert_eq!(e.len(), 6, "{e:?}");
    }
}
