//! `command = "..."`: a scenario that is a command, adjusted by its fn.

use browser_fault::browser_fault;
use browser_fault::worker::AgentCommand;

#[browser_fault(command = "python3 -u agent.py --name 'a b'", at = "after_click")]
fn python_agent(agent: AgentCommand) -> AgentCommand {
    agent.env("AGENT_MODE", "careful").effect("post-hello")
}

fn the_macro_registers_what_it_was_given() {
    let all = browser_fault::trial::scenarios();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].name, "python_agent");
}

mod support;

fn main() {
    support::run(the_macro_registers_what_it_was_given)
}
