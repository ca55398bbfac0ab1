//! The careful reference agent passes every trial: all eight boundaries with their variants,
//! and every hazard.

use browser_fault::prelude::*;

#[browser_fault(at = "all", hazards = "all", timeout = "60s")]
async fn send_message(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

browser_fault::main!();
