use browser_fault::browser_fault;
use browser_fault::worker::AgentCommand;

#[browser_fault(command = "python3 'agent.py")]
fn agent(agent: AgentCommand) -> AgentCommand {
    agent
}

#[browser_fault(command = "  ")]
fn empty(agent: AgentCommand) -> AgentCommand {
    agent
}

#[browser_fault(command = "python3 agent.py > out.txt")]
fn shell(agent: AgentCommand) -> AgentCommand {
    agent
}

fn main() {}
