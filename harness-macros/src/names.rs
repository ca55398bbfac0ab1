//! The names a user may write, and the nearest-match suggestion for a misspelt one.
//!
//! The macro cannot depend on `browser-fault` (that crate depends on this one), so the
//! tables below repeat `browser_fault::plan`. They must list the same names, in the same
//! order, as `Boundary::as_str` / `Boundary::ALL`, `Hazard::as_str` / `Hazard::ALL` and
//! `CrashMode::as_str`. A renamed variant breaks the `pass` ui cases; a renamed string or a
//! reordered list breaks `harness/tests/macro_forms/names_match_runtime.rs`.

/// One name a user writes, and the variant it becomes in the generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Name {
    /// As written in the attribute and in trial names.
    pub(crate) name: &'static str,
    /// The variant of the `browser_fault::plan` enum.
    pub(crate) variant: &'static str,
}

const fn name(name: &'static str, variant: &'static str) -> Name {
    Name { name, variant }
}

/// `plan::Boundary`, in lifecycle order.
pub(crate) const BOUNDARIES: [Name; 8] = [
    name("after_profile_created", "AfterProfileCreated"),
    name("after_login", "AfterLogin"),
    name("after_target_verified", "AfterTargetVerified"),
    name("after_click", "AfterClick"),
    name("after_remote_effect", "AfterRemoteEffect"),
    name("browser_crash", "BrowserCrash"),
    name("stale_profile_restore", "StaleProfileRestore"),
    name("concurrent_profile", "ConcurrentProfile"),
];

/// `plan::Hazard`, in `Hazard::ALL` order.
pub(crate) const HAZARDS: [Name; 8] = [
    name("expired_session", "ExpiredSession"),
    name("login_interstitial", "LoginInterstitial"),
    name("consent_interstitial", "ConsentInterstitial"),
    name("tenant_mismatch", "TenantMismatch"),
    name("account_switch", "AccountSwitch"),
    name("stale_tab", "StaleTab"),
    name("browser_version_changed", "BrowserVersionChanged"),
    name("credential_rotated", "CredentialRotated"),
];

/// `plan::CrashMode`; the first one is the default.
pub(crate) const CRASH_MODES: [Name; 2] = [name("kill", "Kill"), name("abort", "Abort")];

/// Words a user may reach for instead of an option key, and the key they mean.
const OPTION_ALIASES: [(&str, &str); 13] = [
    ("max_trials", "every_step"),
    ("steps", "every_step"),
    ("seed", "seeded"),
    ("boundary", "at"),
    ("boundaries", "at"),
    ("fault", "at"),
    ("crash_mode", "crash"),
    ("mode", "crash"),
    ("fixture", "site"),
    ("user", "account"),
    ("intents", "effects"),
    ("intent", "effects"),
    ("objects", "effects"),
];

/// Finds `given` in `table`.
pub(crate) fn lookup(table: &[Name], given: &str) -> Option<Name> {
    table.iter().copied().find(|n| n.name == given)
}

/// "unknown boundary `after_clik`; did you mean `after_click`? valid boundaries: …"
///
/// `plural` names the list ("boundaries"); `extra` is appended to the list of valid names
/// (e.g. `or "all"`).
pub(crate) fn unknown(
    what: &str,
    plural: &str,
    given: &str,
    table: &[Name],
    extra: &str,
) -> String {
    let names: Vec<&str> = table.iter().map(|n| n.name).collect();
    unknown_among(what, plural, given, &names, nearest(given, &names), extra)
}

/// The message for an unknown option key, among `options` (`attr::KEYS`).
pub(crate) fn unknown_option(given: &str, options: &[&str]) -> String {
    let alias = OPTION_ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(given))
        .map(|(_, key)| *key);
    let suggestion = alias.or_else(|| nearest(given, options));
    unknown_among("option", "options", given, options, suggestion, "")
}

fn unknown_among(
    what: &str,
    plural: &str,
    given: &str,
    names: &[&str],
    suggestion: Option<&str>,
    extra: &str,
) -> String {
    let mut msg = format!("unknown {what} `{given}`");
    if let Some(near) = suggestion {
        msg.push_str(&format!("; did you mean `{near}`?"));
    }
    msg.push_str(&format!(" valid {plural}: {}{extra}", names.join(", ")));
    msg
}

/// The candidate closest to `given`, when it is close enough to be a plausible typo.
pub(crate) fn nearest<'a>(given: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let given = given.to_ascii_lowercase().replace('-', "_");
    let close = candidates
        .iter()
        .map(|c| (distance(&given, c), *c))
        .filter(|(d, c)| *d <= close_enough(c))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    // "sigkill" → "kill", "click" → "after_click": one name inside the other.
    close.or_else(|| {
        candidates
            .iter()
            .copied()
            .filter(|c| given.len() >= 3 && (given.contains(c) || c.contains(given.as_str())))
            .min_by_key(|c| c.len().abs_diff(given.len()))
    })
}

/// A third of the candidate's length, at least one edit and at most three.
fn close_enough(candidate: &str) -> usize {
    (candidate.chars().count() / 3).clamp(1, 3)
}

/// Optimal-string-alignment distance: insertions, deletions, substitutions, and
/// transpositions of two neighbours each count as one edit.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::key_names;

    fn unknown_option(given: &str) -> String {
        super::unknown_option(given, &key_names())
    }

    #[test]
    fn every_alias_names_a_key() {
        let keys = key_names();
        for (alias, key) in OPTION_ALIASES {
            assert!(keys.contains(&key), "`{alias}` → `{key}`, which is no key");
            assert!(!keys.contains(&alias), "`{alias}` is a key itself");
        }
    }

    #[test]
    fn suggests_timeout_for_timout() {
        assert_eq!(nearest("timout", &key_names()), Some("timeout"));
    }

    #[test]
    fn suggests_the_boundary_for_a_transposed_pair() {
        let names: Vec<&str> = BOUNDARIES.iter().map(|n| n.name).collect();
        assert_eq!(nearest("after_clcik", &names), Some("after_click"));
    }

    #[test]
    fn suggests_the_boundary_for_a_dash_or_capitals() {
        let names: Vec<&str> = BOUNDARIES.iter().map(|n| n.name).collect();
        assert_eq!(nearest("After-Click", &names), Some("after_click"));
    }

    #[test]
    fn suggests_a_name_contained_in_the_given_one_or_containing_it() {
        let names: Vec<&str> = BOUNDARIES.iter().map(|n| n.name).collect();
        assert_eq!(nearest("click", &names), Some("after_click"));
        assert_eq!(nearest("sigkill", &["kill", "abort"]), Some("kill"));
    }

    #[test]
    fn suggests_nothing_for_an_unrelated_word() {
        assert_eq!(nearest("banana", &key_names()), None);
        assert_eq!(nearest("x", &key_names()), None);
    }

    #[test]
    fn suggests_at_for_boundaries() {
        let msg = unknown_option("boundaries");
        assert_eq!(
            msg,
            "unknown option `boundaries`; did you mean `at`? \
             valid options: at, site, account, crash, timeout, hazards, effects, every_step, depth, seeded, command"
        );
    }

    #[test]
    fn suggests_every_step_for_max_trials() {
        assert!(
            unknown_option("max_trials")
                .starts_with("unknown option `max_trials`; did you mean `every_step`?")
        );
        assert!(unknown_option("seed").contains("did you mean `seeded`?"));
    }

    #[test]
    fn lists_valid_names_and_the_extra_choice() {
        let msg = unknown("crash mode", "crash modes", "kil", &CRASH_MODES, "");
        assert_eq!(
            msg,
            "unknown crash mode `kil`; did you mean `kill`? valid crash modes: kill, abort"
        );
        let msg = unknown("hazard", "hazards", "zzz", &HAZARDS, ", or \"all\"");
        assert!(msg.ends_with("credential_rotated, or \"all\""), "{msg}");
        assert!(!msg.contains("did you mean"), "{msg}");
    }

    #[test]
    fn counts_a_transposition_as_one_edit() {
        assert_eq!(distance("ab", "ba"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
