use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult};

#[browser_fault]
async fn send_message() -> TaskResult {
    Ok(Outcome::Completed)
}

fn main() {}
