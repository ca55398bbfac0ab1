use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult};

struct Agent;

impl Agent {
    #[browser_fault]
    async fn send_message(&mut self) -> TaskResult {
        Ok(Outcome::Completed)
    }
}

fn main() {}
