//! The runner: expands every registered scenario into trials and runs them with
//! libtest-mimic, so each trial is a named test for filters, `--list`, `--exact`,
//! `--test-threads`, nextest and CI partitions.
//!
//! A `harness = false` test target holds the scenarios and one line:
//!
//! ```no_run
//! browser_fault::main!();
//! ```
//!
//! The `kill` crash mode re-enters the same binary in worker role (through the
//! `BROWSER_FAULT_WORKER` variable); `main!` and the ordinary-`#[test]` entry both check for
//! it first.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use libtest_mimic::{Arguments, Failed};

use crate::error::error_chain;
use crate::scenario::{self, Scenario};
use crate::trial::{self, Trial, TrialSettings};

pub use crate::exit::ExitCode;

/// The `main` of a `harness = false` test target: runs every trial of every scenario
/// linked into the binary with libtest-mimic's flags and the settings of the environment.
/// Use it through [`main!`](crate::main!).
pub fn main() -> ! {
    main_with(TrialSettings::from_env)
}

/// [`main`] with settings of the caller's own (another step timeout, another evidence
/// folder…), made by `settings` in the test process only (a worker process never needs
/// them). Use it through `main!(settings = path)`.
pub fn main_with(settings: impl FnOnce() -> TrialSettings) -> ! {
    enter_worker_role_if_asked();
    let (args, filters) = arguments(std::env::args());
    let mut settings = settings();
    if !args.list {
        // SIGINT and SIGTERM stop the run's workers and remove their profiles first.
        trial::interrupt::install();
    }
    sweep_before_run(&settings);
    let (explored, broken) = explored_trials(&mut settings, &filters, args.exact);
    let trials: Vec<Trial> = scenario::scenarios()
        .into_iter()
        .flat_map(trial::expand)
        .chain(explored)
        .filter(|t| {
            filters.is_empty()
                || filters.iter().any(|f| {
                    if args.exact {
                        t.name() == *f
                    } else {
                        t.name().contains(f.as_str())
                    }
                })
        })
        .collect();
    let conclusion = run_trials_and(&args, trials, broken, settings);
    conclusion.exit()
}

/// The trials of every scenario that asks for more than its boundaries (`every_step`,
/// `depth`, `seeded`) and could match the filters; and, for a scenario whose recording
/// failed, its `<scenario>::explore` test that fails with the reason. The run's seed is
/// resolved here, once, and kept in `settings` for the replay lines of failures.
fn explored_trials(
    settings: &mut TrialSettings,
    filters: &[String],
    exact: bool,
) -> (Vec<Trial>, Vec<(String, String)>) {
    let wanted: Vec<&'static Scenario> = scenario::scenarios()
        .into_iter()
        .filter(|s| trial::explore::wanted(s, filters, exact))
        .collect();
    let mut trials = Vec::new();
    let mut broken = Vec::new();
    if wanted.is_empty() {
        return (trials, broken);
    }
    let seed = match settings.seed.map_or_else(trial::run_seed, Ok) {
        Ok(seed) => seed,
        Err(e) => {
            let why = error_chain(&e);
            for s in wanted {
                broken.push((format!("{}::explore", s.name), why.clone()));
            }
            return (trials, broken);
        }
    };
    settings.seed = Some(seed);
    if wanted.iter().any(|s| s.explore.seeded > 0) {
        eprintln!(
            "browser-fault: seed {seed} ({}={seed} replays this run's seeded trials)",
            trial::SEED_ENV
        );
    }
    for s in wanted {
        match trial::explore::explore(s, settings) {
            Ok(more) => trials.extend(more),
            Err(e) => broken.push((format!("{}::explore", s.name), error_chain(&e))),
        }
    }
    (trials, broken)
}

/// libtest-mimic's arguments, with every positional filter taken out: libtest accepts
/// several filters (`cargo test -- a b`), libtest-mimic one, so the runner applies them.
pub fn arguments(raw: impl IntoIterator<Item = String>) -> (Arguments, Vec<String>) {
    const TAKES_VALUE: &[&str] = &[
        "--test-threads",
        "--format",
        "--logfile",
        "--skip",
        "--color",
        "-Z",
    ];
    let mut rest = Vec::new();
    let mut filters = Vec::new();
    let mut raw = raw.into_iter();
    if let Some(program) = raw.next() {
        rest.push(program);
    }
    while let Some(arg) = raw.next() {
        if TAKES_VALUE.contains(&arg.as_str()) {
            rest.push(arg);
            rest.extend(raw.next());
        } else if arg.starts_with('-') {
            rest.push(arg);
        } else {
            filters.push(arg);
        }
    }
    (Arguments::from_iter(rest), filters)
}

/// How a run of trials ended: libtest-mimic's counts, and the runner's two gates.
#[derive(Debug)]
#[must_use = "a run's conclusion says whether it failed: call `exit()` or read it"]
pub struct Conclusion {
    /// Passed, failed, ignored, as libtest-mimic counted them.
    pub tests: libtest_mimic::Conclusion,
    /// Trials that ran without cleanup proof (profiles may be left).
    pub unproven_cleanups: usize,
    /// Scenarios that declare a side effect and never acted in any trial that ran.
    pub never_acted: Vec<String>,
    /// The trials run whose fault struck the harness's own code, not the agent's, in one of
    /// their workers (crashed at its launch, refused the profile's lease), one line each with
    /// where: they judge the harness's guards and a start on what was left, and the run says
    /// so at its end. Not a failure.
    pub before_scenario: Vec<String>,
    /// Why no trial ran: the browser binaries could not be found (the message names the fix).
    pub no_browser: Option<String>,
    /// The trials that could not run because their site did not start or could not be
    /// reached, one line each with the site's error.
    pub site_unavailable: Vec<String>,
}

impl Conclusion {
    /// The process exit code: [`ExitCode::NoBrowser`] when no trial could run, then the
    /// gates ([`ExitCode::CleanupUnproven`], [`ExitCode::NeverActed`]), which fail closed
    /// whatever the trials say, then [`ExitCode::SiteUnavailable`] when a trial could not
    /// reach its site, then [`ExitCode::TrialFailed`] when a trial failed, else
    /// [`ExitCode::Success`].
    pub fn exit_code(&self) -> ExitCode {
        if self.no_browser.is_some() {
            ExitCode::NoBrowser
        } else if self.unproven_cleanups > 0 {
            ExitCode::CleanupUnproven
        } else if !self.never_acted.is_empty() {
            ExitCode::NeverActed
        } else if !self.site_unavailable.is_empty() {
            ExitCode::SiteUnavailable
        } else if self.tests.has_failed() {
            ExitCode::TrialFailed
        } else {
            ExitCode::Success
        }
    }

    /// Whether the run failed, by a trial or a gate.
    pub fn has_failed(&self) -> bool {
        self.exit_code() != ExitCode::Success
    }

    /// Exits the process with [`Conclusion::exit_code`].
    pub fn exit(self) -> ! {
        self.exit_code().exit()
    }
}

/// Runs `trials` as libtest-mimic tests, then applies the aggregate gates: every trial that
/// ran must have cleanup proof, and a scenario that declares a side effect must have acted,
/// or the run fails closed. Prints what a gate found; exiting is the caller's.
pub fn run_trials(args: &Arguments, trials: Vec<Trial>, settings: TrialSettings) -> Conclusion {
    run_trials_and(args, trials, Vec::new(), settings)
}

/// [`run_trials`], with tests that fail with their reason: explorations that could not be
/// recorded.
fn run_trials_and(
    args: &Arguments,
    trials: Vec<Trial>,
    broken: Vec<(String, String)>,
    settings: TrialSettings,
) -> Conclusion {
    let runnable = if args.list {
        0
    } else {
        trials
            .iter()
            .filter(|t| t.cannot_run_at(settings.webdriver_url.as_deref()).is_none())
            .count()
    };
    let gate = Arc::new(Gate {
        progress: (runnable > 1).then(|| crate::report::Progress::start(runnable)),
        ..Gate::default()
    });
    let settings = Arc::new(settings);
    // An external site is one site for every trial: its ledger can only be read per trial
    // when trials take turns.
    let mut args = args.clone();
    if trials.iter().any(|t| (t.scenario.site)().is_shared()) {
        args.test_threads = Some(1);
    }
    // A missing browser is said once, with its fix, before any trial starts.
    let runs_something = !args.list
        && trials
            .iter()
            .any(|t| t.cannot_run_at(settings.webdriver_url.as_deref()).is_none());
    if runs_something
        && settings.webdriver_url.is_none()
        && let Err(e) = crate::browser::BrowserBinaries::discover_cached()
    {
        let why = error_chain(&e);
        eprintln!("browser-fault: no trial can run: {why}");
        return Conclusion {
            tests: libtest_mimic::Conclusion {
                num_filtered_out: 0,
                num_passed: 0,
                num_failed: 0,
                num_ignored: 0,
                num_measured: 0,
            },
            unproven_cleanups: 0,
            never_acted: Vec::new(),
            before_scenario: Vec::new(),
            no_browser: Some(why),
            site_unavailable: Vec::new(),
        };
    }
    let args = &args;
    // What cannot run here, and why: libtest-mimic lists an ignored test without a reason,
    // so the reasons go to standard error (standard output is nextest's to parse).
    let ignored: Vec<(String, &'static str)> = trials
        .iter()
        .filter_map(|t| {
            t.cannot_run_at(settings.webdriver_url.as_deref())
                .map(|why| (t.name(), why))
        })
        .filter(|(name, _)| {
            args.filter
                .as_ref()
                .is_none_or(|f| name.contains(f.as_str()))
        })
        .collect();
    let broken = broken
        .into_iter()
        .map(|(name, why)| libtest_mimic::Trial::test(name, move || Err(why.into())));
    let tests = trials
        .into_iter()
        .map(|t| {
            let gate = gate.clone();
            let settings = settings.clone();
            // No `with_kind`: a kind prefixes the listed name (`[kill] a::b`), and nextest
            // runs each test by its listed name with `--exact`, which must match the trial.
            // A trial that needs fault knobs the site lacks is listed, as ignored: never
            // silently dropped.
            let unsupported = t.cannot_run_at(settings.webdriver_url.as_deref()).is_some();
            libtest_mimic::Trial::test(t.name(), move || run_one(&t, &settings, &gate))
                .with_ignored_flag(unsupported)
        })
        .chain(broken)
        .collect();
    if args.list {
        for (name, why) in &ignored {
            eprintln!("browser-fault: {name} is ignored: {why}");
        }
    }
    let tests = libtest_mimic::run(args, tests);
    trial::interrupt::hold_if_interrupted();
    if let Some(progress) = &gate.progress {
        progress.finish();
    }
    // Read before the reports take the outcomes.
    let before_scenario = gate.before_scenario();
    if !args.list && gate.ran.load(Ordering::SeqCst) > 0 {
        write_reports(&gate, &ignored, &settings);
    }
    if !args.list && !ignored.is_empty() && !args.ignored && !args.include_ignored {
        eprintln!(
            "browser-fault: {} trial(s) ignored, as this site or WebDriver endpoint cannot make their fault:",
            ignored.len()
        );
        for (name, why) in &ignored {
            eprintln!("  {name}: {why}");
        }
    }
    let (ran, proven) = (
        gate.ran.load(Ordering::SeqCst),
        gate.proven.load(Ordering::SeqCst),
    );
    if ran != proven {
        eprintln!(
            "browser-fault: {} of {ran} trial(s) have no cleanup proof; failing the run (profiles may be left under {})",
            ran - proven,
            settings.out_dir.display()
        );
    }
    if !args.list && !before_scenario.is_empty() {
        eprintln!(
            "browser-fault: {} trial(s) struck the harness's own code, not the agent's, in a worker that never began its scenario: they judge the harness's guards and how the next worker starts on what was left, not the agent's recovery from a step of its own:",
            before_scenario.len()
        );
        for line in &before_scenario {
            eprintln!("  {line}");
        }
    }
    let new_snapshots = gate.new_snapshots.load(Ordering::SeqCst);
    if new_snapshots > 0 {
        eprintln!(
            "browser-fault: {new_snapshots} new snapshot(s) written for review: review them with `cargo insta review` (`cargo install cargo-insta` first), or accept them as they are by renaming each `.snap.new` to `.snap`; under CI (`CI=true`) a new snapshot fails"
        );
    }
    let mut site_unavailable = std::mem::take(
        &mut *gate
            .site_unavailable
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
    );
    site_unavailable.sort();
    if !site_unavailable.is_empty() {
        eprintln!(
            "browser-fault: {} trial(s) could not run because their site did not start or could not be reached (no worker ran, nothing was left):",
            site_unavailable.len()
        );
        for line in &site_unavailable {
            eprintln!("  {line}");
        }
    }
    let never_acted = gate.never_acted();
    for line in &never_acted {
        eprintln!("browser-fault: {line}");
    }
    Conclusion {
        tests,
        unproven_cleanups: ran - proven,
        never_acted,
        before_scenario,
        no_browser: None,
        site_unavailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_panic_is_caught_and_the_thread_is_loud_again_after() {
        let caught = quiet_panics(|| panic!("a snapshot mismatch"));
        assert!(caught.is_err());
        assert!(!QUIET.with(std::cell::Cell::get));
        assert_eq!(quiet_panics(|| 7).ok(), Some(7));
    }

    fn args(line: &str) -> (Arguments, Vec<String>) {
        arguments(
            std::iter::once("bin".to_owned()).chain(line.split_whitespace().map(str::to_owned)),
        )
    }

    static ACTS_ONCE: Scenario = crate::scenario::ScenarioDef {
        effects: Some(&["42"]),
        ..crate::scenario::ScenarioDef::for_tests(
            "acts_once",
            &[
                crate::plan::Boundary::AfterClick,
                crate::plan::Boundary::StaleProfileRestore,
            ],
        )
    }
    .into_scenario();

    static READ_ONLY: Scenario = crate::scenario::ScenarioDef {
        effects: Some(&[]),
        ..crate::scenario::ScenarioDef::for_tests("read_only", &[crate::plan::Boundary::AfterClick])
    }
    .into_scenario();

    #[test]
    fn the_gate_reports_a_scenario_that_never_acted_where_a_correct_agent_acts() {
        let trials = trial::expand(&ACTS_ONCE);
        let stale: Vec<&Trial> = trials.iter().filter(|t| !t.expects_action()).collect();
        assert_eq!(stale.len(), 2, "both stale restores end before any action");

        // Only trials where no action is expected ran: nothing to report.
        let gate = Gate::default();
        for t in &stale {
            gate.record(t, false);
        }
        assert!(gate.never_acted().is_empty());

        // A trial where a correct agent acts ran, and nobody acted.
        let click = trials.iter().find(|t| t.expects_action()).unwrap();
        gate.record(click, false);
        let lines = gate.never_acted();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("scenario `acts_once` never acted"),
            "{lines:?}"
        );

        // One trial that acted is enough.
        gate.record(click, true);
        assert!(gate.never_acted().is_empty());

        // A scenario that declares no side effect is never expected to act.
        let gate = Gate::default();
        for t in trial::expand(&READ_ONLY) {
            gate.record(&t, false);
        }
        assert!(gate.never_acted().is_empty());
    }

    #[test]
    fn the_gate_lists_the_trials_with_a_worker_that_never_began_its_scenario() {
        let began: crate::evidence::Evidence =
            serde_json::from_str(include_str!("report/testdata/evidence.json")).unwrap();
        let mut struck = began.clone();
        struck.trial = "b::after_click".to_owned();
        struck.workers[0].scenario_began = false;
        let gate = Gate::default();
        for e in [struck, began] {
            gate.outcomes
                .lock()
                .unwrap()
                .push(crate::report::TrialOutcome::from_evidence(
                    e,
                    "evidence.json".into(),
                    std::time::Duration::ZERO,
                ));
        }
        assert_eq!(
            gate.before_scenario(),
            ["b::after_click: worker 1 was crashed at after_click before its scenario began"]
        );
    }

    #[test]
    fn every_exit_code_is_distinct_and_the_signal_codes_are_the_shells() {
        let codes: std::collections::BTreeSet<i32> =
            ExitCode::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(codes.len(), ExitCode::ALL.len());
        assert_eq!(ExitCode::TrialFailed.code(), 101, "libtest's own code");
        assert_eq!(
            ExitCode::Interrupted.code(),
            128 + 2,
            "as a shell reports SIGINT"
        );
        assert_eq!(
            ExitCode::Terminated.code(),
            128 + 15,
            "as a shell reports SIGTERM"
        );
        for code in ExitCode::ALL {
            assert_eq!(ExitCode::from_code(code.code()), Some(code));
        }
        assert_eq!(ExitCode::from_code(2), None);
    }

    #[test]
    fn the_gates_come_before_a_failed_trial() {
        let failed = libtest_mimic::Conclusion {
            num_filtered_out: 0,
            num_passed: 0,
            num_failed: 1,
            num_ignored: 0,
            num_measured: 0,
        };
        let mut conclusion = Conclusion {
            tests: failed,
            unproven_cleanups: 0,
            never_acted: Vec::new(),
            before_scenario: Vec::new(),
            no_browser: None,
            site_unavailable: Vec::new(),
        };
        assert_eq!(conclusion.exit_code(), ExitCode::TrialFailed);
        conclusion
            .site_unavailable
            .push("t: the site refuses to start".to_owned());
        assert_eq!(conclusion.exit_code(), ExitCode::SiteUnavailable);
        conclusion.never_acted.push("send".to_owned());
        assert_eq!(conclusion.exit_code(), ExitCode::NeverActed);
        conclusion.unproven_cleanups = 1;
        assert_eq!(conclusion.exit_code(), ExitCode::CleanupUnproven);
        conclusion.no_browser = Some("chromium not found".to_owned());
        assert_eq!(conclusion.exit_code(), ExitCode::NoBrowser);
        assert!(conclusion.has_failed());
    }

    #[test]
    fn takes_every_positional_filter_out_of_the_arguments() {
        let (parsed, filters) = args("--exact a::b --test-threads 1 c --skip d --list");
        assert_eq!(filters, ["a::b", "c"]);
        assert!(parsed.exact && parsed.list);
        assert_eq!(parsed.test_threads, Some(1));
        assert_eq!(parsed.skip, ["d"]);
        assert_eq!(parsed.filter, None);
    }
}

#[derive(Debug, Default)]
struct Gate {
    ran: AtomicUsize,
    proven: AtomicUsize,
    /// Every trial's outcome, for the run's reports.
    outcomes: Mutex<Vec<crate::report::TrialOutcome>>,
    /// The one-line progress of a long run, when there is one.
    progress: Option<crate::report::Progress>,
    /// Trials that could not run because their site did not start, with the site's error.
    site_unavailable: Mutex<Vec<String>>,
    /// Trials that passed with a new snapshot written for review (`.snap.new`).
    new_snapshots: AtomicUsize,
    /// Per scenario: trials run that expect an action, and whether any trial acted.
    activity: Mutex<BTreeMap<&'static str, Activity>>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Activity {
    expecting_action: usize,
    acted: bool,
}

impl Gate {
    fn record(&self, trial: &Trial, acted: bool) {
        if trial.scenario.intended_effects() == 0 {
            return;
        }
        let mut all = self.activity.lock().unwrap_or_else(|p| p.into_inner());
        let a = all.entry(trial.scenario.name).or_default();
        a.expecting_action += usize::from(trial.expects_action());
        a.acted |= acted;
    }

    /// One line per trial run whose fault struck the harness's own code in one of its
    /// workers (`name: worker 1 was crashed at after_profile_created before its scenario
    /// began`), in name order; read from the trials' evidence.
    fn before_scenario(&self) -> Vec<String> {
        let outcomes = self.outcomes.lock().unwrap_or_else(|p| p.into_inner());
        let mut lines: Vec<String> = outcomes
            .iter()
            .filter_map(|o| o.evidence.as_ref())
            .filter_map(|e| {
                let workers = e.before_scenario();
                (!workers.is_empty()).then(|| format!("{}: {}", e.trial, workers.join("; ")))
            })
            .collect();
        lines.sort();
        lines
    }

    /// One line per scenario that intends a side effect, ran trials where a correct agent
    /// acts, and never reached `ACTION_SUBMITTED` in any of them.
    fn never_acted(&self) -> Vec<String> {
        let all = self.activity.lock().unwrap_or_else(|p| p.into_inner());
        all.iter()
            .filter(|(_, a)| a.expecting_action > 0 && !a.acted)
            .map(|(name, a)| {
                format!(
                    "scenario `{name}` never acted: none of its {} trial(s) where a correct agent acts reached ACTION_SUBMITTED or landed an effect, so its side effect was never tested (an agent that stops, or ends, before it acts passes nothing here)",
                    a.expecting_action
                )
            })
            .collect()
    }
}

fn run_one(trial: &Trial, settings: &TrialSettings, gate: &Gate) -> Result<(), Failed> {
    let started = std::time::Instant::now();
    let (outcome, result) = judge_one(trial, settings, gate);
    let outcome = outcome.unwrap_or_else(|| {
        let why = result
            .as_ref()
            .err()
            .and_then(Failed::message)
            .unwrap_or("failed")
            .to_owned();
        crate::report::TrialOutcome::errored(trial.name(), why, started.elapsed())
    });
    if let Some(progress) = &gate.progress {
        progress.trial_done(&trial.name(), result.is_ok());
    }
    gate.outcomes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(outcome);
    result
}

/// Runs and judges one trial: its outcome for the reports (when it ran), and its result.
fn judge_one(
    trial: &Trial,
    settings: &TrialSettings,
    gate: &Gate,
) -> (Option<crate::report::TrialOutcome>, Result<(), Failed>) {
    let started = std::time::Instant::now();
    let result = run_and_check(trial, settings, gate);
    match result {
        Ok(report) => (
            Some(crate::report::TrialOutcome::from_evidence(
                report.evidence,
                report.evidence_path,
                started.elapsed(),
            )),
            Ok(()),
        ),
        Err((Some(report), failed)) => {
            let message = failed.message().unwrap_or("failed").to_owned();
            let report = *report;
            let outcome = crate::report::TrialOutcome::from_evidence(
                report.evidence,
                report.evidence_path,
                started.elapsed(),
            )
            .with_status(crate::report::TrialStatus::Failed { message });
            (Some(outcome), Err(failed))
        }
        Err((None, failed)) => (None, Err(failed)),
    }
}

fn run_and_check(
    trial: &Trial,
    settings: &TrialSettings,
    gate: &Gate,
) -> Result<trial::TrialReport, (Option<Box<trial::TrialReport>>, Failed)> {
    gate.ran.fetch_add(1, Ordering::SeqCst);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| (None, format!("failed to start a tokio runtime: {e}").into()))?;
    let report = runtime
        .block_on(trial::run_trial(trial, settings))
        .map_err(|e| {
            if let trial::TrialError::Site(site) = &e {
                // The site never started: no worker, no profile, nothing to prove removed
                // (the trial's folder held its owner marker only, and is gone).
                gate.proven.fetch_add(1, Ordering::SeqCst);
                gate.site_unavailable
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(format!("{}: {}", trial.name(), error_chain(site)));
            }
            let why = format!("trial {} could not run: {}", trial.name(), error_chain(&e));
            (None, why.into())
        })?;
    if report.evidence.profile_cleaned {
        gate.proven.fetch_add(1, Ordering::SeqCst);
    }
    gate.record(trial, report.evidence.acted());
    if let Some(message) = report.failure_message() {
        let message = format!(
            "{message}\n  schedule: {}\n  replay: {}",
            trial.schedule(),
            trial::explore::replay_command(trial, settings.seed.unwrap_or(0))
        );
        return Err((Some(Box::new(report)), message.into()));
    }
    // Explored trials are generated from recordings (and seeds): their set is not fixed, so
    // they are judged by the oracle alone, not snapshotted.
    let explored = trial.then.is_some()
        || trial.seeded.is_some()
        || matches!(trial.plan, trial::FaultPlan::Step { .. });
    if let Some(dir) = settings.snapshot_dir.as_ref().filter(|_| !explored) {
        let evidence = report.evidence.clone();
        let dir = dir.clone();
        let stem = trial.name().replace("::", "__");
        let known = dir.join(format!("{stem}.snap")).exists();
        let pending = dir.join(format!("{stem}.snap.new"));
        let left = written_at(&pending);
        if quiet_panics(move || evidence.assert_snapshot(&dir)).is_err() {
            // A new snapshot outside CI is written for review and the trial stands on its
            // verdicts, as a first run must; in CI insta writes nothing and it fails.
            if !known && !insta_is_ci() && written_at(&pending).is_some_and(|w| Some(w) != left) {
                gate.new_snapshots.fetch_add(1, Ordering::SeqCst);
                return Ok(report);
            }
            let what = if known {
                "the evidence of {} differs from its snapshot"
            } else {
                "new snapshot of {}"
            };
            let why = format!(
                "{}: review it with `cargo insta review` (`cargo install cargo-insta` first), or accept \
                 it as it is by renaming its `.snap.new` to `.snap` (evidence: {})",
                what.replace("{}", &trial.name()),
                report.evidence_path.display()
            );
            return Err((Some(Box::new(report)), why.into()));
        }
    }
    Ok(report)
}

/// Whether insta takes this run for CI, by insta's own rule: `CI` set to anything but
/// `false`, `0` or empty, or (without `CI`) `TF_BUILD` set.
fn insta_is_ci() -> bool {
    match std::env::var("CI").ok().as_deref() {
        Some("false" | "0" | "") => false,
        None => std::env::var_os("TF_BUILD").is_some(),
        Some(_) => true,
    }
}

/// When `path` was last written, if it exists: a `.snap.new` this run wrote is one whose
/// time changed (or that is new), not one an earlier run left.
fn written_at(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Writes the run's HTML, JUnit and JSON reports under `<out>/reports` and says where. Under
/// nextest (a process per trial) each process would overwrite the others' report: there,
/// `browser-fault-report merge` rebuilds one from the evidence after the run.
fn write_reports(gate: &Gate, ignored: &[(String, &'static str)], settings: &TrialSettings) {
    if std::env::var_os("NEXTEST").is_some() {
        return;
    }
    let mut outcomes =
        std::mem::take(&mut *gate.outcomes.lock().unwrap_or_else(|p| p.into_inner()));
    outcomes.extend(
        ignored
            .iter()
            .map(|(name, why)| crate::report::TrialOutcome::ignored(name.clone(), *why)),
    );
    let stem = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|stem| match stem.rsplit_once('-') {
            // cargo's test binaries end in a hash: `reference-0123abcd…`.
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_owned(),
            _ => stem,
        })
        .unwrap_or_else(|| "browser-fault".to_owned());
    let report = crate::report::RunReport::new(stem.clone(), outcomes);
    match crate::report::write_all(&report, &settings.out_dir.join("reports"), &stem) {
        Ok(written) => eprintln!("browser-fault: reports: {written}"),
        Err(e) => eprintln!("browser-fault: the reports could not be written: {e}"),
    }
}

/// The orphan sweep of DESIGN.md's trial lifecycle: trial roots of earlier, dead runs.
fn sweep_before_run(settings: &TrialSettings) {
    let summary = trial::sweep_stale_roots(&settings.trial_root_base);
    if summary.removed_roots > 0 || summary.removed_profiles > 0 {
        eprintln!(
            "browser-fault: swept {} profile(s) in {} trial root(s) of earlier, dead runs",
            summary.removed_profiles, summary.removed_roots
        );
    }
    for (path, reason) in &summary.kept {
        eprintln!("browser-fault: kept {} ({reason})", path.display());
    }
}

/// Turns this process into one worker and exits, if the trial that spawned it asked.
/// Call it first thing in a custom `main`.
pub fn enter_worker_role_if_asked() {
    if let Some(launch) = crate::worker_role::worker_launch_from_env() {
        crate::worker_role::worker_process_main(launch);
    }
}

/// The ordinary-`#[test]` entry: runs every trial of one scenario inside one libtest test,
/// one after the other, and fails with every broken trial listed. In a worker process it
/// becomes that worker.
pub fn libtest_entry(module_path_in_test_mod: &'static str, name: &'static str) {
    enter_worker_role_if_asked();
    let module_path = module_path_in_test_mod
        .rsplit_once("::")
        .map_or(module_path_in_test_mod, |(m, _)| m);
    let Some(scenario) = scenario::find(module_path, name) else {
        panic!("browser-fault: scenario {module_path}::{name} is not registered in this binary");
    };
    let mut settings = TrialSettings::from_env();
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(|| sweep_before_run(&settings));
    // Re-enter this very test, alone, to be a worker.
    let test_path = match module_path_in_test_mod.split_once("::") {
        Some((_, rest)) => format!("{rest}::browser_fault_trials"),
        None => "browser_fault_trials".to_owned(),
    };
    settings.worker_args = vec![
        test_path,
        "--exact".into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
    ];
    let failures = run_scenario(scenario, &settings);
    assert!(
        failures.is_empty(),
        "{} trial(s) of {name} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn run_scenario(scenario: &'static Scenario, settings: &TrialSettings) -> Vec<String> {
    let gate = Gate::default();
    let mut failures: Vec<String> = trial::expand(scenario)
        .iter()
        .filter(|t| t.cannot_run_at(settings.webdriver_url.as_deref()).is_none())
        .filter_map(|t| {
            run_one(t, settings, &gate)
                .err()
                .map(|f| f.message().unwrap_or("failed").to_owned())
        })
        .collect();
    // The aggregate gate, here too: fail closed when a trial has no cleanup proof.
    let (ran, proven) = (
        gate.ran.load(Ordering::SeqCst),
        gate.proven.load(Ordering::SeqCst),
    );
    if ran != proven {
        failures.push(format!(
            "{} of {ran} trial(s) have no cleanup proof",
            ran - proven
        ));
    }
    failures.extend(gate.never_acted());
    failures
}

/// The `main` of a `harness = false` test target that runs every registered trial.
///
/// ```no_run
/// // tests/crash.rs, with `[[test]] name = "crash", harness = false` in Cargo.toml
/// use browser_fault::prelude::*;
///
/// #[browser_fault(at = "all")]
/// async fn send_message(w: &mut Worker) -> TaskResult { /* … */ Ok(Outcome::Completed) }
///
/// browser_fault::main!();
/// ```
///
/// With settings of your own, made in the test process only:
///
/// ```no_run
/// use browser_fault::trial::TrialSettings;
///
/// fn settings() -> TrialSettings {
///     let mut s = TrialSettings::from_env();
///     s.step_timeout = std::time::Duration::from_secs(40);
///     s
/// }
///
/// browser_fault::main!(settings = settings);
/// ```
#[macro_export]
macro_rules! main {
    () => {
        fn main() {
            $crate::runner::main()
        }
    };
    (settings = $settings:path $(,)?) => {
        fn main() {
            $crate::runner::main_with($settings)
        }
    };
}

thread_local! {
    /// Set while [`quiet_panics`] runs on this thread.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, catching its panic without the panic hook's report (a snapshot mismatch is
/// insta's panic: its diff is printed already, and the trial's failure says what to do; a
/// backtrace under `RUST_BACKTRACE=1` would only bury it). Panics on other threads are
/// reported as ever.
fn quiet_panics<R>(f: impl FnOnce() -> R + std::panic::UnwindSafe) -> std::thread::Result<R> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let result = std::panic::catch_unwind(f);
    QUIET.with(|q| q.set(false));
    result
}
