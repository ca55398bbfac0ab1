//! The oracle: turns what a trial left (journal history, the site's ledger, the profile
//! store, the process table, the evidence) into one typed verdict per invariant.
//!
//! Explanations are bounded and carry kinds and counts only: never page content, never a
//! secret.

use serde::{Deserialize, Serialize};

use crate::journal::{Checkpoint, SideEffectRecord};
use crate::site::RemoteEffect;
use crate::worker::{Outcome, WorkerResult};

/// The six invariants of DESIGN.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Invariant {
    /// 1. Every ledger effect of the run belongs to the expected account and tenant.
    NoWrongAccount,
    /// 2. Each intended side effect appears at most once in the ledger.
    NoDuplicate,
    /// 3. The journal never claims more or less than the ledger shows.
    AmbiguityVisible,
    /// 4. The recovery worker ends with confirmation, `UNKNOWN`, or a typed safe stop.
    RecoverOrStopSafely,
    /// 5. No profile, lease, lock or browser process of the trial remains.
    NoLeak,
    /// 6. No cookie value, password or authorization header appears in any evidence.
    NoSecretInEvidence,
}

impl Invariant {
    /// All six, in order.
    pub const ALL: [Invariant; 6] = [
        Invariant::NoWrongAccount,
        Invariant::NoDuplicate,
        Invariant::AmbiguityVisible,
        Invariant::RecoverOrStopSafely,
        Invariant::NoLeak,
        Invariant::NoSecretInEvidence,
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
    /// Whether it held.
    pub held: bool,
    /// Why, in kinds and counts.
    pub explanation: String,
}

/// How a worker that the oracle judges ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgedWorker {
    /// The incarnation.
    pub incarnation: u32,
    /// What it reported; `None` when it died without a word or timed out.
    pub result: Option<WorkerResult>,
    /// Whether it ended within its timeout.
    pub within_timeout: bool,
}

/// What the oracle reads.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// The account the run had to act as.
    pub expected_account: String,
    /// Its tenant.
    pub expected_tenant: String,
    /// The run's side effects with their final checkpoints.
    pub effects: Vec<SideEffectRecord>,
    /// What the site accepted during the trial.
    pub ledger: Vec<RemoteEffect>,
    /// The workers that must have recovered or stopped safely.
    pub judged_workers: Vec<JudgedWorker>,
    /// Profile folders left besides the run's current profile, after the workers ended.
    pub leaked_profiles: usize,
    /// Profile locks still held after the workers ended.
    pub held_locks: usize,
    /// Browser or driver processes of the trial alive after the workers ended.
    pub leaked_processes: usize,
    /// Profiles the harness's cleanup did not prove removed.
    pub unproven_cleanups: usize,
    /// Occurrences of the site's secrets in the evidence.
    pub secrets_in_evidence: usize,
}

/// Computes the six verdicts.
pub fn judge(f: &Facts) -> Vec<Verdict> {
    vec![
        no_wrong_account(f),
        no_duplicate(f),
        ambiguity_visible(f),
        recover_or_stop_safely(f),
        no_leak(f),
        verdict(
            Invariant::NoSecretInEvidence,
            f.secrets_in_evidence == 0,
            format!("{} secret occurrence(s) in evidence", f.secrets_in_evidence),
        ),
    ]
}

fn verdict(invariant: Invariant, held: bool, explanation: String) -> Verdict {
    Verdict {
        invariant,
        held,
        explanation,
    }
}

fn no_wrong_account(f: &Facts) -> Verdict {
    let wrong = f
        .ledger
        .iter()
        .filter(|e| e.account != f.expected_account || e.tenant != f.expected_tenant)
        .count();
    verdict(
        Invariant::NoWrongAccount,
        wrong == 0,
        format!(
            "{wrong} of {} effect(s) under another account or tenant",
            f.ledger.len()
        ),
    )
}

fn no_duplicate(f: &Facts) -> Verdict {
    // Per intent, not per key: an agent that mints a new key after a restart and sends again
    // has duplicated, whatever the keys say.
    let intents = f.effects.len();
    let effects = f.ledger.len();
    let mut keys: Vec<&str> = f.ledger.iter().map(|e| e.request_key.as_str()).collect();
    keys.sort_unstable();
    let repeated_keys = keys.windows(2).filter(|w| w[0] == w[1]).count();
    let held = repeated_keys == 0 && effects <= intents.max(1);
    verdict(
        Invariant::NoDuplicate,
        held,
        format!("{effects} effect(s) for {intents} intent(s), {repeated_keys} repeated key(s)"),
    )
}

fn ambiguity_visible(f: &Facts) -> Verdict {
    let mut claimed_without_effect = 0;
    let mut effect_unclaimed = 0;
    let mut unresolved = 0;
    for e in &f.effects {
        let in_ledger = f
            .ledger
            .iter()
            .any(|l| l.request_key == e.request_key.as_str());
        match e.state {
            Checkpoint::RemoteConfirmed if !in_ledger => claimed_without_effect += 1,
            Checkpoint::RemoteConfirmed | Checkpoint::Unknown => {}
            Checkpoint::ActionSubmitted => unresolved += 1,
            Checkpoint::IntentRecorded | Checkpoint::TargetVerified if in_ledger => {
                effect_unclaimed += 1
            }
            _ => {}
        }
    }
    let foreign = f
        .ledger
        .iter()
        .filter(|l| {
            !f.effects
                .iter()
                .any(|e| e.request_key.as_str() == l.request_key)
        })
        .count();
    let held =
        claimed_without_effect == 0 && effect_unclaimed == 0 && unresolved == 0 && foreign == 0;
    verdict(
        Invariant::AmbiguityVisible,
        held,
        format!(
            "{claimed_without_effect} confirmed without effect, {effect_unclaimed} effect(s) the journal does not claim, {foreign} effect(s) with a key the journal never issued, {unresolved} ACTION_SUBMITTED left unreconciled"
        ),
    )
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
                    format!("worker {} failed: {}", w.incarnation, kind_name(kind))
                }
                (_, Some(WorkerResult::Ok(_))) => format!("worker {}", w.incarnation),
            });
        }
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
    let held = f.leaked_profiles == 0
        && f.held_locks == 0
        && f.leaked_processes == 0
        && f.unproven_cleanups == 0;
    verdict(
        Invariant::NoLeak,
        held,
        format!(
            "{} leaked profile(s), {} held lock(s), {} browser process(es), {} cleanup(s) without proof",
            f.leaked_profiles, f.held_locks, f.leaked_processes, f.unproven_cleanups
        ),
    )
}

/// A short name of a worker result, for explanations and reports.
pub fn result_name(result: Option<WorkerResult>) -> String {
    match result {
        Some(WorkerResult::Ok(o)) => serde_json::to_value(o)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        Some(WorkerResult::Err(kind)) => kind_name(kind),
        None => "no result".to_owned(),
    }
}

fn kind_name(kind: crate::worker::FailureKind) -> String {
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::Object(m)) => {
            let ty = m.get("type").and_then(|v| v.as_str()).unwrap_or("failure");
            match m.get("reason").and_then(|v| v.as_str()) {
                Some(reason) => format!("{ty}({reason})"),
                None => ty.to_owned(),
            }
        }
        _ => "failure".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::RequestKey;

    fn effect(state: Checkpoint) -> SideEffectRecord {
        serde_json::from_value(serde_json::json!({
            "run_id": "r", "effect": "send", "request_key": RequestKey::derive("r", "send"),
            "args_hash": "h", "state": state, "incarnation": 1
        }))
        .unwrap()
    }

    fn entry(key: &str, account: &str) -> RemoteEffect {
        RemoteEffect {
            seq: 1,
            request_key: key.into(),
            account: account.into(),
            tenant: "tenant-a".into(),
            object: "42".into(),
        }
    }

    fn facts(state: Checkpoint, ledger: Vec<RemoteEffect>) -> Facts {
        Facts {
            expected_account: "acct-test-42".into(),
            expected_tenant: "tenant-a".into(),
            effects: vec![effect(state)],
            ledger,
            judged_workers: vec![JudgedWorker {
                incarnation: 2,
                result: Some(WorkerResult::Ok(Outcome::Confirmed)),
                within_timeout: true,
            }],
            ..Facts::default()
        }
    }

    fn held(verdicts: &[Verdict], i: Invariant) -> bool {
        verdicts.iter().find(|v| v.invariant == i).unwrap().held
    }

    #[test]
    fn a_confirmed_effect_seen_once_holds_everything() {
        let key = RequestKey::derive("r", "send").to_string();
        let v = judge(&facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(&key, "acct-test-42")],
        ));
        assert!(v.iter().all(|v| v.held), "{v:?}");
    }

    #[test]
    fn an_effect_under_another_account_breaks_only_no_wrong_account() {
        let key = RequestKey::derive("r", "send").to_string();
        let v = judge(&facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(&key, "acct-other-7")],
        ));
        assert!(!held(&v, Invariant::NoWrongAccount));
        assert!(held(&v, Invariant::NoDuplicate) && held(&v, Invariant::AmbiguityVisible));
    }

    #[test]
    fn the_same_key_twice_is_a_duplicate() {
        let key = RequestKey::derive("r", "send").to_string();
        let v = judge(&facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(&key, "acct-test-42"), entry(&key, "acct-test-42")],
        ));
        assert!(!held(&v, Invariant::NoDuplicate));
        assert!(held(&v, Invariant::AmbiguityVisible));
    }

    #[test]
    fn a_new_key_minted_after_a_restart_is_a_duplicate_too() {
        let key = RequestKey::derive("r", "send").to_string();
        let v = judge(&facts(
            Checkpoint::RemoteConfirmed,
            vec![entry(&key, "acct-test-42"), entry("minted", "acct-test-42")],
        ));
        assert!(!held(&v, Invariant::NoDuplicate));
    }

    #[test]
    fn confirmed_without_an_effect_and_an_effect_left_unclaimed_are_not_visible() {
        assert!(!held(
            &judge(&facts(Checkpoint::RemoteConfirmed, vec![])),
            Invariant::AmbiguityVisible
        ));
        let key = RequestKey::derive("r", "send").to_string();
        assert!(!held(
            &judge(&facts(
                Checkpoint::TargetVerified,
                vec![entry(&key, "acct-test-42")]
            )),
            Invariant::AmbiguityVisible
        ));
        assert!(!held(
            &judge(&facts(Checkpoint::ActionSubmitted, vec![])),
            Invariant::AmbiguityVisible
        ));
        assert!(held(
            &judge(&facts(
                Checkpoint::Unknown,
                vec![entry(&key, "acct-test-42")]
            )),
            Invariant::AmbiguityVisible
        ));
        assert!(held(
            &judge(&facts(Checkpoint::Unknown, vec![])),
            Invariant::AmbiguityVisible
        ));
    }

    #[test]
    fn a_worker_that_died_or_timed_out_did_not_recover() {
        let mut f = facts(Checkpoint::Unknown, vec![]);
        f.judged_workers[0].result = None;
        assert!(!held(&judge(&f), Invariant::RecoverOrStopSafely));
        f.judged_workers[0] = JudgedWorker {
            incarnation: 2,
            result: Some(WorkerResult::Ok(Outcome::Unknown)),
            within_timeout: false,
        };
        assert!(!held(&judge(&f), Invariant::RecoverOrStopSafely));
        f.judged_workers[0] = JudgedWorker {
            incarnation: 2,
            result: Some(WorkerResult::Err(crate::worker::FailureKind::SafeStop(
                crate::worker::SafeStop::WrongAccount,
            ))),
            within_timeout: true,
        };
        assert!(held(&judge(&f), Invariant::RecoverOrStopSafely));
        f.judged_workers[0].result = Some(WorkerResult::Err(crate::worker::FailureKind::Panic));
        assert!(!held(&judge(&f), Invariant::RecoverOrStopSafely));
    }

    #[test]
    fn any_leftover_breaks_no_leak() {
        let mut f = facts(Checkpoint::Unknown, vec![]);
        assert!(held(&judge(&f), Invariant::NoLeak));
        f.leaked_profiles = 1;
        assert!(!held(&judge(&f), Invariant::NoLeak));
        f.leaked_profiles = 0;
        f.unproven_cleanups = 1;
        assert!(!held(&judge(&f), Invariant::NoLeak));
    }
}
