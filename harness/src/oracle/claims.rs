//! What each worker *reported*, judged against the journal and the ledger: a worker's word
//! is a claim, never a fact.
//!
//! - `Confirmed` needs `REMOTE_CONFIRMED` in the journal, and the ledger holding the effect
//!   of every `REMOTE_CONFIRMED` key.
//! - `Unknown` needs `UNKNOWN` in the journal.
//! - `Completed` ("nothing left open") needs no `UNKNOWN` and no `ACTION_SUBMITTED`.
//! - A safe stop (or a noticed browser crash) needs no new effect in the ledger that this
//!   worker is answerable for: one that appeared while it lived, unless the journal shows
//!   only other workers submitting that key (a resend, `ACTION_SUBMITTED → ACTION_SUBMITTED`,
//!   makes the resending worker a submitter).

use std::collections::BTreeMap;

use super::{Facts, Invariant, JudgedWorker, Verdict, distinct_quoted, result_name, verdict};
use crate::journal::Checkpoint;
use crate::worker::{Outcome, WorkerResult};

pub(super) fn claims_match_facts(f: &Facts) -> Verdict {
    let mut judged = 0;
    let mut false_claims = Vec::new();
    for w in &f.judged_workers {
        let Some(result) = w.result else { continue };
        judged += 1;
        if let Some(truth) = falsehood(f, w, result) {
            false_claims.push(format!(
                "worker {} claimed {}, but {truth}",
                w.incarnation,
                result_name(Some(result))
            ));
        }
    }
    let held = false_claims.is_empty();
    // An agent that stopped before it recorded anything has nothing to report either: only
    // an effect in the ledger with no journal record at all is judged on the ledger alone.
    let explanation = if held && f.unreported() && !f.ledger.is_empty() {
        format!(
            "{judged} claim(s), each matching the ledger (judged on the ledger alone: the agent reported no checkpoint)"
        )
    } else if held {
        format!("{judged} claim(s), each matching the journal and the ledger")
    } else {
        false_claims.join("; ")
    };
    verdict(Invariant::ClaimsMatchFacts, held, explanation)
}

/// What is true instead, when the claim is false.
fn falsehood(f: &Facts, w: &JudgedWorker, result: WorkerResult) -> Option<String> {
    let has = |state: Checkpoint| f.effects.iter().any(|e| e.state == state);
    match result {
        // Without a journal record, a confirmation is judged on the ledger alone.
        WorkerResult::Ok(Outcome::Confirmed) if f.unreported() => f
            .ledger
            .is_empty()
            .then(|| "the agent reported no checkpoint and the ledger holds no effect".to_owned()),
        WorkerResult::Ok(Outcome::Confirmed) => {
            let confirmed: Vec<_> = f
                .effects
                .iter()
                .filter(|e| e.state == Checkpoint::RemoteConfirmed)
                .collect();
            let missing: Vec<&str> = confirmed
                .iter()
                .filter(|e| {
                    !f.ledger
                        .iter()
                        .any(|l| l.request_key == e.request_key.as_str())
                })
                .map(|e| e.request_key.as_str())
                .collect();
            if confirmed.is_empty() {
                Some(truth(f))
            } else if !missing.is_empty() {
                // Name the keys: "1 REMOTE_CONFIRMED and 1 effect" reads as consistent when the
                // effect is under another key than the one confirmed.
                let held = distinct_quoted(f.ledger.iter().map(|l| l.request_key.as_str()));
                Some(format!(
                    "{}: the journal confirmed key(s) {} that the ledger does not hold (it holds {})",
                    truth(f),
                    distinct_quoted(missing.iter().copied()),
                    if held.is_empty() { "none" } else { &held }
                ))
            } else {
                None
            }
        }
        WorkerResult::Ok(Outcome::Unknown) => (!has(Checkpoint::Unknown)).then(|| truth(f)),
        WorkerResult::Ok(Outcome::Completed) => {
            if has(Checkpoint::Unknown) || has(Checkpoint::ActionSubmitted) {
                return Some(truth(f));
            }
            // Completed means the task is done: the effects the scenario declares are there.
            let declared = f.intended.as_ref()?;
            let landed = f
                .ledger
                .iter()
                .filter(|l| declared.contains(&l.object))
                .count();
            (landed < declared.len()).then(|| {
                format!(
                    "the scenario declares {} effect(s) and the ledger holds {landed} on a declared object",
                    declared.len()
                )
            })
        }
        WorkerResult::Err(kind) if kind.is_safe_stop() => {
            let answerable = answerable_effects(f, w);
            (answerable > 0).then(|| {
                format!(
                    "{answerable} effect(s) reached the ledger while it lived, under a key it submitted itself or that no worker journaled submitting"
                )
            })
        }
        // Other failures claim nothing; `recover_or_stop_safely` judges them.
        WorkerResult::Err(_) => None,
    }
}

/// The effects a worker is answerable for: new in the ledger while it lived, unless the
/// journal shows only other workers submitting their key.
fn answerable_effects(f: &Facts, w: &JudgedWorker) -> usize {
    f.ledger
        .iter()
        .filter(|e| e.seq > w.ledger_seq_before && e.seq <= w.ledger_seq_after)
        .filter(|e| {
            let submitters: Vec<u32> = f
                .history
                .iter()
                .filter(|t| {
                    t.request_key.as_str() == e.request_key && t.to == Checkpoint::ActionSubmitted
                })
                .map(|t| t.incarnation)
                .collect();
            submitters.is_empty() || submitters.contains(&w.incarnation)
        })
        .count()
}

/// "the journal holds 1 UNKNOWN and the ledger 0 effect(s)".
fn truth(f: &Facts) -> String {
    let mut states: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &f.effects {
        *states.entry(e.state.as_str()).or_default() += 1;
    }
    let journal = if states.is_empty() {
        "no side effect".to_owned()
    } else {
        states
            .into_iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "the journal holds {journal} and the ledger {} effect(s)",
        f.ledger.len()
    )
}
