use browser_fault::browser_fault;
use browser_fault::worker::Worker;

#[browser_fault(
    at = ["after_click", "after_clik"],
    timout = "45s",
    crash = "kill",
    crash = "abort",
    timeout = "0s",
)]
fn send_message(_w: &Worker) {}

fn main() {}
