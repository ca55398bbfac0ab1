//! The verdicts on what the site accepted: whose account, how many times, which object, and
//! whether the journal says what the ledger shows.

use std::collections::BTreeMap;

use super::{Facts, Invariant, Verdict, distinct_quoted, verdict};
use crate::journal::Checkpoint;
use crate::site::RemoteEffect;

pub(super) fn no_wrong_account(f: &Facts) -> Verdict {
    let other_account: Vec<&RemoteEffect> = f
        .ledger
        .iter()
        .filter(|e| e.account != f.expected_account)
        .collect();
    let other_tenant: Vec<&RemoteEffect> = f
        .ledger
        .iter()
        .filter(|e| e.account == f.expected_account && !f.under_expected_account(e))
        .collect();
    let wrong = other_account.len() + other_tenant.len();
    let explanation = if wrong == 0 {
        format!(
            "{} effect(s), all under the expected account and tenant",
            f.ledger.len()
        )
    } else {
        let mut parts = Vec::new();
        if !other_account.is_empty() {
            parts.push(format!(
                "{} under another account, {} (expected `{}`)",
                other_account.len(),
                distinct_quoted(other_account.iter().map(|e| e.account.as_str())),
                f.expected_account
            ));
        }
        if !other_tenant.is_empty() {
            parts.push(format!(
                "{} in another tenant, {} (expected `{}`)",
                other_tenant.len(),
                distinct_quoted(
                    other_tenant
                        .iter()
                        .map(|e| e.tenant.as_deref().unwrap_or("none"))
                ),
                f.expected_tenant.as_deref().unwrap_or_default()
            ));
        }
        let what = if f.expected_tenant.is_some() {
            "another account or tenant"
        } else {
            "another account"
        };
        format!(
            "{wrong} of {} effect(s) under {what}: {}",
            f.ledger.len(),
            parts.join("; ")
        )
    };
    verdict(Invariant::NoWrongAccount, wrong == 0, explanation)
}

/// Counted against the side effects the scenario declares, never against what the agent
/// journaled: an agent that mints a new intent (or a new key) after a restart and sends
/// again has duplicated, whatever its journal says.
pub(super) fn no_duplicate(f: &Facts) -> Verdict {
    // The effects that count against the declared intents: all of them when no object is
    // declared, else those on a declared object (the others are `no_wrong_object`'s).
    let (intended, counted): (usize, Vec<&crate::site::RemoteEffect>) = match &f.intended {
        None => (1, f.ledger.iter().collect()),
        Some(objects) => (
            objects.len(),
            f.ledger
                .iter()
                .filter(|e| objects.contains(&e.object))
                .collect(),
        ),
    };
    let excess = match &f.intended {
        None => counted.len().saturating_sub(1),
        Some(objects) => {
            let mut per_object: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
            for o in objects {
                per_object.entry(o.as_str()).or_default().0 += 1;
            }
            for e in &counted {
                per_object.entry(e.object.as_str()).or_default().1 += 1;
            }
            per_object
                .values()
                .map(|(want, got)| got.saturating_sub(*want))
                .sum()
        }
    };
    if excess == 0 {
        return verdict(
            Invariant::NoDuplicate,
            true,
            format!(
                "{} effect(s) for {intended} intended side effect(s)",
                counted.len()
            ),
        );
    }
    // Why there are more: the same key twice, several journaled keys for one intent, or a
    // key the journal never issued.
    let mut per_key: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &counted {
        *per_key.entry(e.request_key.as_str()).or_default() += 1;
    }
    let repeated = per_key.values().filter(|n| **n > 1).count();
    let journaled = |k: &str| f.effects.iter().any(|e| e.request_key.as_str() == k);
    let unjournaled = per_key.keys().filter(|k| !journaled(k)).count();
    let journaled_keys = per_key.keys().filter(|k| journaled(k)).count();
    let mut why = Vec::new();
    if repeated > 0 {
        why.push(format!("the same key sent twice ({repeated} key(s))"));
    }
    if journaled_keys > intended {
        why.push(format!(
            "two keys for one intent ({journaled_keys} journaled key(s) for {intended} intended effect(s))"
        ));
    }
    if unjournaled > 0 {
        why.push(format!(
            "a key the journal never issued ({unjournaled} key(s))"
        ));
    }
    verdict(
        Invariant::NoDuplicate,
        false,
        format!(
            "{} effect(s) for {intended} intended side effect(s): {}",
            counted.len(),
            why.join(", ")
        ),
    )
}

pub(super) fn no_wrong_object(f: &Facts) -> Verdict {
    let Some(objects) = &f.intended else {
        return verdict(
            Invariant::NoWrongObject,
            true,
            "no object declared (`effects = [...]`): not checked".to_owned(),
        );
    };
    let wrong = f
        .ledger
        .iter()
        .filter(|e| !objects.contains(&e.object))
        .count();
    let explanation = if wrong == 0 {
        format!("{} effect(s), all on a declared object", f.ledger.len())
    } else if objects.is_empty() {
        format!("{wrong} effect(s), while the scenario declares none (`effects = []`)")
    } else {
        format!(
            "{wrong} of {} effect(s) on an object the scenario did not declare: on {} (declared: {})",
            f.ledger.len(),
            distinct_quoted(
                f.ledger
                    .iter()
                    .filter(|e| !objects.contains(&e.object))
                    .map(|e| e.object.as_str())
            ),
            distinct_quoted(objects.iter().map(String::as_str))
        )
    };
    verdict(Invariant::NoWrongObject, wrong == 0, explanation)
}

pub(super) fn ambiguity_visible(f: &Facts) -> Verdict {
    if f.unreported() && !f.ledger.is_empty() {
        return super::not_judged(
            Invariant::AmbiguityVisible,
            format!(
                "the agent reported no checkpoint (no intent, no transition) while the ledger holds {} effect(s): \
                 whether it kept an ambiguous outcome visible is the journal's to say; record the intent and \
                 the transitions (the checkpoint socket's `intent` and `transition`, or `side_effect`)",
                f.ledger.len()
            ),
        );
    }
    let in_ledger = |key: &str| f.ledger.iter().any(|l| l.request_key == key);
    let mut confirmed_without_effect = 0;
    let mut effect_unclaimed = 0;
    let mut unresolved = 0;
    for e in &f.effects {
        let landed = in_ledger(e.request_key.as_str());
        match e.state {
            Checkpoint::RemoteConfirmed if !landed => confirmed_without_effect += 1,
            Checkpoint::RemoteConfirmed | Checkpoint::Unknown => {}
            Checkpoint::ActionSubmitted => unresolved += 1,
            Checkpoint::IntentRecorded | Checkpoint::TargetVerified if landed => {
                effect_unclaimed += 1
            }
            Checkpoint::IntentRecorded | Checkpoint::TargetVerified => {}
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
    let mut parts = Vec::new();
    if confirmed_without_effect > 0 && foreign > 0 {
        parts.push(format!(
            "{confirmed_without_effect} REMOTE_CONFIRMED whose key is not in the ledger, while the ledger holds {foreign} effect(s) under a key the journal never issued: the agent sent under another key than it journaled"
        ));
    } else {
        if confirmed_without_effect > 0 {
            parts.push(format!(
                "{confirmed_without_effect} REMOTE_CONFIRMED with no effect in the ledger"
            ));
        }
        if foreign > 0 {
            parts.push(format!(
                "{foreign} effect(s) in the ledger under a key the journal never issued"
            ));
        }
    }
    if effect_unclaimed > 0 {
        parts.push(format!(
            "{effect_unclaimed} effect(s) in the ledger that the journal shows as not yet submitted"
        ));
    }
    if unresolved > 0 {
        parts.push(format!("{unresolved} ACTION_SUBMITTED left unreconciled"));
    }
    let held = parts.is_empty();
    let explanation = if held {
        let mut states: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &f.effects {
            *states.entry(e.state.as_str()).or_default() += 1;
        }
        let states: Vec<String> = states
            .into_iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect();
        format!(
            "the journal ({}) agrees with the ledger ({} effect(s))",
            if states.is_empty() {
                "no side effect".to_owned()
            } else {
                states.join(", ")
            },
            f.ledger.len()
        )
    } else {
        parts.join("; ")
    };
    verdict(Invariant::AmbiguityVisible, held, explanation)
}
