//! A Node agent (playwright-core over CDP, `examples/node-agent`) run as a command with
//! `#[browser_fault(command = ...)]`: the careful version passes every boundary and hazard
//! with every fault struck; each faulty version is caught by the intended invariant and by
//! nothing else.
//!
//! The agent's packages are installed first, with `npm ci` from the example's lockfile (once:
//! a stamp keeps them).

use browser_fault::oracle::Invariant;
use browser_fault::prelude::*;
use browser_fault::trial::{Trial, TrialSettings};
use browser_fault_suites::command_agent::{Suite, careful_and_caught, filtered, start};
use browser_fault_suites::node_agent::ensure_node_modules;
use libtest_mimic::{Failed, Trial as Test};

/// The command runs from this crate's folder; the fn may adjust it (here, it needs nothing).
#[browser_fault(
    command = "node ../examples/node-agent/agent.mjs careful",
    at = "all",
    hazards = "all",
    effects = "42",
    timeout = "60s"
)]
fn node_careful(agent: AgentCommand) -> AgentCommand {
    agent
}

/// Its restart sends again at once, without reading the thread.
#[browser_fault(
    command = "node ../examples/node-agent/agent.mjs blind_retry",
    at = "after_click",
    effects = "42",
    timeout = "60s"
)]
fn node_blind_retry(agent: AgentCommand) -> AgentCommand {
    agent
}

/// It trusts the profile's session to be its own account.
#[browser_fault(
    command = "node ../examples/node-agent/agent.mjs wrong_account",
    at = "after_login",
    effects = "42",
    timeout = "60s"
)]
fn node_wrong_account(agent: AgentCommand) -> AgentCommand {
    agent
}

/// Careful, but it reports no checkpoint and marks no boundary (its state file is its only
/// record): the ledger's verdicts judge it, and what only the journal could tell is not
/// judged. Its trial crashes worker 1 as its profile is made; the recovery does the work.
#[browser_fault(
    command = "node ../examples/node-agent/agent.mjs quiet",
    at = "after_profile_created",
    effects = "42",
    timeout = "60s"
)]
fn node_quiet(agent: AgentCommand) -> AgentCommand {
    agent
}

/// The faulty versions' trials, and exactly what must break in each.
const CAUGHT: &[(&str, &[Invariant])] = &[
    (
        "node_blind_retry::after_click::landed",
        &[Invariant::NoDuplicate],
    ),
    (
        "node_wrong_account::after_login::live_account_switch",
        &[Invariant::NoWrongAccount],
    ),
];

fn main() {
    let Suite {
        args,
        filters,
        settings,
        all,
    } = start("the Node agent's packages", ensure_node_modules);
    let mut tests = careful_and_caught(&all, &settings, "node_careful", CAUGHT);
    let quiet = all
        .iter()
        .find(|t| t.name() == "node_quiet::after_profile_created")
        .copied();
    tests.push(Test::test(
        "node_quiet::after_profile_created::struck_before_agent_code::recovery_passes_with_ambiguity_not_judged",
        move || quiet_not_judged(quiet, &settings),
    ));
    libtest_mimic::run(&args, filtered(tests, &filters)).exit();
}

/// The quiet agent's trial: its fault struck, nothing broke, its claim was judged on the
/// ledger alone, and `ambiguity_visible` alone says it was not judged, and why.
fn quiet_not_judged(trial: Option<Trial>, settings: &TrialSettings) -> Result<(), Failed> {
    let trial = trial.ok_or("no trial node_quiet::after_profile_created")?;
    let report = browser_fault_suites::run_blocking(&trial, settings)?;
    let e = &report.evidence;
    let shown = report.evidence_path.display();
    if !e.fault.struck || !report.passed() || e.ledger.effects != 1 {
        let why = report.failure_message().unwrap_or_default();
        return Err(format!(
            "it did not pass with its fault struck and one effect: {why}; evidence: {shown}"
        )
        .into());
    }
    let not_judged: Vec<_> = e.verdicts.iter().filter(|v| !v.judged).collect();
    match not_judged.as_slice() {
        [v] if v.invariant == Invariant::AmbiguityVisible
            && v.explanation
                .starts_with("not judged: the agent reported no checkpoint") => {}
        other => {
            return Err(format!(
                "expected only ambiguity_visible not judged, got {other:?}; evidence: {shown}"
            )
            .into());
        }
    }
    let claims = e
        .verdicts
        .iter()
        .find(|v| v.invariant == Invariant::ClaimsMatchFacts)
        .ok_or("no claims_match_facts verdict")?;
    if !claims.explanation.contains("on the ledger alone") {
        return Err(format!("its claim: {}; evidence: {shown}", claims.explanation).into());
    }
    browser_fault_suites::struck_before_agent_code(e)
        .map_err(|why| format!("{why}; evidence: {shown}").into())
}
