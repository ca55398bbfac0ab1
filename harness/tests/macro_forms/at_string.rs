//! `at` as one boundary name.

use browser_fault::browser_fault;
use browser_fault::plan::Boundary;
use browser_fault::worker::{Outcome, TaskResult, Worker};

#[browser_fault(at = "after_click")]
async fn send_message(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

fn the_macro_registers_what_it_was_given() {
    let all = browser_fault::trial::scenarios();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].name, "send_message");
    assert_eq!(all[0].boundaries, [Boundary::AfterClick]);
}

/// A `harness = false` target, so that the scenarios above are only registered (`cfg(test)`
/// would make them a `#[test]` that runs their trials), run as one named test.
fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let check = libtest_mimic::Trial::test("the_macro_registers_what_it_was_given", || {
        the_macro_registers_what_it_was_given();
        Ok(())
    });
    libtest_mimic::run(&args, vec![check]).exit();
}
