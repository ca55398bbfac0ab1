use browser_fault::browser_fault;
use browser_fault::worker::AgentCommand;

// The fn takes the command and returns it: a parameter or a return of another type is
// reported on its own tokens.
#[browser_fault(command = "node agent.mjs")]
fn takes_a_string(agent: String) -> AgentCommand {
    AgentCommand::new(agent)
}

#[browser_fault(command = "node agent.mjs")]
fn returns_unit(agent: AgentCommand) {
    let _ = agent;
}

fn main() {}
