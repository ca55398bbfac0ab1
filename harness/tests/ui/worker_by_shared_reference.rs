use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult, Worker};

#[browser_fault]
async fn send_message(_w: &Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

fn main() {}
