//! A `pub` scenario with doc comments and other attributes: all kept on the user's fn.

#![deny(missing_docs, dead_code)]

use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult, Worker};

/// Sends a message in thread 42.
///
/// The recovery worker must not send it twice.
#[browser_fault(at = "after_click")]
#[must_use = "a scenario's result says how it ended"]
#[allow(clippy::unused_async)]
pub async fn send_message(w: &mut Worker) -> TaskResult {
    let _ = w;
    Ok(Outcome::Completed)
}

/// Also callable by hand: the fn is untouched.
pub async fn by_hand(w: &mut Worker) -> TaskResult {
    send_message(w).await
}

fn the_macro_registers_what_it_was_given() {
    assert_eq!(browser_fault::trial::scenarios().len(), 1);
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
