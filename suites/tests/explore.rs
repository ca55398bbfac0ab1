//! Beyond the eight boundaries: crash points at every step, depth-2 schedules and seeded
//! ones, generated at run time from recorded runs.
//!
//! - The careful reference agent passes every explored trial: no false positive.
//! - `late_journal` passes all its named boundaries and is caught, by `no_duplicate` alone,
//!   only by a crash right after one of its steps (its click, which it journals too late).
//! - `hasty_recovery` passes every single fault and is caught, by `no_duplicate` alone, only
//!   when its recovery is crashed too (`after_target_verified::then::after_click`).
//! - A failing seeded trial's replay command, run 10 times, fails the same way 10 times.
//!
//! Run with a trial's exact name (`-- 'late_journal::seeded::03' --exact`, what a replay
//! command does), this binary is the ordinary runner.

use browser_fault::oracle::Invariant;
use browser_fault::prelude::*;
use browser_fault::runner::ExitCode;
use browser_fault::trial::{self, Trial, TrialSettings};
use libtest_mimic::{Failed, Trial as Test};

#[browser_fault(
    at = ["after_target_verified", "after_click", "after_remote_effect"],
    effects = "42",
    timeout = "60s",
    every_step = 30,
    depth = 2,
    seeded = 4
)]
async fn careful(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

#[browser_fault(
    at = ["after_login", "after_target_verified", "after_click", "after_remote_effect"],
    effects = "42",
    timeout = "60s",
    every_step = 60,
    seeded = 6
)]
async fn late_journal(w: &mut Worker) -> TaskResult {
    browser_fault_suites::late_journal(w).await
}

/// The reference agent on a site whose send form posts with `fetch` (no navigation starts
/// at the click, only a request) and that answers every request 1.5 s late, longer than a
/// click that starts nothing waits for the page to stay quiet.
#[browser_fault(
    at = "after_click",
    effects = "42",
    timeout = "90s",
    site = slow_site,
    every_step = 60
)]
async fn careful_slow_site(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

/// `late_journal` on the same site: its recovery sends again, and its duplicate must land
/// although the agent ends right after its click (it finds worker 1's message already on
/// the page), while the site is still answering.
#[browser_fault(
    at = "after_click",
    effects = "42",
    timeout = "90s",
    site = slow_site,
    every_step = 60
)]
async fn late_journal_slow_site(w: &mut Worker) -> TaskResult {
    browser_fault_suites::late_journal(w).await
}

/// The careful agent on a WebDriver client of its own (`own_client`): the harness sees it
/// only at its worker's endpoint.
#[browser_fault(at = "all", effects = "42", timeout = "60s", every_step = 16)]
async fn own_client(w: &mut Worker) -> TaskResult {
    browser_fault_suites::own_client::send_hello(w).await
}

/// `own_client` with the late-journal bug: it clicks before `ACTION_SUBMITTED` is durable.
#[browser_fault(
    at = ["after_login", "after_target_verified", "after_click", "after_remote_effect"],
    effects = "42",
    timeout = "60s",
    every_step = 64
)]
async fn own_client_late_journal(w: &mut Worker) -> TaskResult {
    use browser_fault_suites::own_client::{Journaling, send_hello_journaling};
    send_hello_journaling(w, Journaling::Late).await
}

/// `own_client` marking only what exists in its head (`before_verify`,
/// `after_target_verified`): `after_login`, `after_click` and `after_remote_effect` are
/// read from the network.
#[browser_fault(
    at = ["after_login", "after_click", "after_remote_effect"],
    effects = "42",
    timeout = "60s"
)]
async fn own_client_unmarked(w: &mut Worker) -> TaskResult {
    use browser_fault_suites::own_client::{Journaling, Marking, send_hello_marking};
    send_hello_marking(w, Journaling::Careful, Marking::HeadOnly).await
}

/// The careful agent on a CDP client of its own (`own_cdp`): the harness sees it only at its
/// worker's CDP endpoint.
#[browser_fault(
    at = ["after_login", "after_target_verified", "after_click", "after_remote_effect", "browser_crash"],
    effects = "42",
    timeout = "60s",
    every_step = 10
)]
async fn own_cdp(w: &mut Worker) -> TaskResult {
    browser_fault_suites::own_cdp::send_hello(w).await
}

/// The careful agent on a site that cannot start.
#[browser_fault(at = "after_profile_created", effects = "42", site = unstartable_site)]
async fn unstartable(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

fn unstartable_site() -> SiteSpec {
    let demo = &browser_fault::fixtures::DEMO_ACCOUNTS[0];
    let account = Account {
        id: demo.id.to_owned(),
        tenant: Some(demo.tenant.to_owned()),
        username: demo.username.to_owned(),
        password: browser_fault::worker::Secret::new(demo.password),
    };
    SiteSpec::started(
        || {
            Err(browser_fault::site::SiteError::adapter(
                std::io::Error::other("the test's site refuses to start"),
            ))
        },
        browser_fault::site::Fixture::new(),
        account,
    )
}

/// A trial whose site never started fails as one that could not run, naming why, the run
/// ends with a line of its own and `ExitCode::SiteUnavailable`, and it is not failed for a
/// cleanup it never needed (no worker, no profile).
fn unstartable_fails_without_a_cleanup_claim(settings: &TrialSettings) -> Result<(), Failed> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new(&exe)
        .arg("unstartable::after_profile_created")
        .arg("--exact")
        .env("BROWSER_FAULT_OUT", &settings.out_dir)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned()
        + String::from_utf8_lossy(&out.stderr).as_ref();
    let said = text.contains("could not run") && text.contains("refuses to start");
    let summed =
        text.contains("browser-fault: 1 trial(s) could not run because their site did not start");
    if out.status.code() == Some(ExitCode::SiteUnavailable.code())
        && said
        && summed
        && !text.contains("no cleanup proof")
    {
        Ok(())
    } else {
        Err(format!("status {:?}:\n{text}", out.status.code()).into())
    }
}

fn slow_site() -> SiteSpec {
    SiteSpec::fixture(
        browser_fault::fixtures::SiteConfig::default()
            .response_delay(std::time::Duration::from_millis(1500))
            .scripted_send(true),
    )
}

#[browser_fault(
    at = ["after_login", "after_target_verified", "after_click", "after_remote_effect"],
    effects = "42",
    timeout = "60s",
    depth = 2
)]
async fn hasty_recovery(w: &mut Worker) -> TaskResult {
    browser_fault_suites::hasty_recovery(w).await
}

fn scenario(name: &str) -> &'static browser_fault::trial::Scenario {
    browser_fault::trial::scenarios()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

/// What broke in `trial`, and its evidence; a trial that broke nothing but did not pass (its
/// cleanup unproven) is reported as such, never as a pass.
fn run(trial: &Trial, settings: &TrialSettings) -> Result<(Vec<Invariant>, String), Failed> {
    let report = browser_fault_suites::run_blocking(trial, settings)?;
    let broken: Vec<Invariant> = report.evidence.broken().map(|v| v.invariant).collect();
    let shown = report.evidence_path.display().to_string();
    if broken.is_empty() && !report.passed() {
        return Err(format!("{}: cleanup not proven ({shown})", trial.name()).into());
    }
    Ok((broken, shown))
}

/// Runs every trial of `trials` two at a time; returns each name with what broke.
fn run_all(
    trials: &[Trial],
    settings: &TrialSettings,
) -> Result<Vec<(String, Vec<Invariant>, String)>, Failed> {
    let results = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(t) = trials.get(i) else { break };
                    let result = run(t, settings).map(|(b, e)| (t.name(), b, e));
                    results.lock().unwrap().push(result);
                }
            });
        }
    });
    let mut out = Vec::new();
    for r in results.into_inner().unwrap() {
        out.push(r?);
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// An error and its sources on one line, `outer: inner: innermost`.
fn chain(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        line.push_str(": ");
        line.push_str(&inner.to_string());
        source = inner.source();
    }
    line
}

fn explored(name: &str, settings: &TrialSettings, seed: u64) -> Result<Vec<Trial>, Failed> {
    let mut settings = settings.clone();
    settings.seed = Some(seed);
    trial::explore(scenario(name), &settings).map_err(|e| Failed::from(chain(&e)))
}

/// The step trial that crashes `name`'s worker 1 right after its send: its last click (the
/// first one signs in).
fn send_step(name: &str, settings: &TrialSettings) -> Result<Trial, Failed> {
    explored(name, settings, 0)?
        .into_iter()
        .rfind(|t| {
            t.seeded.is_none() && t.name().ends_with("_click") && t.name().contains("::step::")
        })
        .ok_or_else(|| format!("{name} has no step trial after a click").into())
}

fn failures(results: &[(String, Vec<Invariant>, String)]) -> Vec<String> {
    results
        .iter()
        .filter(|(_, broken, _)| !broken.is_empty())
        .map(|(name, broken, evidence)| format!("{name}: {broken:?} ({evidence})"))
        .collect()
}

/// Every explored trial of the reference agent passes.
fn reference_passes(settings: &TrialSettings) -> Result<(), Failed> {
    let trials = explored("careful", settings, 7)?;
    let steps = trials
        .iter()
        .filter(|t| t.name().contains("::step::"))
        .count();
    let doubles = trials.iter().filter(|t| t.then.is_some()).count();
    let seeded = trials.iter().filter(|t| t.seeded.is_some()).count();
    if steps < 10 || doubles < 4 {
        return Err(format!(
            "too few explored trials to mean anything: {steps} step(s), {doubles} depth-2"
        )
        .into());
    }
    let results = run_all(&trials, settings)?;
    let failed = failures(&results);
    if failed.is_empty() {
        eprintln!(
            "careful: {} explored trials passed ({steps} steps, {doubles} depth-2, {seeded} seeded)",
            results.len()
        );
        Ok(())
    } else {
        Err(format!("false positives:\n  {}", failed.join("\n  ")).into())
    }
}

/// The named boundaries of `name` all pass.
fn named_pass(name: &str, settings: &TrialSettings) -> Result<(), Failed> {
    // As the runner lists them: a trial that cannot run here (an orphaned grid session
    // without a grid) is ignored, not run.
    let trials: Vec<Trial> = trial::expand(scenario(name))
        .into_iter()
        .filter(|t| t.cannot_run().is_none())
        .collect();
    let failed = failures(&run_all(&trials, settings)?);
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "named boundaries caught it already:\n  {}",
            failed.join("\n  ")
        )
        .into())
    }
}

/// The trials of `own_client_unmarked` that crash worker 1 at `after_login`, `after_click`
/// or `after_remote_effect` (which the agent does not mark) pass, their fault struck, and
/// each was struck by what the proxy read from the network, as worker 1's log says. (Its
/// live variants strike where `own_client`'s do, at its own `before_verify` or at the site.)
fn unmarked_boundaries_read_from_the_network(settings: &TrialSettings) -> Result<(), Failed> {
    let crashes = [
        "own_client_unmarked::after_login",
        "own_client_unmarked::after_click::landed",
        "own_client_unmarked::after_click::lost",
        "own_client_unmarked::after_click::late_landing",
        "own_client_unmarked::after_remote_effect",
    ];
    let trials: Vec<Trial> = trial::expand(scenario("own_client_unmarked"))
        .into_iter()
        .filter(|t| crashes.contains(&t.name().as_str()))
        .collect();
    if trials.len() != crashes.len() {
        return Err(format!("expected the trials {crashes:?}").into());
    }
    let reports = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(t) = trials.get(i) else { break };
                    let report = browser_fault_suites::run_blocking(t, settings);
                    reports.lock().unwrap().push((t.name(), report));
                }
            });
        }
    });
    let mut wrong = Vec::new();
    let mut read = 0;
    for (name, report) in reports.into_inner().unwrap() {
        let report = report?;
        let shown = report.evidence_path.display();
        if !report.passed() {
            let broken: Vec<_> = report.evidence.broken().map(|v| v.invariant).collect();
            wrong.push(format!("{name}: {broken:?} ({shown})"));
            continue;
        }
        let Some(first) = report.evidence.workers.first() else {
            wrong.push(format!("{name}: no worker ({shown})"));
            continue;
        };
        let Some(point) = first.struck.filter(|p| {
            matches!(
                p,
                FaultPoint::AfterLogin | FaultPoint::AfterClick | FaultPoint::AfterRemoteEffect
            )
        }) else {
            continue;
        };
        let line = format!("fault point {point} read from the network");
        if first.log_tail.contains(&line) {
            read += 1;
        } else {
            wrong.push(format!(
                "{name}: struck at {point}, not read from the network ({shown})"
            ));
        }
    }
    if !wrong.is_empty() {
        return Err(wrong.join("\n").into());
    }
    if read < crashes.len() {
        return Err(format!("only {read} trials struck from the network").into());
    }
    eprintln!("own_client_unmarked: {read} worker 1 crashes read from the network");
    Ok(())
}

/// Among the explored trials that `pick` selects, some are caught by `no_duplicate` alone,
/// all at trials `expected` names, and the others pass.
fn caught_by_exploration(
    name: &str,
    settings: &TrialSettings,
    pick: fn(&Trial) -> bool,
    expected: &str,
) -> Result<(), Failed> {
    let trials: Vec<Trial> = explored(name, settings, 7)?
        .into_iter()
        .filter(pick)
        .collect();
    let results = run_all(&trials, settings)?;
    let caught: Vec<&String> = results
        .iter()
        .filter(|(_, broken, _)| broken == &[Invariant::NoDuplicate])
        .map(|(n, ..)| n)
        .collect();
    let other: Vec<String> = results
        .iter()
        .filter(|(_, broken, _)| !broken.is_empty() && broken != &[Invariant::NoDuplicate])
        .map(|(n, b, e)| format!("{n}: {b:?} ({e})"))
        .collect();
    if caught.is_empty() {
        return Err(format!("no trial of {} caught it", results.len()).into());
    }
    if !other.is_empty() {
        return Err(format!("caught by something else:\n  {}", other.join("\n  ")).into());
    }
    if let Some(wrong) = caught.iter().find(|n| !n.contains(expected)) {
        return Err(format!("caught at {wrong}, not at a `{expected}` trial").into());
    }
    eprintln!("{name}: caught by {caught:?} of {} trials", results.len());
    Ok(())
}

/// The step trial right after `careful_slow_site`'s send (its last click): the send landed
/// before worker 1 was crashed, so the recovery finds it and confirms it (a crash while the
/// request was still on its way leaves no effect, and the journal `UNKNOWN`).
fn slow_site_send_lands(settings: &TrialSettings) -> Result<(), Failed> {
    let send = send_step("careful_slow_site", settings)?;
    let report = browser_fault_suites::run_blocking(&send, settings)?;
    let evidence = &report.evidence;
    let last = evidence.checkpoint_trace.last().map(|t| t.to);
    if report.passed() && evidence.ledger.effects == 1 && last == Some(Checkpoint::RemoteConfirmed)
    {
        eprintln!("{}: the send landed before the crash", send.name());
        Ok(())
    } else {
        Err(format!(
            "{}: the crash came before the send landed: {} effect(s), the journal ends {last:?}, passed {} ({})",
            send.name(),
            evidence.ledger.effects,
            report.passed(),
            report.evidence_path.display()
        )
        .into())
    }
}

/// `late_journal_slow_site`'s step trial right after its send is caught by `no_duplicate`:
/// worker 1's send landed before its crash, and the recovery's second send landed before
/// its browser was ended.
fn slow_site_duplicate_lands(settings: &TrialSettings) -> Result<(), Failed> {
    let send = send_step("late_journal_slow_site", settings)?;
    let (broken, evidence) = run(&send, settings)?;
    if broken == [Invariant::NoDuplicate] {
        eprintln!("{}: caught by no_duplicate", send.name());
        Ok(())
    } else {
        Err(format!(
            "{}: expected `no_duplicate` alone to break (both sends landed), broke {broken:?} ({evidence})",
            send.name()
        )
        .into())
    }
}

/// Every step trial of an agent with its own client crashes it right after one of its own
/// protocol commands (named `marker` in the step label: `_webdriver_`, `_cdp_`), at least
/// `min` of them, and passes: the steps are the agent's commands at its endpoint (and its
/// journal writes), not the harness's.
fn own_steps_pass(
    name: &str,
    marker: &str,
    min: usize,
    settings: &TrialSettings,
) -> Result<(), Failed> {
    let trials: Vec<Trial> = explored(name, settings, 7)?
        .into_iter()
        .filter(|t| t.seeded.is_none() && t.then.is_none() && t.name().contains("::step::"))
        .collect();
    let commands = trials.iter().filter(|t| t.name().contains(marker)).count();
    if commands < min {
        let names: Vec<String> = trials.iter().map(Trial::name).collect();
        return Err(format!(
            "only {commands} step trial(s) after the agent's own commands: {names:?}"
        )
        .into());
    }
    let failed = failures(&run_all(&trials, settings)?);
    if failed.is_empty() {
        eprintln!(
            "{name}: {} step trials passed, {commands} after its own {marker} commands",
            trials.len()
        );
        Ok(())
    } else {
        Err(format!("false positives:\n  {}", failed.join("\n  ")).into())
    }
}

/// What `own_client`'s own verify step checked reaches the evidence (`Worker::record_checks`),
/// with no warning.
fn own_checks_in_evidence(settings: &TrialSettings) -> Result<(), Failed> {
    let trial = trial::expand(scenario("own_client"))
        .into_iter()
        .find(|t| t.name() == "own_client::after_target_verified")
        .ok_or("no own_client::after_target_verified")?;
    let report = browser_fault_suites::run_blocking(&trial, settings)?;
    let evidence = &report.evidence;
    let checked: Vec<&str> = evidence
        .workers
        .iter()
        .flat_map(|w| &w.verified)
        .flat_map(|v| v.checked.iter().map(String::as_str))
        .collect();
    let shown = report.evidence_path.display();
    if !report.passed() || !checked.contains(&"object") || !checked.contains(&"account") {
        return Err(format!("its checks are not in the evidence: {checked:?} ({shown})").into());
    }
    if !evidence.warnings.is_empty() {
        return Err(format!("warned: {:?} ({shown})", evidence.warnings).into());
    }
    eprintln!("own_client: verified {checked:?}");
    Ok(())
}

/// A seed whose seeded trials of `late_journal` pick its failing step; its replay command,
/// run 10 times, fails with `no_duplicate` each time.
fn seeded_replay(settings: &TrialSettings) -> Result<(), Failed> {
    let failing = send_step("late_journal", settings)?;
    let mut chosen = None;
    for seed in 0..200u64 {
        let trials = explored("late_journal", settings, seed)?;
        if let Some(t) = trials
            .iter()
            .find(|t| t.seeded.is_some() && t.plan == failing.plan && t.then.is_none())
        {
            chosen = Some((seed, *t));
            break;
        }
    }
    let (seed, seeded) = chosen.ok_or("no seed in 0..200 picks the failing step")?;
    // The same seed picks the same schedules, in every process.
    let again = explored("late_journal", settings, seed)?;
    if !again
        .iter()
        .any(|t| t.name() == seeded.name() && t.plan == seeded.plan)
    {
        return Err("the same seed picked another schedule".into());
    }
    let command = trial::replay_command(&seeded, seed);
    if !command.contains(&format!("{}={seed}", trial::SEED_ENV)) || !command.contains("--exact") {
        return Err(format!("not a replay command: {command}").into());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut reproduced = 0;
    for round in 1..=10 {
        let out = std::process::Command::new(&exe)
            .arg(seeded.name())
            .arg("--exact")
            .env(trial::SEED_ENV, seed.to_string())
            .env("BROWSER_FAULT_OUT", &settings.out_dir)
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + String::from_utf8_lossy(&out.stderr).as_ref();
        let failed_once = text.contains("1 failed") && text.contains("`no_duplicate` broke");
        if out.status.code() == Some(ExitCode::TrialFailed.code())
            && failed_once
            && text.contains("replay: ")
        {
            reproduced += 1;
        } else {
            return Err(format!(
                "replay {round} of `{command}` did not fail the same way (status {:?}):\n{text}",
                out.status.code()
            )
            .into());
        }
    }
    eprintln!("seed {seed}: `{command}` reproduced {reproduced} of 10");
    Ok(())
}

fn main() {
    browser_fault::runner::enter_worker_role_if_asked();
    if std::env::args().any(|a| a == "--exact") {
        // A replay command: run the named trial as the ordinary runner would.
        browser_fault::runner::main();
    }
    let (mut args, filters) = browser_fault::runner::arguments(std::env::args());
    // Each case runs two trials at a time already.
    args.test_threads = Some(1);
    let mut settings = TrialSettings::from_env();
    settings.snapshot_dir = None;
    type Case = fn(&TrialSettings) -> Result<(), Failed>;
    let cases: [(&str, Case); 16] = [
        ("careful::every_explored_trial_passes", reference_passes),
        ("late_journal::named_boundaries_pass", |s| {
            named_pass("late_journal", s)
        }),
        (
            "late_journal::caught_by_a_step_crash_after_its_click",
            |s| {
                caught_by_exploration(
                    "late_journal",
                    s,
                    |t| t.seeded.is_none() && t.name().contains("::step::"),
                    "_click",
                )
            },
        ),
        ("hasty_recovery::named_boundaries_pass", |s| {
            named_pass("hasty_recovery", s)
        }),
        ("hasty_recovery::caught_by_a_double_fault", |s| {
            caught_by_exploration(
                "hasty_recovery",
                s,
                |t| t.then.is_some(),
                "after_target_verified::then::after_click",
            )
        }),
        (
            "careful_slow_site::a_send_by_fetch_lands_before_the_crash",
            slow_site_send_lands,
        ),
        (
            "late_journal_slow_site::a_recovery_that_ends_after_its_click_still_sends",
            slow_site_duplicate_lands,
        ),
        ("own_client::named_boundaries_pass", |s| {
            named_pass("own_client", s)
        }),
        (
            "own_client_unmarked::boundaries_read_from_the_network",
            unmarked_boundaries_read_from_the_network,
        ),
        (
            "own_client::its_own_checks_reach_the_evidence",
            own_checks_in_evidence,
        ),
        (
            "own_client::every_step_crashes_it_after_its_own_commands",
            |s| own_steps_pass("own_client", "_webdriver_", 8, s),
        ),
        (
            "own_client_late_journal::caught_by_a_step_crash_after_its_own_click",
            |s| {
                caught_by_exploration(
                    "own_client_late_journal",
                    s,
                    |t| {
                        t.seeded.is_none()
                            && t.name().contains("::step::")
                            && t.name().ends_with("_webdriver_post_element_click")
                    },
                    "_click",
                )
            },
        ),
        ("own_cdp::named_boundaries_pass", |s| {
            named_pass("own_cdp", s)
        }),
        ("own_cdp::every_step_crashes_it_after_its_own_calls", |s| {
            own_steps_pass("own_cdp", "_cdp_", 5, s)
        }),
        (
            "unstartable::fails_as_could_not_run_with_nothing_to_clean",
            unstartable_fails_without_a_cleanup_claim,
        ),
        (
            "late_journal::seeded_failure_replays_10_of_10",
            seeded_replay,
        ),
    ];
    let tests = cases
        .into_iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .map(|(name, case)| {
            let settings = settings.clone();
            Test::test(name, move || case(&settings))
        })
        .collect();
    libtest_mimic::run(&args, tests).exit();
}
