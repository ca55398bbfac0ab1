use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult, Worker};

#[browser_fault]
async fn send_message(_w: &mut Worker) -> TaskResult
where
    Worker: Send,
{
    Ok(Outcome::Completed)
}

fn main() {}
