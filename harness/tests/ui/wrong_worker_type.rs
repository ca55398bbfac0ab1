use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult};

#[browser_fault]
async fn send_message(_w: &mut String) -> TaskResult {
    Ok(Outcome::Completed)
}

fn main() {}
