use browser_fault::browser_fault;
use browser_fault::worker::Worker;

#[browser_fault]
async fn send_message(_w: &mut Worker) -> Result<(), String> {
    Ok(())
}

fn main() {}
