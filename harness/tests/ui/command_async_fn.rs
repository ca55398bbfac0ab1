use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult, Worker};

// With `command`, the fn only adjusts the command: it is not an async scenario.
#[browser_fault(command = "python3 agent.py")]
async fn agent(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

fn main() {}
