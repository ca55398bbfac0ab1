//! What the suites of agents run as commands (`python_agent`, `node_agent`) share: the
//! careful version's matrix, each trial expected to pass, and the faulty versions' trials,
//! each expected to break exactly the intended invariants.

use browser_fault::oracle::Invariant;
use browser_fault::trial::{self, Trial, TrialSettings};
use libtest_mimic::{Arguments, Failed, Trial as Test};

/// What such a suite's `main` starts from.
#[derive(Debug)]
pub struct Suite {
    /// The runner's arguments.
    pub args: Arguments,
    /// The test-name filters given.
    pub filters: Vec<String>,
    /// Trial settings without snapshots (these suites judge verdicts, not evidence).
    pub settings: TrialSettings,
    /// Every trial of the binary's scenarios.
    pub all: Vec<Trial>,
}

/// Enters the worker role when this process is a worker, reads the arguments, and, unless
/// only listing, installs the agent's packages with `install` (exiting with what failed,
/// naming `packages`).
pub fn start(
    packages: &str,
    install: impl FnOnce() -> Result<std::path::PathBuf, String>,
) -> Suite {
    browser_fault::runner::enter_worker_role_if_asked();
    let (args, filters) = browser_fault::runner::arguments(std::env::args());
    let mut settings = TrialSettings::from_env();
    settings.snapshot_dir = None;
    if !args.list
        && let Err(e) = install()
    {
        eprintln!("{packages} could not be installed: {e}");
        std::process::exit(1);
    }
    let all = trial::scenarios()
        .into_iter()
        .flat_map(trial::expand)
        .collect();
    Suite {
        args,
        filters,
        settings,
        all,
    }
}

/// One test per trial of the scenario `careful` (`<trial>::passes`), and one per entry of
/// `caught` (`<trial>::caught_by_<invariants>`): the trial breaks exactly those. What cannot
/// run here (a grid's orphaned session) is listed, ignored.
pub fn careful_and_caught(
    all: &[Trial],
    settings: &TrialSettings,
    careful: &str,
    caught: &'static [(&'static str, &'static [Invariant])],
) -> Vec<Test> {
    let prefix = format!("{careful}::");
    let mut tests: Vec<Test> = all
        .iter()
        .filter(|t| t.name().starts_with(&prefix))
        .map(|t| {
            let (t, settings) = (*t, settings.clone());
            let cannot = t.cannot_run_at(settings.webdriver_url.as_deref()).is_some();
            Test::test(format!("{}::passes", t.name()), move || {
                crate::run_expecting(&t, &settings, &[])
            })
            .with_ignored_flag(cannot)
        })
        .collect();
    for &(name, expected) in caught {
        let trial = all.iter().find(|t| t.name() == name).copied();
        let settings = settings.clone();
        let label = expected
            .iter()
            .map(|i| i.as_str())
            .collect::<Vec<_>>()
            .join("_and_");
        tests.push(Test::test(
            format!("{name}::caught_by_{label}"),
            move || {
                let trial = trial.ok_or_else(|| Failed::from(format!("no trial {name}")))?;
                crate::run_expecting(&trial, &settings, expected)
            },
        ));
    }
    tests
}

/// `tests` narrowed to the names that contain one of `filters` (all of them without one).
pub fn filtered(tests: Vec<Test>, filters: &[String]) -> Vec<Test> {
    tests
        .into_iter()
        .filter(|t| filters.is_empty() || filters.iter().any(|f| t.name().contains(f.as_str())))
        .collect()
}
