use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult, Worker};

fn my_site() -> &'static str {
    "http://127.0.0.1:8080"
}

#[browser_fault(site = my_site)]
async fn send_message(_w: &mut Worker) -> TaskResult {
    Ok(Outcome::Completed)
}

fn main() {}
