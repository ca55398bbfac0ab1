//! A Python agent (Selenium, `examples/python-agent`) run as a command
//! (`Worker::run_agent`): the careful version passes every boundary and hazard with every
//! fault struck; each faulty version is caught by the intended invariant and by nothing else.
//!
//! The agent's virtual environment is made first, from the example's hash-pinned
//! `requirements.txt` (once: a stamp keeps it).

use browser_fault::oracle::Invariant;
use browser_fault::prelude::*;
use browser_fault::trial::{self, Trial, TrialSettings};
use browser_fault::worker::{AgentCommand, AgentFailure, WorkerResult};
use browser_fault_suites::command_agent::{Suite, careful_and_caught, filtered, start};
use browser_fault_suites::python_agent::{agent, ensure_venv};
use libtest_mimic::{Failed, Trial as Test};

/// Written with `command`: the line runs from this crate's folder, in the environment's
/// interpreter; the agent checks its profile itself (`bf.profile()`).
#[browser_fault(
    command = "../target/python-agent-venv/bin/python -u ../examples/python-agent/agent.py --variant careful",
    at = "all",
    hazards = "all",
    effects = "42",
    timeout = "60s"
)]
fn python_careful(agent: AgentCommand) -> AgentCommand {
    agent.env("PYTHONDONTWRITEBYTECODE", "1")
}

/// Its restart sends again at once, without reading the thread.
#[browser_fault(at = "after_click", effects = "42", timeout = "60s")]
async fn python_blind_retry(w: &mut Worker) -> TaskResult {
    w.run_agent(&agent("blind_retry")).await
}

/// It trusts the profile's session to be its own account.
#[browser_fault(at = "after_login", effects = "42", timeout = "60s")]
async fn python_wrong_account(w: &mut Worker) -> TaskResult {
    w.run_agent(&agent("wrong_account")).await
}

/// It journals `ACTION_SUBMITTED` after its click.
#[browser_fault(
    at = ["after_login", "after_target_verified", "after_click", "after_remote_effect"],
    effects = "42",
    timeout = "60s",
    every_step = 64
)]
async fn python_late_journal(w: &mut Worker) -> TaskResult {
    w.run_agent(&agent("late_journal")).await
}

/// A command of `python -c script`, in the agent's environment.
fn script(code: &str) -> AgentCommand {
    AgentCommand::new(browser_fault_suites::python_agent::venv_dir().join("bin/python"))
        .args(["-c", code])
        .env("PYTHONPATH", browser_fault::clients::python_dir())
}

#[browser_fault(at = "after_profile_created", effects = "42")]
async fn bad_missing(w: &mut Worker) -> TaskResult {
    w.run_agent(&AgentCommand::new("/nonexistent/agent")).await
}

#[browser_fault(at = "after_profile_created", effects = "42")]
async fn bad_exits_at_once(w: &mut Worker) -> TaskResult {
    w.run_agent(&script("import sys; print('bye'); sys.exit(3)"))
        .await
}

#[browser_fault(at = "after_profile_created", effects = "42")]
async fn bad_garbage(w: &mut Worker) -> TaskResult {
    w.run_agent(&script(
        "import os, socket, json\n\
         s = socket.socket(socket.AF_UNIX); s.connect(os.environ['BROWSER_FAULT_SOCKET'])\n\
         s.sendall(b'hello there\\n'); s.recv(4096)\n\
         print(json.dumps({'claim': 'completed'}))",
    ))
    .await
}

/// The same garbage, from an agent whose connection outlives it: a process it forked keeps
/// the socket open (and nothing else) a while after the agent has claimed and exited. The
/// violation must be known from the answer on, not only when the connection ends.
#[browser_fault(at = "after_profile_created", effects = "42")]
async fn bad_garbage_kept_open(w: &mut Worker) -> TaskResult {
    w.run_agent(&script(
        "import os, socket, json, time\n\
         s = socket.socket(socket.AF_UNIX); s.connect(os.environ['BROWSER_FAULT_SOCKET'])\n\
         s.sendall(b'hello there\\n'); s.recv(4096)\n\
         if os.fork() == 0:\n\
         \x20   null = os.open(os.devnull, os.O_WRONLY); os.dup2(null, 1); os.dup2(null, 2)\n\
         \x20   time.sleep(3); os._exit(0)\n\
         print(json.dumps({'claim': 'completed'}))",
    ))
    .await
}

#[browser_fault(at = "after_profile_created", effects = "42")]
async fn bad_no_claim(w: &mut Worker) -> TaskResult {
    w.run_agent(&script(
        "import os, urllib.request\n\
         url = os.environ['BROWSER_FAULT_WEBDRIVER_URL'] + '/session'\n\
         urllib.request.urlopen(urllib.request.Request(url, data=b'{\"capabilities\": {}}', method='POST')).read()\n\
         print('done, no claim')",
    ))
    .await
}

#[browser_fault(at = "after_profile_created", effects = "42")]
async fn bad_claim(w: &mut Worker) -> TaskResult {
    w.run_agent(&script("print('{\"claim\": \"done\"}')")).await
}

/// Each bad command, and the typed failure its recovery worker must end with.
const BAD: &[(&str, AgentFailure)] = &[
    ("bad_missing", AgentFailure::Spawn),
    ("bad_exits_at_once", AgentFailure::NeverDrove),
    ("bad_garbage", AgentFailure::Protocol),
    ("bad_garbage_kept_open", AgentFailure::Protocol),
    ("bad_no_claim", AgentFailure::NoClaim),
    ("bad_claim", AgentFailure::BadClaim),
];

/// A bad command's trial fails with the typed failure `want` (by `recover_or_stop_safely`
/// alone), and leaves nothing behind.
fn fails_typed(trial: &Trial, settings: &TrialSettings, want: AgentFailure) -> Result<(), Failed> {
    let report = browser_fault_suites::run_blocking(trial, settings)?;
    let e = &report.evidence;
    let shown = report.evidence_path.display();
    let broken: Vec<Invariant> = e.broken().map(|v| v.invariant).collect();
    let got = e.workers.last().and_then(|w| w.result);
    if got != Some(WorkerResult::Err(FailureKind::Agent(want))) {
        return Err(
            format!("the recovery ended {got:?}, not with {want:?}; evidence: {shown}").into(),
        );
    }
    if broken != [Invariant::RecoverOrStopSafely] {
        return Err(format!(
            "expected only recover_or_stop_safely to break, got {broken:?}; evidence: {shown}"
        )
        .into());
    }
    if !e.profile_cleaned || !e.leaks.is_empty() {
        return Err(format!("it left something behind; evidence: {shown}").into());
    }
    browser_fault_suites::struck_before_agent_code(e)
        .map_err(|why| format!("{why}; evidence: {shown}").into())
}

/// The faulty versions' trials, and exactly what must break in each.
const CAUGHT: &[(&str, &[Invariant])] = &[
    (
        "python_blind_retry::after_click::landed",
        &[Invariant::NoDuplicate],
    ),
    (
        "python_wrong_account::after_login::live_account_switch",
        &[Invariant::NoWrongAccount],
    ),
];

fn main() {
    let Suite {
        args,
        filters,
        settings,
        all,
    } = start("the Python agent's virtual environment", ensure_venv);
    let mut tests = careful_and_caught(&all, &settings, "python_careful", CAUGHT);
    for &(scenario, want) in BAD {
        let name = format!("{scenario}::after_profile_created");
        let trial = all.iter().find(|t| t.name() == name).copied();
        let settings = settings.clone();
        tests.push(Test::test(
            // Worker 1 is crashed as its profile is made, before the command runs: what is
            // judged is the recovery's bad command, and the harness's handling of it.
            format!("{name}::struck_before_agent_code::recovery_fails_as_{want:?}"),
            move || {
                let trial = trial.ok_or_else(|| Failed::from(format!("no trial {name}")))?;
                fails_typed(&trial, &settings, want)
            },
        ));
    }
    let late = settings.clone();
    tests.push(Test::test(
        "python_late_journal::caught_by_a_step_crash_after_its_click",
        move || late_journal_caught(&late),
    ));
    libtest_mimic::run(&args, filtered(tests, &filters)).exit();
}

/// A crash right after one of its steps, its click, is caught: its recovery finds its message
/// on the thread (its own state file says it was submitting) and claims it confirmed, while
/// the journal never heard of a submit (`ambiguity_visible` and `claims_match_facts`). No
/// other step trial is caught, by anything.
fn late_journal_caught(settings: &TrialSettings) -> Result<(), Failed> {
    let scenario = trial::scenarios()
        .into_iter()
        .find(|s| s.name == "python_late_journal")
        .ok_or("no scenario python_late_journal")?;
    let mut settings = settings.clone();
    settings.seed = Some(7);
    let steps: Vec<Trial> = trial::explore(scenario, &settings)
        .map_err(|e| Failed::from(e.to_string()))?
        .into_iter()
        .filter(|t| t.seeded.is_none() && t.name().contains("::step::"))
        .collect();
    let mut caught = Vec::new();
    let mut other = Vec::new();
    for t in &steps {
        let report = browser_fault_suites::run_blocking(t, &settings)?;
        let broken: Vec<Invariant> = report.evidence.broken().map(|v| v.invariant).collect();
        match broken.as_slice() {
            [] => {}
            [Invariant::AmbiguityVisible, Invariant::ClaimsMatchFacts] => caught.push(t.name()),
            _ => other.push(format!(
                "{}: {broken:?} ({})",
                t.name(),
                report.evidence_path.display()
            )),
        }
    }
    if !other.is_empty() {
        return Err(format!("caught by something else:\n  {}", other.join("\n  ")).into());
    }
    match caught.as_slice() {
        [] => Err(format!("no step trial of {} caught it", steps.len()).into()),
        c if c.iter().all(|n| n.ends_with("_click")) => {
            eprintln!(
                "python_late_journal: caught by {c:?} of {} step trials",
                steps.len()
            );
            Ok(())
        }
        c => Err(format!("caught at {c:?}, not only right after a click").into()),
    }
}
