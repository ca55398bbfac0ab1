//! Every option at once, reached only through `browser_fault` (as a downstream crate that
//! depends on nothing else would).

use browser_fault::browser_fault;
use browser_fault::plan::{Boundary, CrashMode, Hazard};
use browser_fault::trial::Exploration;
use browser_fault::worker::{Outcome, TaskResult, Worker};
use std::time::Duration;

#[browser_fault(
    at = ["after_click", "browser_crash"],
    site = browser_fault::site::fixture_site,
    account = "acct-test-42",
    crash = "abort",
    timeout = "45s",
    hazards = ["stale_tab", "expired_session"],
    effects = ["42", "42", "7"],
    every_step = 40,
    depth = 2,
    seeded = 8,
)]
async fn send_message(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

fn fast_site() -> browser_fault::site::SiteSpec {
    browser_fault::site::fixture_site()
}

#[browser_fault(at = "after_login", site = fast_site, timeout = "500ms", hazards = "all")]
async fn log_in(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

#[browser_fault(at = "concurrent_profile", crash = "kill", timeout = "2m", effects = [])]
async fn two_workers(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

fn the_macro_registers_what_it_was_given() {
    let all = browser_fault::trial::scenarios();
    let names: Vec<&str> = all.iter().map(|s| s.name).collect();
    assert_eq!(names, ["log_in", "send_message", "two_workers"]);

    let log_in = all[0];
    assert_eq!(log_in.timeout, Duration::from_millis(500));
    assert_eq!(log_in.hazards, Hazard::ALL);
    assert_eq!(log_in.effects, None);
    assert_eq!(log_in.intended_effects(), 1);

    let send = all[1];
    assert_eq!(
        send.boundaries,
        [Boundary::AfterClick, Boundary::BrowserCrash]
    );
    assert_eq!(send.hazards, [Hazard::ExpiredSession, Hazard::StaleTab]);
    assert_eq!(send.crash_mode, CrashMode::Abort);
    assert_eq!(send.timeout, Duration::from_secs(45));
    assert_eq!(send.account, Some("acct-test-42"));
    assert_eq!(send.effects, Some(&["42", "42", "7"][..]));
    let explore = send.explore;
    assert_eq!(
        (explore.every_step, explore.depth, explore.seeded),
        (40, 2, 8)
    );
    assert_eq!(log_in.explore, Exploration::NONE);

    let two = all[2];
    assert_eq!(two.crash_mode, CrashMode::Kill);
    assert_eq!(two.timeout, Duration::from_secs(120));
    assert_eq!(two.intended_effects(), 0);
}

mod support;

fn main() {
    support::run(the_macro_registers_what_it_was_given)
}
