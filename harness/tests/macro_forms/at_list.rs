//! `at` as a list: registered in lifecycle order, whatever the order written.

use browser_fault::browser_fault;
use browser_fault::plan::Boundary;
use browser_fault::worker::{Outcome, TaskResult, Worker};

#[browser_fault(at = ["browser_crash", "after_click"])]
async fn send_message(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

fn the_macro_registers_what_it_was_given() {
    let all = browser_fault::trial::scenarios();
    assert_eq!(all.len(), 1);
    assert_eq!(
        all[0].boundaries,
        [Boundary::AfterClick, Boundary::BrowserCrash]
    );
}

mod support;

fn main() {
    support::run(the_macro_registers_what_it_was_given)
}
