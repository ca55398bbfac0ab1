//! `browser-fault checkpoint …`, the checkpoint protocol for an agent in any language, proven
//! on an agent in bash (`tests/agents/checkpoint_cli.sh`) run as a command: its checkpoints
//! reach the journal, its fault point is where the trial strikes, its restart reads the
//! record back and is refused a skipped step (exit status 3), and its claim is read. Outside
//! an agent command, or misused, the command says so with its exit status.

use browser_fault::prelude::*;
use browser_fault::trial::{self, TrialSettings};
use browser_fault::worker::WorkerResult;
use libtest_mimic::{Failed, Trial as Test};

const CLI: &str = env!("CARGO_BIN_EXE_browser-fault");

#[browser_fault(
    command = "bash tests/agents/checkpoint_cli.sh",
    at = "after_target_verified",
    effects = []
)]
fn bash_agent(agent: AgentCommand) -> AgentCommand {
    agent.env("BROWSER_FAULT_CLI", CLI)
}

fn main() {
    browser_fault::runner::enter_worker_role_if_asked();
    let args = libtest_mimic::Arguments::from_args();
    let tests = vec![
        Test::test(
            "a_bash_agent_checkpoints_through_the_command",
            bash_agent_trial,
        ),
        Test::test("the_command_names_its_misuse", misuse),
    ];
    libtest_mimic::run(&args, tests).exit();
}

fn bash_agent_trial() -> Result<(), Failed> {
    let scenario = trial::scenarios()
        .into_iter()
        .find(|s| s.name == "bash_agent")
        .ok_or("no scenario bash_agent")?;
    let trial = trial::expand(scenario)
        .into_iter()
        .find(|t| t.name() == "bash_agent::after_target_verified")
        .ok_or("no trial bash_agent::after_target_verified")?;
    let mut settings = TrialSettings::from_env();
    settings.snapshot_dir = None;
    let runtime = tokio::runtime::Runtime::new()?;
    let report = runtime.block_on(trial::run_trial(&trial, &settings))?;
    let e = &report.evidence;
    let shown = report.evidence_path.display();
    let first = e.workers.first().ok_or("no worker")?;
    let last = e.workers.last().ok_or("no worker")?;
    if !e.fault.struck || first.struck.map(|p| p.as_str()) != Some("after_target_verified") {
        return Err(
            format!("the fault did not strike at the agent's mark; evidence: {shown}").into(),
        );
    }
    let trace: Vec<(String, u32)> = e
        .checkpoint_trace
        .iter()
        .map(|t| (t.to.as_str().to_owned(), t.incarnation))
        .collect();
    if trace
        != [
            ("INTENT_RECORDED".to_owned(), 1),
            ("TARGET_VERIFIED".to_owned(), 1),
        ]
    {
        return Err(format!("the journal holds {trace:?}; evidence: {shown}").into());
    }
    let checked: Vec<&str> = first
        .verified
        .iter()
        .flat_map(|v| v.checked.iter().map(|c| c.as_str()))
        .collect();
    if checked != ["account", "tenant", "object"] {
        return Err(format!("its checks read {checked:?}; evidence: {shown}").into());
    }
    if last.result
        != Some(WorkerResult::Err(FailureKind::SafeStop(
            SafeStop::StaleTarget,
        )))
    {
        return Err(format!("its restart ended {:?}; evidence: {shown}", last.result).into());
    }
    for line in [
        "agent: restart: found TARGET_VERIFIED",
        "agent: skipped step: exit status 3",
    ] {
        if !last.log_tail.contains(line) {
            return Err(format!("its restart's log lacks `{line}`; evidence: {shown}").into());
        }
    }
    Ok(())
}

fn misuse() -> Result<(), Failed> {
    let status = |args: &[&str]| -> Result<Option<i32>, Failed> {
        let out = std::process::Command::new(CLI)
            .args(args)
            .env_remove("BROWSER_FAULT_SOCKET")
            .output()?;
        Ok(out.status.code())
    };
    // Outside an agent command: the worker cannot be reached.
    assert_eq!(status(&["checkpoint", "profile"])?, Some(1));
    // Usage errors.
    assert_eq!(status(&["checkpoint", "teleport"])?, Some(2));
    assert_eq!(status(&["checkpoint", "intent"])?, Some(2));
    assert_eq!(status(&["claim", "done"])?, Some(2));
    assert_eq!(status(&["claim", "safe_stop"])?, Some(2));
    // A claim needs no worker: it is a line on the agent's output.
    let out = std::process::Command::new(CLI)
        .args(["claim", "safe_stop", "wrong_account"])
        .output()?;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"claim":"safe_stop","reason":"wrong_account"}"#
    );
    Ok(())
}
