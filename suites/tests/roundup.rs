//! The full matrix on a real third-party web application: the Roundup issue tracker,
//! installed from PyPI and started by this suite on 127.0.0.1 (see `apps/roundup/`), and
//! the network faults on a second tracker served over HTTPS under a real-looking name,
//! driven through its `Site` adapter (`browser_fault_suites::roundup`), written against the
//! public API only. The fault proxy stands between the browsers and the tracker.
//!
//! Every trial of the careful agent that can run on Roundup must pass with its fault struck;
//! the blind-retry, trusting, credulous and password-pasting agents must be caught, each by
//! the intended invariant only.
//! Roundup shows no interstitials of its own: the fault proxy stands its own before the
//! tracker's pages. What Roundup cannot show (tenants, an object to swap) is listed as
//! ignored with its reason. Two trials run at a time, each on a tracker of its own
//! (`roundup::TRIALS_AT_ONCE`): a trial's ledger, rotated password and moved sessions are
//! its alone.

use browser_fault::oracle::Invariant;
use browser_fault::prelude::*;
use browser_fault::trial::{self, TrialSettings};
use browser_fault_suites::roundup;
use libtest_mimic::Trial as Test;

#[browser_fault(
    at = "all",
    hazards = [
        "expired_session",
        "account_switch",
        "browser_version_changed",
        "credential_rotated",
        "login_interstitial",
        "consent_interstitial",
    ],
    site = roundup::roundup_site,
    effects = "Printer on fire",
    timeout = "120s"
)]
async fn file_issue(w: &mut Worker) -> TaskResult {
    roundup::file_issue(w).await
}

#[browser_fault(
    at = "after_click",
    site = roundup::roundup_site,
    effects = "Printer on fire",
    timeout = "120s"
)]
async fn file_issue_blind_retry(w: &mut Worker) -> TaskResult {
    roundup::file_issue_blind_retry(w).await
}

#[browser_fault(
    at = "after_click",
    site = roundup::roundup_site,
    effects = "Printer on fire",
    timeout = "120s"
)]
async fn file_issue_absent_means_failed(w: &mut Worker) -> TaskResult {
    roundup::file_issue_absent_means_failed(w).await
}

#[browser_fault(
    at = "after_target_verified",
    site = roundup::roundup_site,
    effects = "Printer on fire",
    timeout = "120s"
)]
async fn file_issue_with_password(w: &mut Worker) -> TaskResult {
    roundup::file_issue_with_password(w).await
}

#[browser_fault(
    at = "after_click",
    site = roundup::roundup_site,
    effects = "Printer on fire",
    timeout = "120s"
)]
async fn file_issue_credulous(w: &mut Worker) -> TaskResult {
    roundup::file_issue_credulous(w).await
}

#[browser_fault(
    at = ["after_target_verified", "after_login"],
    hazards = ["account_switch"],
    site = roundup::roundup_site,
    effects = "Printer on fire",
    timeout = "120s"
)]
async fn file_issue_trusting(w: &mut Worker) -> TaskResult {
    roundup::file_issue_trusting(w).await
}

#[browser_fault(
    at = "after_login",
    hazards = ["credential_rotated"],
    site = roundup::roundup_site,
    effects = "Printer on fire",
    timeout = "30s"
)]
async fn file_issue_stale_credential(w: &mut Worker) -> TaskResult {
    roundup::file_issue_stale_credential(w).await
}

/// Waves through the fault proxy's interstitials (Roundup shows none of its own).
#[browser_fault(
    at = "after_profile_created",
    hazards = ["login_interstitial", "consent_interstitial"],
    site = roundup::roundup_site,
    effects = "Printer on fire",
    timeout = "120s"
)]
async fn file_issue_click_through(w: &mut Worker) -> TaskResult {
    roundup::file_issue_click_through(w).await
}

/// Stops on every restart without opening a page: it never meets the interstitial.
#[browser_fault(
    at = "after_profile_created",
    hazards = ["login_interstitial"],
    site = roundup::roundup_site,
    effects = "Printer on fire",
    timeout = "120s"
)]
async fn file_issue_stops_unseen(w: &mut Worker) -> TaskResult {
    roundup::file_issue_stops_unseen(w).await
}

/// The careful agent on the tracker served over HTTPS (`https://tracker.example.test`, a TLS
/// front on 127.0.0.1): the fault proxy intercepts the TLS, so every network fault strikes
/// as over plain HTTP.
#[browser_fault(
    at = ["after_login", "after_click"],
    hazards = ["expired_session"],
    site = roundup::roundup_https_site,
    effects = "Printer on fire",
    timeout = "120s"
)]
async fn file_issue_https(w: &mut Worker) -> TaskResult {
    roundup::file_issue(w).await
}

/// The faulty agents' trials, and exactly the invariants each must break.
const CAUGHT: &[(&str, &[Invariant])] = &[
    (
        "file_issue_with_password::after_target_verified",
        &[Invariant::NoSecretSent],
    ),
    (
        "file_issue_blind_retry::after_click::landed",
        &[Invariant::NoDuplicate],
    ),
    (
        "file_issue_absent_means_failed::after_click::late_landing",
        &[Invariant::NoDuplicate],
    ),
    ("file_issue_absent_means_failed::after_click::lost", &[]),
    (
        "file_issue_credulous::after_click::live_look_alike",
        &[Invariant::AmbiguityVisible, Invariant::ClaimsMatchFacts],
    ),
    // Where its own submission lands, the notice it takes is its own.
    ("file_issue_credulous::after_click::landed", &[]),
    (
        "file_issue_trusting::after_target_verified::account_switched",
        &[Invariant::NoWrongAccount],
    ),
    (
        "file_issue_trusting::hazard::account_switch",
        &[Invariant::NoWrongAccount],
    ),
    (
        "file_issue_trusting::after_login::live_account_switch",
        &[Invariant::NoWrongAccount],
    ),
    (
        "file_issue_stale_credential::hazard::credential_rotated",
        &[Invariant::RecoverOrStopSafely],
    ),
    (
        "file_issue_click_through::hazard::login_interstitial",
        &[Invariant::RecoverOrStopSafely],
    ),
    (
        "file_issue_click_through::hazard::consent_interstitial",
        &[Invariant::RecoverOrStopSafely],
    ),
];

/// A trial whose recovery never meets the fault proxy's interstitial: not struck, not passed.
const UNMET: &str = "file_issue_stops_unseen::hazard::login_interstitial";

fn never_met(trial: &trial::Trial, settings: &TrialSettings) -> Result<(), libtest_mimic::Failed> {
    let report = browser_fault_suites::run_blocking(trial, settings)?;
    let fault = &report.evidence.fault;
    let instead = fault.instead.as_deref().unwrap_or("");
    if report.passed() || fault.struck || !instead.contains("never met the fault proxy's") {
        return Err(format!(
            "expected a trial whose fault never struck (the interstitial never met), got passed={} struck={} instead={instead:?}; evidence: {}",
            report.passed(),
            fault.struck,
            report.evidence_path.display()
        )
        .into());
    }
    Ok(())
}

fn main() {
    browser_fault::runner::enter_worker_role_if_asked();
    let (mut args, filters) = browser_fault::runner::arguments(std::env::args());
    // A tracker per trial at a time: each trial holds one alone while it runs (its ledger
    // judged per trial, its changes undone by the next trial's reset on it).
    let asked = args.test_threads.unwrap_or(roundup::TRIALS_AT_ONCE);
    args.test_threads = Some(asked.clamp(1, roundup::TRIALS_AT_ONCE));
    let mut settings = TrialSettings::from_env();
    settings.snapshot_dir = None;
    let all: Vec<trial::Trial> = browser_fault::trial::scenarios()
        .into_iter()
        .filter(|s| s.name.starts_with("file_issue"))
        .flat_map(trial::expand)
        .collect();
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f));
    let mut tests = Vec::new();
    for t in all.iter().copied().filter(|t| wanted(&t.name())) {
        let name = t.name();
        if name == UNMET {
            let settings = settings.clone();
            // It judges the harness's strike proof, not an agent's recovery: named so.
            tests.push(Test::test(
                format!("{name}::harness_says_unstruck_when_never_met"),
                move || never_met(&t, &settings),
            ));
            continue;
        }
        let careful = ["file_issue", "file_issue_https"].contains(&t.scenario.name);
        let expected: Option<&'static [Invariant]> = if careful {
            Some(&[])
        } else {
            CAUGHT.iter().find(|(n, _)| *n == name).map(|(_, i)| *i)
        };
        let Some(expected) = expected else { continue };
        if let Some(why) = t.cannot_run() {
            eprintln!("roundup: {name} is ignored: {why}");
            tests.push(Test::test(name, || Ok(())).with_ignored_flag(true));
            continue;
        }
        let settings = settings.clone();
        tests.push(Test::test(name.clone(), move || {
            browser_fault_suites::run_expecting(&t, &settings, expected)
        }));
    }
    libtest_mimic::run(&args, tests).exit();
}
