//! The oracle: turns what a trial left (journal history, the site's ledger, the profile
//! store, the process table, the evidence) into one typed verdict per invariant.
//!
//! The oracle believes nothing the agent says: what a worker reports is judged against the
//! journal and the ledger ([`Invariant::ClaimsMatchFacts`]), duplicates are counted against
//! the side effects the *scenario* declares (never what the agent journaled), and a trial
//! whose fault never struck fails ([`Invariant::FaultStruck`]).
//!
//! Explanations are bounded and carry kinds and counts only: never page content, never a
//! secret, never a path or an id that varies from run to run.

mod claims;
mod effects;
mod fault_record;

use serde::{Deserialize, Serialize};

pub use fault_record::{FaultRecord, ScheduledFault};

use crate::journal::{CheckpointTransition, SideEffectRecord};
use crate::site::RemoteEffect;
use crate::worker::{Outcome, WorkerResult};

/// The invariants of DESIGN.md: the six, then the three that judge whether a trial was a
/// real test (its fault struck, the workers' claims hold, the effects landed on the
/// scenario's object).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Invariant {
    /// 1. Every ledger effect of the run belongs to the expected account and tenant.
    NoWrongAccount,
    /// 2. Each intended side effect appears at most once in the ledger, counted against what
    ///    the scenario declares, whatever the request keys.
    NoDuplicate,
    /// 3. The journal never claims more or less than the ledger shows.
    AmbiguityVisible,
    /// 4. The recovery worker ends with confirmation, `UNKNOWN`, or a typed safe stop.
    RecoverOrStopSafely,
    /// 5. No profile, lease, lock or browser process of the trial remains.
    NoLeak,
    /// 6. No cookie value, password or authorization header appears in any evidence.
    NoSecretInEvidence,
    /// No secret left the browsers in a request but where it belongs: a password only in a
    /// sign-in's body, a cookie's value only in a header to its own site, nothing in a URL
    /// or to another origin (read by the proxy every browser goes through).
    NoSecretSent,
    /// The trial's armed fault struck: a trial whose fault never struck tested nothing.
    FaultStruck,
    /// What each worker reported (confirmed, unknown, completed, a safe stop) is what the
    /// journal and the ledger show.
    ClaimsMatchFacts,
    /// Every ledger effect landed on an object the scenario declared (`effects = [...]`).
    NoWrongObject,
    /// No worker acted on a profile its own check flagged (rolled back to an older
    /// generation, or last written by another browser version) without migrating it.
    ProfileTrusted,
    /// No live worker's lease lock file or browser profile lock was removed or replaced
    /// while it held them (other than by the trial's own planned tampering).
    LocksIntact,
}

impl Invariant {
    /// All of them, in the order of the verdicts.
    pub const ALL: [Invariant; 12] = [
        Invariant::NoWrongAccount,
        Invariant::NoDuplicate,
        Invariant::AmbiguityVisible,
        Invariant::RecoverOrStopSafely,
        Invariant::NoLeak,
        Invariant::NoSecretInEvidence,
        Invariant::NoSecretSent,
        Invariant::FaultStruck,
        Invariant::ClaimsMatchFacts,
        Invariant::NoWrongObject,
        Invariant::ProfileTrusted,
        Invariant::LocksIntact,
    ];

    /// The invariant's name in reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            Invariant::NoWrongAccount => "no_wrong_account",
            Invariant::NoDuplicate => "no_duplicate",
            Invariant::AmbiguityVisible => "ambiguity_visible",
            Invariant::RecoverOrStopSafely => "recover_or_stop_safely",
            Invariant::NoLeak => "no_leak",
            Invariant::NoSecretInEvidence => "no_secret_in_evidence",
            Invariant::NoSecretSent => "no_secret_sent",
            Invariant::FaultStruck => "fault_struck",
            Invariant::ClaimsMatchFacts => "claims_match_facts",
            Invariant::NoWrongObject => "no_wrong_object",
            Invariant::ProfileTrusted => "profile_trusted",
            Invariant::LocksIntact => "locks_intact",
        }
    }
}

impl std::fmt::Display for Invariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One invariant's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Which invariant.
    pub invariant: Invariant,
    /// Whether it held. A verdict that was not judged holds (it found nothing to break).
    pub held: bool,
    /// Why, in kinds and counts.
    pub explanation: String,
    /// Whether the oracle had what it takes to judge it: `false` for a verdict on the journal
    /// when the agent reported no checkpoint at all (a command agent that writes nothing
    /// through the checkpoint socket). Its explanation then starts with `not judged:` and
    /// says why; it is never a silent pass.
    #[serde(default = "judged", skip_serializing_if = "is_judged")]
    pub judged: bool,
}

fn judged() -> bool {
    true
}

fn is_judged(judged: &bool) -> bool {
    *judged
}

/// How a worker that the oracle judges ended, and what the ledger gained while it lived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgedWorker {
    /// The incarnation.
    pub incarnation: u32,
    /// What it reported; `None` when it died without a word or timed out.
    pub result: Option<WorkerResult>,
    /// Whether it ended within its timeout.
    pub within_timeout: bool,
    /// The ledger's highest sequence number when the worker was spawned.
    pub ledger_seq_before: u64,
    /// The ledger's highest sequence number when it had ended.
    pub ledger_seq_after: u64,
}

/// A profile left behind, described by role (names vary from run to run).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeakedProfile {
    /// The profile folder's name (in evidence; redacted in snapshots).
    pub profile: String,
    /// Who made it: `the trial (for worker 1)` or `worker 2`.
    pub created_by: String,
    /// Whether the run's last browser session used another profile: the agent moved on
    /// and abandoned this one.
    pub abandoned: bool,
}

/// What the oracle reads.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// The account the run had to act as.
    pub expected_account: String,
    /// Its tenant, on a site with tenants.
    pub expected_tenant: Option<String>,
    /// Why the trial demands a stop of every worker (an interstitial before the target, the
    /// session switched to another account): an effect that lands all the same under the
    /// agent's own account is not a safe stop.
    pub demands_stop: Option<String>,
    /// Why the site's ledger could not be read, when it could not: every verdict that
    /// judges the ledger then fails, saying so.
    pub ledger_error: Option<String>,
    /// The objects of the side effects the scenario declares, one entry per effect; `None`:
    /// one effect on an undeclared object.
    pub intended: Option<Vec<String>>,
    /// The run's side effects with their final checkpoints.
    pub effects: Vec<SideEffectRecord>,
    /// The run's checkpoint history: who wrote which transition.
    pub history: Vec<CheckpointTransition>,
    /// What the site accepted during the trial.
    pub ledger: Vec<RemoteEffect>,
    /// The workers whose ends and claims are judged.
    pub judged_workers: Vec<JudgedWorker>,
    /// Whether the trial's fault struck.
    pub fault: FaultRecord,
    /// Profile folders left besides the run's current profile, after the workers ended.
    pub leaked_profiles: Vec<LeakedProfile>,
    /// The workers whose profile check found the profile untrustworthy, with what it found
    /// (after any explicit migration).
    pub untrusted_profiles: Vec<(u32, Vec<String>)>,
    /// Locks a live worker found removed or replaced, as `worker N: what`, less the trial's
    /// own planned tampering.
    pub tampering: Vec<String>,
    /// Profile locks still held after the workers ended.
    pub held_locks: usize,
    /// Browser or driver processes of the trial alive after the workers ended.
    pub leaked_processes: usize,
    /// Processes the agent left running in a worker's process group after that worker ended
    /// (its own chromedriver, a helper), by incarnation and command name.
    pub stray_processes: Vec<(u32, Vec<String>)>,
    /// The incarnations whose remote WebDriver sessions (on a grid) were still open after
    /// the workers ended: a killed worker's browser lives on there until someone ends it.
    pub open_remote_sessions: Vec<u32>,
    /// Profiles the harness's cleanup did not prove removed.
    pub unproven_cleanups: usize,
    /// Occurrences of known secrets found (and redacted) in the evidence.
    pub secrets_in_evidence: usize,
    /// Where the browsers sent a secret that must not be, by kind and place (never the
    /// value); `None` when no proxy read what they sent (a user's site without the fault
    /// proxy): the verdict is then not judged.
    pub secrets_sent: Option<Vec<String>>,
}

impl Facts {
    /// Whether the effect `e` landed under the account (and, on a site with tenants, the
    /// tenant) the run had to act as.
    pub(crate) fn under_expected_account(&self, e: &RemoteEffect) -> bool {
        e.account == self.expected_account
            && (self.expected_tenant.is_none() || e.tenant == self.expected_tenant)
    }

    /// Whether the run's journal holds nothing at all: no intent, no transition. The agent
    /// then reported no checkpoint, and what only the journal can tell is not judged.
    pub fn unreported(&self) -> bool {
        self.effects.is_empty() && self.history.is_empty()
    }
}

/// Computes every verdict, in [`Invariant::ALL`] order.
pub fn judge(f: &Facts) -> Vec<Verdict> {
    let mut verdicts = vec![
        effects::no_wrong_account(f),
        effects::no_duplicate(f),
        effects::ambiguity_visible(f),
        recover_or_stop_safely(f),
        no_leak(f),
        verdict(
            Invariant::NoSecretInEvidence,
            f.secrets_in_evidence == 0,
            if f.secrets_in_evidence == 0 {
                "no secret in evidence".to_owned()
            } else {
                format!(
                    "{} secret occurrence(s) in evidence, redacted before anything was written",
                    f.secrets_in_evidence
                )
            },
        ),
        no_secret_sent(f),
        fault_struck(f),
        claims::claims_match_facts(f),
        effects::no_wrong_object(f),
        profile_trusted(f),
        verdict(
            Invariant::LocksIntact,
            f.tampering.is_empty(),
            if f.tampering.is_empty() {
                "every lock stayed with its holder".to_owned()
            } else {
                f.tampering.join("; ")
            },
        ),
    ];
    if let Some(why) = &f.ledger_error {
        // Nothing said of the site holds when the site could not be read.
        for v in &mut verdicts {
            if matches!(
                v.invariant,
                Invariant::NoWrongAccount
                    | Invariant::NoDuplicate
                    | Invariant::AmbiguityVisible
                    | Invariant::NoWrongObject
                    | Invariant::ClaimsMatchFacts
            ) {
                v.held = false;
                v.explanation = format!("site unreachable: its ledger could not be read ({why})");
            }
        }
    }
    verdicts
}

fn no_secret_sent(f: &Facts) -> Verdict {
    match &f.secrets_sent {
        None => not_judged(
            Invariant::NoSecretSent,
            "not judged: the browsers went to the site without the fault proxy, which reads \
             what they send"
                .to_owned(),
        ),
        Some(sent) if sent.is_empty() => verdict(
            Invariant::NoSecretSent,
            true,
            "no secret sent but where it belongs".to_owned(),
        ),
        Some(sent) => verdict(Invariant::NoSecretSent, false, bounded_list(sent)),
    }
}

/// At most four findings, then how many more.
fn bounded_list(items: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut text = items[..items.len().min(SHOWN)].join("; ");
    if items.len() > SHOWN {
        text.push_str(&format!("; and {} more", items.len() - SHOWN));
    }
    text
}

fn profile_trusted(f: &Facts) -> Verdict {
    let mut acted = Vec::new();
    for (incarnation, findings) in &f.untrusted_profiles {
        let submitted = f.history.iter().any(|t| {
            t.incarnation == *incarnation && t.to == crate::journal::Checkpoint::ActionSubmitted
        });
        if submitted {
            acted.push(format!(
                "worker {incarnation} acted on a profile its own check flagged ({}) without migrating it",
                findings.join(", ")
            ));
        }
    }
    let explanation = if !acted.is_empty() {
        acted.join("; ")
    } else if f.untrusted_profiles.is_empty() {
        "every profile passed its check".to_owned()
    } else {
        format!(
            "{} worker(s) found their profile untrustworthy and did not act on it",
            f.untrusted_profiles.len()
        )
    };
    verdict(Invariant::ProfileTrusted, acted.is_empty(), explanation)
}

fn verdict(invariant: Invariant, held: bool, explanation: String) -> Verdict {
    Verdict {
        invariant,
        held,
        explanation,
        judged: true,
    }
}

/// `` `a`, `b` ``: each name once, in the order first seen. What a failed verdict names.
fn distinct_quoted<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for name in names {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen.iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A verdict the facts cannot decide, saying why.
fn not_judged(invariant: Invariant, why: String) -> Verdict {
    Verdict {
        invariant,
        held: true,
        explanation: format!("not judged: {why}"),
        judged: false,
    }
}

fn fault_struck(f: &Facts) -> Verdict {
    let fault = &f.fault;
    let explanation = if fault.struck {
        match fault.worker {
            Some(w) => format!("`{}` struck worker {w}", fault.planned),
            None => format!("`{}` struck", fault.planned),
        }
    } else {
        format!(
            "`{}` never struck: {}; the trial tested nothing",
            fault.planned,
            fault.instead.as_deref().unwrap_or("no worker reached it")
        )
    };
    verdict(Invariant::FaultStruck, fault.struck, explanation)
}

fn recover_or_stop_safely(f: &Facts) -> Verdict {
    let mut bad = Vec::new();
    for w in &f.judged_workers {
        let ok = w.within_timeout
            && match w.result {
                Some(WorkerResult::Ok(
                    Outcome::Confirmed | Outcome::Unknown | Outcome::Completed,
                )) => true,
                Some(WorkerResult::Err(kind)) => kind.is_safe_stop(),
                None => false,
            };
        if !ok {
            bad.push(match (w.within_timeout, w.result) {
                (false, _) => format!("worker {} timed out", w.incarnation),
                (_, None) => format!("worker {} died without a result", w.incarnation),
                (_, Some(WorkerResult::Err(kind))) => {
                    format!("worker {} failed: {}", w.incarnation, kind.name())
                }
                (_, Some(WorkerResult::Ok(_))) => format!("worker {}", w.incarnation),
            });
        }
    }
    // An effect under another account or tenant is `no_wrong_account`'s; one under the
    // agent's own (it signed back in, clicked through) is acting where it had to stop.
    let own = f
        .ledger
        .iter()
        .filter(|e| f.under_expected_account(e))
        .count();
    if let Some(why) = &f.demands_stop
        && own > 0
    {
        bad.push(format!(
            "the trial demands a stop ({why}), and the site accepted {own} effect(s) under the agent's own account all the same"
        ));
    }
    let explanation = if bad.is_empty() {
        let ends: Vec<String> = f
            .judged_workers
            .iter()
            .map(|w| format!("worker {}: {}", w.incarnation, result_name(w.result)))
            .collect();
        ends.join(", ")
    } else {
        bad.join(", ")
    };
    verdict(Invariant::RecoverOrStopSafely, bad.is_empty(), explanation)
}

fn no_leak(f: &Facts) -> Verdict {
    let held = f.leaked_profiles.is_empty()
        && f.held_locks == 0
        && f.leaked_processes == 0
        && f.stray_processes.is_empty()
        && f.open_remote_sessions.is_empty()
        && f.unproven_cleanups == 0;
    let mut parts = Vec::new();
    for p in &f.leaked_profiles {
        parts.push(if p.abandoned {
            format!(
                "a profile created by {} was abandoned: the run's last browser session used another profile, and nobody removed this one",
                p.created_by
            )
        } else {
            format!("a profile created by {} was left behind", p.created_by)
        });
    }
    if f.held_locks > 0 {
        parts.push(format!("{} profile lock(s) still held", f.held_locks));
    }
    if f.leaked_processes > 0 {
        parts.push(format!(
            "{} browser process(es) still alive",
            f.leaked_processes
        ));
    }
    for (incarnation, names) in &f.stray_processes {
        parts.push(format!(
            "worker {incarnation} left {} process(es) of its process group running after it ended ({})",
            names.len(),
            names.join(", ")
        ));
    }
    if !f.open_remote_sessions.is_empty() {
        let whose: Vec<String> = f
            .open_remote_sessions
            .iter()
            .map(|i| format!("worker {i}'s"))
            .collect();
        parts.push(format!(
            "{} remote browser session(s) of the run still open at the endpoint ({})",
            f.open_remote_sessions.len(),
            whose.join(", ")
        ));
    }
    if f.unproven_cleanups > 0 {
        parts.push(format!(
            "{} cleanup(s) without proof of removal",
            f.unproven_cleanups
        ));
    }
    let explanation = if parts.is_empty() {
        "no profile, lock or browser process left; every cleanup proven".to_owned()
    } else {
        parts.join("; ")
    };
    verdict(Invariant::NoLeak, held, explanation)
}

/// A short name of a worker result, for explanations and reports.
pub fn result_name(result: Option<WorkerResult>) -> String {
    match result {
        Some(WorkerResult::Ok(o)) => serde_json::to_value(o)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        Some(WorkerResult::Err(kind)) => kind.name(),
        None => "no result".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Checkpoint, RequestKey};
    use crate::worker::{FailureKind, SafeStop};

    fn key() -> String {
        RequestKey::derive("r", "send").to_string()
    }

    fn effect(state: Checkpoint) -> SideEffectRecord {
        serde_json::from_value(serde_json::json!({
            "run_id": "r", "effect": "send", "request_key": RequestKey::derive("r", "send"),
            "args_hash": "h", "state": state, "incarnation": 1
        }))
        .unwrap()
    }

    fn submitted_by(incarnation: u32) -> CheckpointTransition {
        serde_json::from_value(serde_json::json!({
            "seq": 1, "run_id": "r", "request_key": RequestKey::derive("r", "send"),
            "effect": "send", "from": "TARGET_VERIFIED", "to": "ACTION_SUBMITTED",
            "incarnation": incarnation, "at_unix_ms": 0
        }))
        .unwrap()
    }

    fn entry(seq: u64, key: &str, account: &str) -> RemoteEffect {
        RemoteEffect {
            seq,
            request_key: key.into(),
            account: account.into(),
            tenant: Some("tenant-a".into()),
            object: "42".into(),
            payload: None,
        }
    }

    fn worker(incarnation: u32, result: WorkerResult) -> JudgedWorker {
        JudgedWorker {
            incarnation,
            result: Some(result),
            within_timeout: true,
            ledger_seq_before: 0,
            ledger_seq_after: 0,
        }
    }

    fn facts(state: Checkpoint, ledger: Vec<RemoteEffect>) -> Facts {
        Facts {
            expected_account: "acct-test-42".into(),
            expected_tenant: Some("tenant-a".into()),
            ledger_error: None,
            intended: Some(vec!["42".into()]),
            effects: vec![effect(state)],
            ledger,
            judged_workers: vec![worker(
                2,
                WorkerResult::Ok(match state {
                    Checkpoint::Unknown => Outcome::Unknown,
                    _ => Outcome::Confirmed,
                }),
            )],
            fault: FaultRecord {
                planned: "crash at after_click".into(),
                struck: true,
                worker: Some(1),
                ..FaultRecord::default()
            },
            secrets_sent: Some(Vec::new()),
            ..Facts::default()
        }
    }

    #[test]
    fn a_secret_sent_fails_no_secret_sent_alone_naming_where_and_unread_requests_are_not_judged() {
        let mut f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, &key(), "acct-test-42")],
        );
        assert!(broken(&f).is_empty());
        f.secrets_sent = Some(
            (1..=6)
                .map(|i| format!("an account's password in the body of POST /threads/{i}/messages"))
                .collect(),
        );
        assert_eq!(broken(&f), [Invariant::NoSecretSent]);
        let why = explanation(&f, Invariant::NoSecretSent);
        assert!(why.starts_with("an account's password in the body of POST /threads/1/messages; "));
        assert!(why.ends_with("; and 2 more"), "{why}");
        f.secrets_sent = None;
        let v = judge(&f)
            .into_iter()
            .find(|v| v.invariant == Invariant::NoSecretSent)
            .unwrap();
        assert!(v.held && !v.judged && v.explanation.starts_with("not judged: "));
    }

    fn broken(f: &Facts) -> Vec<Invariant> {
        judge(f)
            .into_iter()
            .filter(|v| !v.held)
            .map(|v| v.invariant)
            .collect()
    }

    fn explanation(f: &Facts, i: Invariant) -> String {
        judge(f)
            .into_iter()
            .find(|v| v.invariant == i)
            .unwrap()
            .explanation
    }

    #[test]
    fn an_agent_that_reported_no_checkpoint_is_not_judged_on_the_journal() {
        let mut f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, "own-key", "acct-test-42")],
        );
        f.effects.clear();
        f.history.clear();
        let verdicts = judge(&f);
        let ambiguity = verdicts
            .iter()
            .find(|v| v.invariant == Invariant::AmbiguityVisible)
            .unwrap();
        assert!(!ambiguity.judged && ambiguity.held);
        assert!(
            ambiguity
                .explanation
                .starts_with("not judged: the agent reported no checkpoint")
        );
        assert!(verdicts.iter().filter(|v| !v.judged).count() == 1);
        // Its confirmation is judged on the ledger alone: true here...
        assert!(broken(&f).is_empty(), "{:?}", broken(&f));
        assert!(explanation(&f, Invariant::ClaimsMatchFacts).contains("on the ledger alone"));
        // ...and false on an empty ledger, where ambiguity has nothing to hide and is judged.
        f.ledger.clear();
        assert_eq!(broken(&f), [Invariant::ClaimsMatchFacts]);
        assert!(judge(&f).iter().all(|v| v.judged));
    }

    #[test]
    fn a_confirmed_effect_seen_once_holds_everything() {
        let f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, &key(), "acct-test-42")],
        );
        assert_eq!(broken(&f), []);
        assert_eq!(judge(&f).len(), Invariant::ALL.len());
    }

    #[test]
    fn an_effect_under_another_account_breaks_only_no_wrong_account() {
        let f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, &key(), "acct-other-7")],
        );
        assert_eq!(broken(&f), [Invariant::NoWrongAccount]);
    }

    #[test]
    fn the_same_key_twice_is_a_duplicate() {
        let f = facts(
            Checkpoint::RemoteConfirmed,
            vec![
                entry(1, &key(), "acct-test-42"),
                entry(2, &key(), "acct-test-42"),
            ],
        );
        assert_eq!(broken(&f), [Invariant::NoDuplicate]);
        assert!(explanation(&f, Invariant::NoDuplicate).contains("the same key sent twice"));
    }

    #[test]
    fn a_second_journaled_intent_for_the_same_action_is_two_keys_for_one_intent() {
        let mut f = facts(
            Checkpoint::RemoteConfirmed,
            vec![
                entry(1, &key(), "acct-test-42"),
                entry(2, "minted", "acct-test-42"),
            ],
        );
        let mut second = effect(Checkpoint::RemoteConfirmed);
        second.effect = "send-again".into();
        second.request_key = serde_json::from_value(serde_json::json!("minted")).unwrap();
        f.effects.push(second);
        assert_eq!(broken(&f), [Invariant::NoDuplicate]);
        let why = explanation(&f, Invariant::NoDuplicate);
        assert!(why.contains("two keys for one intent"), "{why}");
        assert!(!why.contains("never issued"), "{why}");
    }

    #[test]
    fn a_key_the_journal_never_issued_is_named_as_such() {
        let f = facts(
            Checkpoint::RemoteConfirmed,
            vec![
                entry(1, &key(), "acct-test-42"),
                entry(2, "minted", "acct-test-42"),
            ],
        );
        assert_eq!(
            broken(&f),
            [Invariant::NoDuplicate, Invariant::AmbiguityVisible]
        );
        assert!(explanation(&f, Invariant::NoDuplicate).contains("a key the journal never issued"));
    }

    #[test]
    fn sending_under_another_key_than_journaled_says_so_instead_of_a_missing_effect() {
        let f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, "other-key", "acct-test-42")],
        );
        let why = explanation(&f, Invariant::AmbiguityVisible);
        assert!(
            why.contains("sent under another key than it journaled"),
            "{why}"
        );
        assert!(broken(&f).contains(&Invariant::AmbiguityVisible));
    }

    #[test]
    fn duplicates_count_against_the_declared_intents_not_the_journal() {
        // Two effects on the declared object, each under a key the journal holds: the
        // journal has two intents, the scenario declares one.
        let mut f = facts(Checkpoint::RemoteConfirmed, vec![]);
        f.effects.clear();
        f.ledger = vec![
            entry(1, "k1", "acct-test-42"),
            entry(2, "k2", "acct-test-42"),
        ];
        for k in ["k1", "k2"] {
            let mut e = effect(Checkpoint::RemoteConfirmed);
            e.effect = k.into();
            e.request_key = serde_json::from_value(serde_json::json!(k)).unwrap();
            f.effects.push(e);
        }
        assert_eq!(broken(&f), [Invariant::NoDuplicate]);
        // Declaring two effects on that object makes the same ledger fine.
        f.intended = Some(vec!["42".into(), "42".into()]);
        assert_eq!(broken(&f), []);
    }

    #[test]
    fn an_effect_on_an_undeclared_object_breaks_only_no_wrong_object() {
        let mut ledger = vec![entry(1, &key(), "acct-test-42")];
        ledger[0].object = "43".into();
        let f = facts(Checkpoint::RemoteConfirmed, ledger.clone());
        assert_eq!(broken(&f), [Invariant::NoWrongObject]);
        // Undeclared objects are not checked, and say so.
        let mut f = facts(Checkpoint::RemoteConfirmed, ledger);
        f.intended = None;
        assert_eq!(broken(&f), []);
        assert!(explanation(&f, Invariant::NoWrongObject).contains("not checked"));
    }

    #[test]
    fn confirmed_without_an_effect_and_an_effect_left_unclaimed_are_not_visible() {
        assert!(
            broken(&facts(Checkpoint::RemoteConfirmed, vec![]))
                .contains(&Invariant::AmbiguityVisible)
        );
        let mut f = facts(
            Checkpoint::TargetVerified,
            vec![entry(1, &key(), "acct-test-42")],
        );
        f.judged_workers.clear();
        assert_eq!(broken(&f), [Invariant::AmbiguityVisible]);
        let mut f = facts(Checkpoint::ActionSubmitted, vec![]);
        f.judged_workers.clear();
        assert_eq!(broken(&f), [Invariant::AmbiguityVisible]);
        assert_eq!(
            broken(&facts(
                Checkpoint::Unknown,
                vec![entry(1, &key(), "acct-test-42")]
            )),
            []
        );
        assert_eq!(broken(&facts(Checkpoint::Unknown, vec![])), []);
    }

    #[test]
    fn a_worker_that_claims_confirmed_while_the_journal_says_unknown_is_caught() {
        let mut f = facts(Checkpoint::Unknown, vec![]);
        f.judged_workers = vec![worker(2, WorkerResult::Ok(Outcome::Confirmed))];
        assert_eq!(broken(&f), [Invariant::ClaimsMatchFacts]);
        assert_eq!(
            explanation(&f, Invariant::ClaimsMatchFacts),
            "worker 2 claimed confirmed, but the journal holds 1 UNKNOWN and the ledger 0 effect(s)"
        );
    }

    #[test]
    fn unknown_and_completed_claims_need_their_journal_states() {
        let mut f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, &key(), "acct-test-42")],
        );
        f.judged_workers = vec![worker(2, WorkerResult::Ok(Outcome::Unknown))];
        assert_eq!(broken(&f), [Invariant::ClaimsMatchFacts]);
        f.judged_workers = vec![worker(2, WorkerResult::Ok(Outcome::Completed))];
        assert_eq!(broken(&f), []);
        let mut f = facts(Checkpoint::Unknown, vec![]);
        f.judged_workers = vec![worker(2, WorkerResult::Ok(Outcome::Completed))];
        assert_eq!(broken(&f), [Invariant::ClaimsMatchFacts]);
    }

    #[test]
    fn an_effect_where_the_trial_demands_a_stop_is_no_safe_stop() {
        let mut f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, &key(), "acct-test-42")],
        );
        f.demands_stop = Some("a login interstitial stands before the target".into());
        assert_eq!(broken(&f), [Invariant::RecoverOrStopSafely]);
        f.ledger.clear();
        f.effects.clear();
        f.judged_workers = vec![worker(
            2,
            WorkerResult::Err(FailureKind::SafeStop(SafeStop::Interstitial)),
        )];
        assert_eq!(broken(&f), []);
    }

    #[test]
    fn where_an_account_switch_demands_a_stop_an_effect_under_the_own_account_breaks_it_and_one_under_another_is_no_wrong_accounts()
     {
        let switched = "the profile's session was switched to another account under the worker";
        // It signed in again as itself and sent: the stop the trial demanded, not taken.
        let mut f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, &key(), "acct-test-42")],
        );
        f.demands_stop = Some(switched.into());
        assert_eq!(broken(&f), [Invariant::RecoverOrStopSafely]);
        assert_eq!(
            explanation(&f, Invariant::RecoverOrStopSafely),
            format!(
                "the trial demands a stop ({switched}), and the site accepted 1 effect(s) under the agent's own account all the same"
            )
        );
        // It sent under the switched session: that is `no_wrong_account`'s alone.
        f.ledger = vec![entry(1, &key(), "acct-other-7")];
        assert_eq!(broken(&f), [Invariant::NoWrongAccount]);
    }

    #[test]
    fn a_completed_claim_without_the_declared_effect_is_false() {
        let mut f = facts(Checkpoint::TargetVerified, vec![]);
        f.judged_workers = vec![worker(2, WorkerResult::Ok(Outcome::Completed))];
        assert_eq!(broken(&f), [Invariant::ClaimsMatchFacts]);
        assert_eq!(
            explanation(&f, Invariant::ClaimsMatchFacts),
            "worker 2 claimed completed, but the scenario declares 1 effect(s) and the ledger holds 0 on a declared object"
        );
        f.intended = Some(vec![]);
        assert_eq!(broken(&f), []);
    }

    #[test]
    fn a_confirmation_under_another_key_than_the_effect_names_both_keys() {
        let f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, "agent-own-key", "acct-test-42")],
        );
        let why = explanation(&f, Invariant::ClaimsMatchFacts);
        assert!(
            why.contains(&format!(
                "the journal confirmed key(s) `{}` that the ledger does not hold (it holds `agent-own-key`)",
                key()
            )),
            "{why}"
        );
    }

    #[test]
    fn wrong_accounts_and_objects_are_named() {
        let mut f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, &key(), "acct-other-7")],
        );
        f.ledger[0].object = "43".into();
        assert_eq!(
            explanation(&f, Invariant::NoWrongAccount),
            "1 of 1 effect(s) under another account or tenant: 1 under another account, `acct-other-7` (expected `acct-test-42`)"
        );
        assert_eq!(
            explanation(&f, Invariant::NoWrongObject),
            "1 of 1 effect(s) on an object the scenario did not declare: on `43` (declared: `42`)"
        );
        f.expected_tenant = None;
        assert!(
            explanation(&f, Invariant::NoWrongAccount).contains("under another account:"),
            "a site without tenants is not told of tenants"
        );
    }

    #[test]
    fn a_safe_stop_is_answerable_only_for_effects_no_other_worker_submitted() {
        let stop = WorkerResult::Err(FailureKind::SafeStop(SafeStop::LeaseHeld));
        let mut f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, &key(), "acct-test-42")],
        );
        // The winner of a race submitted the key; the loser's window saw it land.
        f.history = vec![submitted_by(1)];
        let mut loser = worker(2, stop);
        loser.ledger_seq_after = 1;
        let mut winner = worker(1, WorkerResult::Ok(Outcome::Confirmed));
        winner.ledger_seq_after = 1;
        f.judged_workers = vec![winner, loser];
        assert_eq!(broken(&f), []);
        // The stopping worker submitted it itself: its "safe stop" is false.
        f.history = vec![submitted_by(2)];
        f.judged_workers = vec![loser];
        assert_eq!(broken(&f), [Invariant::ClaimsMatchFacts]);
        // Nobody journaled it and it landed while the worker lived.
        f.history.clear();
        assert_eq!(broken(&f), [Invariant::ClaimsMatchFacts]);
        // It landed before the worker lived.
        f.judged_workers[0].ledger_seq_before = 1;
        assert_eq!(broken(&f), []);
    }

    #[test]
    fn a_resend_under_the_same_key_makes_the_resending_worker_answerable() {
        let stop = WorkerResult::Err(FailureKind::SafeStop(SafeStop::WrongAccount));
        let mut f = facts(
            Checkpoint::ActionSubmitted,
            vec![entry(1, &key(), "acct-test-42")],
        );
        let mut resender = worker(2, stop);
        resender.ledger_seq_after = 1;
        f.judged_workers = vec![resender];
        // Worker 1's send alone: the effect is worker 1's, the stop of worker 2 stands.
        f.history = vec![submitted_by(1)];
        assert!(!broken(&f).contains(&Invariant::ClaimsMatchFacts));
        // Worker 2 journaled its resend: the effect that landed while it lived is its own.
        let mut resend = submitted_by(2);
        resend.from = Some(Checkpoint::ActionSubmitted);
        f.history.push(resend);
        assert!(broken(&f).contains(&Invariant::ClaimsMatchFacts));
        assert!(
            explanation(&f, Invariant::ClaimsMatchFacts)
                .contains("worker 2 claimed safe_stop(wrong_account), but 1 effect(s)"),
            "{}",
            explanation(&f, Invariant::ClaimsMatchFacts)
        );
    }

    #[test]
    fn a_fault_that_never_struck_fails_the_trial_and_says_what_happened_instead() {
        let mut f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, &key(), "acct-test-42")],
        );
        f.fault = FaultRecord {
            planned: "crash at after_login".into(),
            struck: false,
            instead: Some("worker 1 finished (confirmed) without crossing `after_login`".into()),
            ..FaultRecord::default()
        };
        assert_eq!(broken(&f), [Invariant::FaultStruck]);
        assert_eq!(
            explanation(&f, Invariant::FaultStruck),
            "`crash at after_login` never struck: worker 1 finished (confirmed) without crossing `after_login`; the trial tested nothing"
        );
    }

    #[test]
    fn a_worker_that_died_or_timed_out_did_not_recover() {
        let mut f = facts(Checkpoint::Unknown, vec![]);
        f.judged_workers[0].result = None;
        assert!(broken(&f).contains(&Invariant::RecoverOrStopSafely));
        f.judged_workers[0].result = Some(WorkerResult::Ok(Outcome::Unknown));
        f.judged_workers[0].within_timeout = false;
        assert!(broken(&f).contains(&Invariant::RecoverOrStopSafely));
        f.judged_workers[0] = worker(
            2,
            WorkerResult::Err(FailureKind::SafeStop(SafeStop::WrongAccount)),
        );
        assert_eq!(broken(&f), []);
        f.judged_workers[0].result = Some(WorkerResult::Err(FailureKind::Panic));
        assert_eq!(broken(&f), [Invariant::RecoverOrStopSafely]);
    }

    #[test]
    fn acting_on_a_flagged_profile_breaks_profile_trusted_and_stopping_does_not() {
        let mut f = facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(1, &key(), "acct-test-42")],
        );
        f.untrusted_profiles = vec![(2, vec!["browser version changed".into()])];
        assert_eq!(broken(&f), []);
        f.history = vec![submitted_by(2)];
        assert_eq!(broken(&f), [Invariant::ProfileTrusted]);
        assert_eq!(
            explanation(&f, Invariant::ProfileTrusted),
            "worker 2 acted on a profile its own check flagged (browser version changed) without migrating it"
        );
    }

    #[test]
    fn a_lock_removed_under_its_holder_breaks_only_locks_intact() {
        let mut f = facts(Checkpoint::Unknown, vec![]);
        f.tampering = vec!["worker 2: lease lock file removed or replaced".into()];
        assert_eq!(broken(&f), [Invariant::LocksIntact]);
        assert_eq!(
            explanation(&f, Invariant::LocksIntact),
            "worker 2: lease lock file removed or replaced"
        );
    }

    #[test]
    fn a_leak_names_who_made_the_profile_and_whether_it_was_abandoned() {
        let mut f = facts(Checkpoint::Unknown, vec![]);
        assert_eq!(broken(&f), []);
        f.leaked_profiles.push(LeakedProfile {
            profile: "p-1234".into(),
            created_by: "the trial (for worker 1)".into(),
            abandoned: true,
        });
        assert_eq!(broken(&f), [Invariant::NoLeak]);
        let why = explanation(&f, Invariant::NoLeak);
        assert!(
            why.starts_with("a profile created by the trial (for worker 1) was abandoned"),
            "{why}"
        );
        f.leaked_profiles.clear();
        f.unproven_cleanups = 1;
        assert_eq!(broken(&f), [Invariant::NoLeak]);
    }
}
