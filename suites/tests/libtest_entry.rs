//! A scenario in an ordinary test target (libtest's own harness, no `harness = false`):
//! `#[browser_fault]` emits one `#[test]`, `send_hello_libtest::browser_fault_trials`, that
//! runs every trial of the scenario one after the other and fails listing each broken trial.
//! Its trial runs in the default `kill` crash mode, so the workers re-enter this very test
//! binary (that one test, `--exact`) in worker role: the trial passing is the proof.

use std::process::Command;

use browser_fault::plan::CrashMode;
use browser_fault::prelude::*;

#[browser_fault(at = "after_remote_effect", effects = "42")]
async fn send_hello_libtest(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

#[test]
fn the_scenario_is_one_listed_test_in_kill_mode() {
    let scenario = browser_fault::trial::find_scenario(module_path!(), "send_hello_libtest")
        .expect("the attribute registers the scenario");
    assert_eq!(scenario.crash_mode, CrashMode::Kill);

    let list = Command::new(std::env::current_exe().unwrap())
        .arg("--list")
        .output()
        .unwrap();
    assert!(list.status.success());
    let stdout = String::from_utf8_lossy(&list.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l == "send_hello_libtest::browser_fault_trials: test"),
        "the scenario's test is not listed:\n{stdout}"
    );
}
