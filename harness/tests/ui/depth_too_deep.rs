use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult, Worker};

#[browser_fault(at = "after_click", depth = 3)]
async fn send_message(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

fn main() {}
