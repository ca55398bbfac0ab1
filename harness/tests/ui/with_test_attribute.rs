use browser_fault::browser_fault;

#[browser_fault]
#[test]
async fn send_message(
    _w: &mut browser_fault::worker::Worker,
) -> browser_fault::worker::TaskResult {
    Ok(browser_fault::worker::Outcome::Completed)
}

fn main() {}
