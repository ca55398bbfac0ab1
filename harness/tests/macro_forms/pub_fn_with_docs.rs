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

mod support;

fn main() {
    support::run(the_macro_registers_what_it_was_given)
}
