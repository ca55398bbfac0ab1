//! The macro's name tables (harness-macros/src/names.rs) against the runtime's: every name
//! written in the attribute must become the variant whose `as_str` is that name.

use browser_fault::browser_fault;
use browser_fault::plan::{Boundary, CrashMode, Hazard};
use browser_fault::worker::{Outcome, TaskResult, Worker};

#[browser_fault(
    at = [
        "after_profile_created",
        "after_login",
        "after_target_verified",
        "after_click",
        "after_remote_effect",
        "browser_crash",
        "stale_profile_restore",
        "concurrent_profile",
    ],
    hazards = [
        "expired_session",
        "login_interstitial",
        "consent_interstitial",
        "tenant_mismatch",
        "account_switch",
        "stale_tab",
        "browser_version_changed",
        "credential_rotated",
    ],
    crash = "abort",
)]
async fn every_name(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

#[browser_fault(hazards = "all", crash = "kill")]
async fn all_names(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

const BOUNDARIES: [&str; 8] = [
    "after_profile_created",
    "after_login",
    "after_target_verified",
    "after_click",
    "after_remote_effect",
    "browser_crash",
    "stale_profile_restore",
    "concurrent_profile",
];

const HAZARDS: [&str; 8] = [
    "expired_session",
    "login_interstitial",
    "consent_interstitial",
    "tenant_mismatch",
    "account_switch",
    "stale_tab",
    "browser_version_changed",
    "credential_rotated",
];

fn the_macro_registers_what_it_was_given() {
    let all = browser_fault::trial::scenarios();
    let (all_names, every_name) = (all[0], all[1]);

    // The names as written above, in the same order, are the runtime's names.
    let boundaries: Vec<&str> = every_name.boundaries.iter().map(|b| b.as_str()).collect();
    assert_eq!(boundaries, BOUNDARIES);
    let hazards: Vec<&str> = every_name.hazards.iter().map(|h| h.as_str()).collect();
    assert_eq!(hazards, HAZARDS);
    assert_eq!(every_name.crash_mode.as_str(), "abort");

    // ... and every name the runtime has, in its order.
    let runtime: Vec<&str> = Boundary::ALL.iter().map(|b| b.as_str()).collect();
    assert_eq!(runtime, BOUNDARIES);
    let runtime: Vec<&str> = Hazard::ALL.iter().map(|h| h.as_str()).collect();
    assert_eq!(runtime, HAZARDS);

    assert_eq!(all_names.crash_mode, CrashMode::Kill);
    assert_eq!(all_names.hazards, Hazard::ALL);
    assert_eq!(all_names.boundaries, Boundary::ALL);
}

mod support;

fn main() {
    support::run(the_macro_registers_what_it_was_given)
}
