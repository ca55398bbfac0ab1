//! The reference matrix on a real Selenium Grid 4: this binary starts a hub and two nodes on
//! 127.0.0.1 (`browser_fault_suites::grid`), runs every trial with its browsers on the grid
//! (the hub's URL as the WebDriver endpoint), and stops the grid when it ends.
//!
//! On a grid a killed worker's browser lives on: `after_target_verified::orphaned_session`
//! leaves it live for the recovery worker, which must take over only once the old session is
//! proven gone (the reference agent does, through `Worker::open`), and a recovery that ignores
//! it (`orphan_ignoring`) must be caught by `no_leak`, and by nothing else. Every other crash
//! trial has the harness reap the orphan at once, as a pool would, and demands what it
//! demands locally.
//!
//! With `BROWSER_FAULT_WEBDRIVER_URL` set, it uses that hub instead of starting one (CI
//! shards share one grid). Without Java (or npm for the pinned jar) the trials are listed as ignored and the reason
//! is printed; under CI (`CI=true`) that is a failure: CI must run them.

use browser_fault::oracle::Invariant;
use browser_fault::prelude::*;
use browser_fault::trial::{self, TrialSettings};
use browser_fault_suites::grid::{Grid, GridError};
use libtest_mimic::Trial as Test;

/// The reference agent's whole matrix.
#[browser_fault(at = "all", hazards = "all", effects = "42", timeout = "90s")]
async fn grid_send_message(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

/// The agent with its own WebDriver client (plain thirtyfour), on the grid through the
/// worker's endpoint, at the boundaries where a grid differs (a killed worker's browser lives
/// on there; the click and the crash go through the hub); every boundary runs locally.
#[browser_fault(
    at = ["after_login", "after_target_verified", "after_click", "browser_crash"],
    effects = "42",
    timeout = "90s"
)]
async fn grid_own_client(w: &mut Worker) -> TaskResult {
    browser_fault_suites::own_client::send_hello(w).await
}

/// The agent with its own CDP client, on the grid through the worker's CDP endpoint (the
/// session's `se:cdp`).
#[browser_fault(
    at = ["after_target_verified", "after_click", "browser_crash"],
    effects = "42",
    timeout = "90s"
)]
async fn grid_own_cdp(w: &mut Worker) -> TaskResult {
    browser_fault_suites::own_cdp::send_hello(w).await
}

/// A recovery that ignores the live orphaned session.
#[browser_fault(at = "after_target_verified", effects = "42", timeout = "90s")]
async fn grid_orphan_ignoring(w: &mut Worker) -> TaskResult {
    browser_fault_suites::orphan_ignoring(w).await
}

/// The faulty agent's trials, and exactly the invariants each must break.
const CAUGHT: &[(&str, &[Invariant])] = &[(
    "grid_orphan_ignoring::after_target_verified::orphaned_session",
    &[Invariant::NoLeak],
)];

fn main() {
    browser_fault::runner::enter_worker_role_if_asked();
    let (args, filters) = browser_fault::runner::arguments(std::env::args());
    let all: Vec<trial::Trial> = browser_fault::trial::scenarios()
        .into_iter()
        .filter(|s| s.name.starts_with("grid_"))
        .flat_map(trial::expand)
        .collect();
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f));
    let expected_of = |t: &trial::Trial| -> Option<&'static [Invariant]> {
        if matches!(
            t.scenario.name,
            "grid_send_message" | "grid_own_client" | "grid_own_cdp"
        ) {
            Some(&[])
        } else {
            let name = t.name();
            CAUGHT.iter().find(|(n, _)| *n == name).map(|(_, i)| *i)
        }
    };
    let selected: Vec<trial::Trial> = all
        .into_iter()
        .filter(|t| wanted(&t.name()) && expected_of(t).is_some())
        .collect();

    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    // A grid of the caller's (`BROWSER_FAULT_WEBDRIVER_URL`, as CI shards share one), or ours.
    let given = std::env::var("BROWSER_FAULT_WEBDRIVER_URL")
        .ok()
        .filter(|u| !u.trim().is_empty());
    let grid = if args.list || selected.is_empty() || given.is_some() {
        None
    } else {
        match Grid::start(&workspace) {
            Ok(grid) => Some(grid),
            Err(GridError::Missing(why)) if std::env::var("CI").as_deref() != Ok("true") => {
                eprintln!("grid: every trial is skipped: {why}");
                None
            }
            Err(e) => {
                eprintln!("grid: the grid could not be started: {e}");
                std::process::exit(1);
            }
        }
    };
    let url = given.or_else(|| grid.as_ref().map(|g| g.url().to_owned()));
    if let Some(url) = &url {
        eprintln!("grid: trials through the hub at {url}");
    }

    let mut settings = TrialSettings::from_env();
    settings.snapshot_dir = None;
    settings.webdriver_url = url.clone();
    let mut tests = Vec::new();
    for t in selected {
        let name = t.name();
        let Some(expected) = expected_of(&t) else {
            continue;
        };
        // What cannot run on this grid, or on no grid at all.
        let why = match &url {
            Some(url) => t.cannot_run_at(Some(url)),
            None if args.list => t.cannot_run_at(Some("http://127.0.0.1:4444")),
            None => Some("no grid here (see above)"),
        };
        if let Some(why) = why {
            eprintln!("grid: {name} is ignored: {why}");
            tests.push(Test::test(name, || Ok(())).with_ignored_flag(true));
            continue;
        }
        let settings = settings.clone();
        tests.push(Test::test(name.clone(), move || {
            browser_fault_suites::run_expecting(&t, &settings, expected)
        }));
    }
    let conclusion = libtest_mimic::run(&args, tests);
    if let Some(grid) = grid {
        grid.stop();
    }
    conclusion.exit();
}
