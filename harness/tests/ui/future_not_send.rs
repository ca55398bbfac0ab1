use browser_fault::browser_fault;
use browser_fault::worker::{Outcome, TaskResult, Worker};

use std::rc::Rc;

async fn step() {}

#[browser_fault]
async fn send_message(_w: &mut Worker) -> TaskResult {
    let local = Rc::new(1);
    step().await;
    drop(local);
    Ok(Outcome::Completed)
}

fn main() {}
