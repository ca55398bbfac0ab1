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

/// A `harness = false` target, so that the scenarios above are only registered (`cfg(test)`
/// would make them a `#[test]` that runs their trials), run as one named test.
fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let check = libtest_mimic::Trial::test("the_macro_registers_what_it_was_given", || {
        the_macro_registers_what_it_was_given();
        Ok(())
    });
    libtest_mimic::run(&args, vec![check]).exit();
}
