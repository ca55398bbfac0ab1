use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult};

#[browser_fault]
async fn send_message<W: Send>(_w: &mut W) -> TaskResult {
    Ok(Outcome::Completed)
}

fn main() {}
