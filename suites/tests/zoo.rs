//! The bug zoo: each faulty agent must be caught by the intended invariant at the intended
//! boundary, and by nothing else. A faulty agent that passes is a bug in the harness.

use browser_fault::oracle::Invariant;
use browser_fault::prelude::*;
use browser_fault::trial::{self, TrialSettings};
use libtest_mimic::{Arguments, Failed, Trial as Test};

#[browser_fault(at = "after_click")]
async fn blind_retry(w: &mut Worker) -> TaskResult {
    browser_fault_suites::blind_retry(w).await
}

#[browser_fault(at = "stale_profile_restore")]
async fn trusting(w: &mut Worker) -> TaskResult {
    browser_fault_suites::trusting(w).await
}

#[browser_fault(at = "after_profile_created")]
async fn leaky(w: &mut Worker) -> TaskResult {
    browser_fault_suites::leaky(w).await
}

#[browser_fault(at = "after_login")]
async fn chatty(w: &mut Worker) -> TaskResult {
    browser_fault_suites::chatty(w).await
}

/// (trial, the one invariant that must break)
const CASES: &[(&str, Invariant)] = &[
    ("blind_retry::after_click::landed", Invariant::NoDuplicate),
    (
        "trusting::stale_profile_restore::other_account",
        Invariant::NoWrongAccount,
    ),
    ("leaky::after_profile_created", Invariant::NoLeak),
    ("chatty::after_login", Invariant::NoSecretInEvidence),
];

fn main() {
    browser_fault::runner::enter_worker_role_if_asked();
    let args = Arguments::from_args();
    let mut settings = TrialSettings::from_env();
    settings.snapshot_dir = None;
    let all: Vec<trial::Trial> = browser_fault::registry::scenarios()
        .into_iter()
        .flat_map(trial::expand)
        .collect();
    let tests = CASES
        .iter()
        .map(|&(name, invariant)| {
            let trial = all.iter().find(|t| t.name() == name).copied();
            let settings = settings.clone();
            Test::test(format!("{name}::caught_by_{invariant}"), move || {
                let trial = trial.ok_or_else(|| Failed::from(format!("no trial {name}")))?;
                let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
                let report = runtime
                    .block_on(trial::run_trial(&trial, &settings))
                    .map_err(|e| e.to_string())?;
                let broken: Vec<Invariant> =
                    report.evidence.broken().map(|v| v.invariant).collect();
                if broken == [invariant] {
                    Ok(())
                } else {
                    Err(format!(
                        "expected only `{invariant}` to break, got {broken:?}; evidence: {}",
                        report.evidence_path.display()
                    )
                    .into())
                }
            })
        })
        .collect();
    libtest_mimic::run(&args, tests).exit();
}
