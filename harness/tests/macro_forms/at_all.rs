//! `at = "all"`, and no arguments at all: every boundary and every default.

use browser_fault::browser_fault;
use browser_fault::plan::{Boundary, CrashMode};
use browser_fault::trial::Scenario;
use browser_fault::worker::{Outcome, TaskResult, Worker};

#[browser_fault(at = "all")]
async fn explicit(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

#[browser_fault]
async fn defaults(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

fn the_macro_registers_what_it_was_given() {
    let all = browser_fault::trial::scenarios();
    let names: Vec<&str> = all.iter().map(|s| s.name).collect();
    assert_eq!(names, ["defaults", "explicit"]);
    for s in &all {
        assert_eq!(s.boundaries, Boundary::ALL);
        assert!(s.hazards.is_empty());
        assert_eq!(s.crash_mode, CrashMode::Kill);
        assert_eq!(s.timeout, Scenario::DEFAULT_TIMEOUT);
        assert_eq!(s.account, None);
        // the test target names the crate; a scenario at the root has the crate's path.
        assert!(!s.module_path.contains("::"), "{}", s.module_path);
        assert!(s.file.ends_with("at_all.rs"), "{}", s.file);
    }
    assert_eq!(all[0].line, 14);
    assert_eq!(all[1].line, 9);
}

mod support;

fn main() {
    support::run(the_macro_registers_what_it_was_given)
}
