use browser_fault::browser_fault;

#[browser_fault(at = "after_click")]
struct SendMessage;

fn main() {}
