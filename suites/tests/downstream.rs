//! The downstream example crate (`examples/downstream/`), built and run as a user would:
//! its own `cargo test`, its own Cargo.lock, browser-fault by path as its only
//! dev-dependency. Its trials list under their stable names, its careful agent passes, and
//! its faulty agent fails with a message naming the invariant, the boundary and the evidence.
//!
//! The inner cargo builds into the workspace's own target folder (`CARGO_TARGET_DIR`, else
//! `target/`), so it reuses every dependency the workspace already built (the example's
//! Cargo.toml repeats the workspace's dev profile for that): about 4 crates to compile
//! instead of the whole tree. The outer cargo holds no lock on that folder while its test
//! binaries run, so the inner one never waits. It runs `--locked`: a change to browser-fault's dependencies needs the example's lock
//! refreshed (`cargo update --manifest-path examples/downstream/Cargo.toml --workspace`),
//! and a change to the evidence its snapshots (`INSTA_UPDATE=always cargo test
//! --manifest-path examples/downstream/Cargo.toml -- send_hello`, then read the diff).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, PoisonError};

use browser_fault::runner::ExitCode;

/// The trials of `tests/agent.rs`, in the order `--list` gives them.
const TRIALS: &[&str] = &[
    "send_hello::after_click::landed",
    "send_hello::after_click::lost",
    "send_hello::after_click::live_request_lost",
    "send_hello::after_click::live_response_lost",
    "send_hello::after_click::live_slow_response",
    "send_hello::after_click::late_landing",
    "send_hello::after_click::live_look_alike",
    "send_hello::stale_profile_restore::other_account",
    "send_hello::stale_profile_restore::older_generation",
    "send_hello_unprobed::stale_profile_restore::other_account",
    "send_hello_unprobed::stale_profile_restore::older_generation",
];

/// The faulty agent's trial that must fail.
const FAULTY: &str = "send_hello_unprobed::stale_profile_restore::other_account";

/// One inner cargo at a time: the tests of this file share one target folder, and the
/// trials of two inner runs at once would only slow each other down.
static INNER_CARGO: Mutex<()> = Mutex::new(());

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("suites/ is inside the workspace")
}

/// The target folder the inner cargo shares with the workspace.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

/// `cargo test --test agent -- <args>` in the downstream crate.
fn cargo_test_agent(args: &[&str]) -> Output {
    cargo_test_agent_with(args, &[])
}

/// [`cargo_test_agent`] with more environment variables.
fn cargo_test_agent_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let _one_at_a_time = INNER_CARGO.lock().unwrap_or_else(PoisonError::into_inner);
    let target = target_dir();
    let manifest = workspace().join("examples/downstream/Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .arg("test")
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["--locked", "--test", "agent", "--"])
        .args(args)
        .env("CARGO_TARGET_DIR", &target)
        // Evidence lands in the target folder's `browser-fault/` (the default a user gets);
        // snapshots in the crate's own folder.
        .env_remove("BROWSER_FAULT_OUT")
        .env_remove("BROWSER_FAULT_SNAPSHOTS")
        .envs(env.iter().copied())
        .output()
        .expect("failed to start cargo");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("--locked"),
        "examples/downstream/Cargo.lock is out of date: run `cargo update --manifest-path \
         examples/downstream/Cargo.toml --workspace` and commit it\n{stderr}"
    );
    eprintln!(
        "--- cargo test --test agent -- {} (exit {:?})\n{}{}",
        args.join(" "),
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn lists_the_trials_under_their_stable_names() {
    let output = cargo_test_agent(&["--list"]);
    assert!(output.status.success(), "`--list` failed");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let listed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .collect();
    assert_eq!(listed, TRIALS);
}

#[test]
fn a_missing_browser_is_said_once_with_its_fix_and_its_own_exit_code() {
    let output = cargo_test_agent_with(
        &["send_hello::after_click"],
        &[("BROWSER_FAULT_CHROMEDRIVER", "/nonexistent/chromedriver")],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(ExitCode::NoBrowser.code()),
        "ExitCode::NoBrowser"
    );
    assert_eq!(
        stderr.matches("no trial can run").count(),
        1,
        "said once, not once per trial"
    );
    assert!(
        stderr.contains("BROWSER_FAULT_CHROMEDRIVER"),
        "the message names the fix"
    );
}

#[test]
fn the_careful_agent_passes_every_trial() {
    let output = cargo_test_agent(&["send_hello::"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the careful agent failed (a changed snapshot? see this file's docs)"
    );
    // Counted from the list above, so a new variant cannot leave this number behind.
    let careful = TRIALS
        .iter()
        .filter(|t| t.starts_with("send_hello::"))
        .count();
    assert!(
        stdout.contains(&format!("test result: ok. {careful} passed; 0 failed")),
        "expected the careful agent's {careful} trials to run and pass"
    );
}

#[test]
fn the_faulty_agent_fails_naming_invariant_boundary_and_evidence() {
    let output = cargo_test_agent(&[FAULTY, "--exact"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(ExitCode::TrialFailed.code()),
        "the faulty agent must fail"
    );
    assert!(stdout.contains("test result: FAILED. 0 passed; 1 failed"));
    let failure = format!("trial {FAULTY} failed at boundary `stale_profile_restore`:");
    assert!(stdout.contains(&failure), "no failure message for {FAULTY}");
    assert!(stdout.contains("invariant `no_wrong_account` broke"));
    let evidence = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("evidence: "))
        .expect("the failure names its evidence");
    let expected = target_dir()
        .join("browser-fault/evidence")
        .join(FAULTY.replace("::", "__"))
        .join("evidence.json");
    assert_eq!(
        Path::new(evidence),
        expected,
        "evidence at an unexpected place"
    );
    assert!(
        Path::new(evidence).is_file(),
        "the evidence file {evidence} does not exist"
    );
}

#[test]
fn a_first_run_passes_with_its_snapshots_pending_and_fails_under_ci() {
    // A user's first run: no snapshot exists yet for the trial.
    let snapshots = tempfile::tempdir().expect("a temporary snapshot folder");
    let folder = snapshots.path().to_str().expect("a UTF-8 temporary path");
    let trial = "send_hello::stale_profile_restore::older_generation";
    let pending = snapshots
        .path()
        .join(format!("{}.snap.new", trial.replace("::", "__")));

    let first = cargo_test_agent_with(
        &[trial, "--exact"],
        &[("BROWSER_FAULT_SNAPSHOTS", folder), ("CI", "")],
    );
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(
        first.status.success(),
        "a first run outside CI passes on its verdicts"
    );
    assert!(
        String::from_utf8_lossy(&first.stdout).contains("test result: ok. 1 passed; 0 failed"),
        "the trial ran and passed"
    );
    assert!(
        stderr.contains("browser-fault: 1 new snapshot(s) written for review")
            && stderr.contains("cargo install cargo-insta"),
        "one summary line says what to review and how"
    );
    assert!(pending.is_file(), "{} was written", pending.display());
    assert!(
        !pending.with_extension("").exists(),
        "nothing is accepted without review"
    );

    // The same run under CI: the unreviewed snapshot fails it, as insta does, and the
    // `.snap.new` the first run left does not count as this run's.
    let in_ci = cargo_test_agent_with(
        &[trial, "--exact"],
        &[("BROWSER_FAULT_SNAPSHOTS", folder), ("CI", "true")],
    );
    assert_eq!(
        in_ci.status.code(),
        Some(ExitCode::TrialFailed.code()),
        "a new snapshot fails under CI=true"
    );
    let stdout = String::from_utf8_lossy(&in_ci.stdout);
    assert!(stdout.contains(&format!("new snapshot of {trial}")));
    assert!(!String::from_utf8_lossy(&in_ci.stderr).contains("written for review"));
}
