//! Trials beyond the named boundaries, generated at run time from recorded runs (never by
//! the macro, so they cost no compile time):
//!
//! - `every_step = N`: a clean run of the scenario is recorded, each browser command and
//!   journal write numbered; one trial crashes worker 1 right after each step
//!   (`send_message::step::0007_click`), at most `N`, sampled evenly.
//! - `depth = 2`: each plain crash trial is recorded, with the fault points its recovery
//!   worker crossed; one trial crashes the recovery too at each of them, and a third worker
//!   must recover (`send_message::after_click::landed::then::after_target_verified`).
//! - `seeded = N`: `N` trials whose schedule (crash point, variant, hazard, a second crash)
//!   a seed picks from all of the above (`send_message::seeded::03`). The seed is
//!   `BROWSER_FAULT_SEED`, else the day's number, and is printed on every run.
//!
//! Recordings are kept under `<out>/recordings/`, keyed by the test binary and the trial, so
//! one recording serves every process of a run (nextest runs a process per trial).

use std::path::PathBuf;

use sha2::Digest;

use super::conclude::WorkerRecording;
use super::engine::run_trial_with;
use super::error::TrialError;
use super::{FaultPlan, Trial, TrialSettings};
use crate::plan::{Boundary, Variant};
use crate::scenario::Scenario;

/// The environment variable that sets the seed of seeded trials.
pub const SEED_ENV: &str = "BROWSER_FAULT_SEED";

/// The fault points a recovery worker may be crashed at in a depth-2 trial: the crash
/// boundaries (at `after_click` the site holds the request's response, as for worker 1's
/// `landed`).
const THEN_POINTS: [Boundary; 5] = [
    Boundary::AfterProfileCreated,
    Boundary::AfterLogin,
    Boundary::AfterTargetVerified,
    Boundary::AfterClick,
    Boundary::AfterRemoteEffect,
];

/// This run's seed: `BROWSER_FAULT_SEED` (decimal, or hex with `0x`), else the number of
/// the day (UTC), the same in every process of a run started that day. The runner puts it
/// in [`TrialSettings::seed`] when the settings do not name one.
pub fn run_seed() -> Result<u64, SeedError> {
    match std::env::var(SEED_ENV) {
        Ok(text) => parse_seed(&text).ok_or(SeedError { given: text }),
        Err(_) => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() / 86_400)),
    }
}

/// `BROWSER_FAULT_SEED` is set to something that is not a number.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed to read {SEED_ENV}={given:?}: expected a number (decimal, or 0x… hex)")]
#[non_exhaustive]
pub struct SeedError {
    /// The variable's value.
    pub given: String,
}

/// Why a scenario's explored trials could not be made. Messages read after "failed to …"
/// and name the recording and where its evidence is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExploreError {
    /// The settings name no seed, and `BROWSER_FAULT_SEED` is not a number.
    #[error(transparent)]
    Seed(#[from] SeedError),
    /// The recordings' tokio runtime could not be started.
    #[error("failed to start a tokio runtime for the recordings")]
    Runtime(#[source] std::io::Error),
    /// A recording's trial could not run at all.
    #[error("failed to record {trial}")]
    Recording {
        /// The recorded trial's name.
        trial: String,
        /// Why it could not run.
        #[source]
        source: Box<TrialError>,
    },
    /// A recording did not go as its plan says, in every attempt.
    #[error(
        "failed to record {trial}: it did not go as planned in {attempts} runs, the last one because {why} (see {})",
        evidence.display()
    )]
    NotAsPlanned {
        /// The recorded trial's name.
        trial: String,
        /// How many runs were made.
        attempts: u32,
        /// What the last run did instead.
        why: String,
        /// The last run's evidence.
        evidence: PathBuf,
    },
    /// The clean run did not finish, so it has no steps to crash after.
    #[error(
        "failed to find the steps of {scenario}: its clean run did not finish (see its evidence under {})",
        evidence.display()
    )]
    CleanRunUnfinished {
        /// The scenario.
        scenario: &'static str,
        /// The recordings' evidence folder.
        evidence: PathBuf,
    },
}

fn parse_seed(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Whether a run with these name filters could select one of the scenario's explored
/// trials (so that a run of one named trial does not record anything).
pub(crate) fn wanted(scenario: &Scenario, filters: &[String], exact: bool) -> bool {
    if !scenario.explore.any() {
        return false;
    }
    if filters.is_empty() {
        return true;
    }
    let prefix = format!("{}::", scenario.name);
    filters.iter().any(|f| {
        let explored = f.contains("::step::") || f.contains("::then::") || f.contains("::seeded::");
        if exact {
            explored && f.starts_with(&prefix)
        } else {
            explored || prefix.contains(f.as_str()) || f == scenario.name
        }
    })
}

/// The scenario's explored trials (`every_step`, `depth = 2`, `seeded`) under the seed of
/// `settings` (when it names none, [`run_seed`]'s). Records what is not recorded yet, with
/// a tokio runtime of its own: call it outside one. An error names the recording that
/// failed.
pub fn explore(
    scenario: &'static Scenario,
    settings: &TrialSettings,
) -> Result<Vec<Trial>, ExploreError> {
    let seed = match settings.seed {
        Some(seed) => seed,
        None => run_seed()?,
    };
    let explore = scenario.explore;
    let mut trials = Vec::new();
    let need_clean = explore.every_step > 0 || explore.seeded > 0;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ExploreError::Runtime)?;
    let mut steps = Vec::new();
    if need_clean {
        let clean = Trial::new(scenario, FaultPlan::Clean);
        let recorded = runtime.block_on(recorded(&clean, settings))?;
        let first = recorded
            .iter()
            .find(|w| w.incarnation == 1)
            .filter(|w| w.finished)
            .ok_or_else(|| ExploreError::CleanRunUnfinished {
                scenario: scenario.name,
                evidence: settings.out_dir.join("recordings"),
            })?;
        steps = first
            .steps
            .iter()
            .map(|s| {
                Trial::new(
                    scenario,
                    FaultPlan::Step {
                        step: s.n,
                        label: leak_label(&s.label),
                    },
                )
            })
            .collect();
        trials.extend(sample_evenly(&steps, explore.every_step as usize));
    }
    let mut doubles = Vec::new();
    if explore.depth >= 2 {
        let firsts: Vec<Trial> = super::expand(scenario)
            .into_iter()
            .filter(|t| t.cannot_run().is_none() && plain_crash(t.plan))
            .collect();
        let recorded: Vec<Result<Vec<WorkerRecording>, ExploreError>> = runtime.block_on(async {
            use futures_util::StreamExt;
            futures_util::stream::iter(firsts.iter().map(|t| recorded(t, settings)))
                .buffered(2)
                .collect()
                .await
        });
        for (first, workers) in firsts.iter().zip(recorded) {
            let workers = workers?;
            let Some(recovery) = workers.iter().find(|w| w.incarnation == 2) else {
                continue;
            };
            let mut seen = Vec::new();
            for b in recovery.crossed.iter().filter_map(|p| p.boundary()) {
                if THEN_POINTS.contains(&b) && !seen.contains(&b) {
                    seen.push(b);
                    let mut t = *first;
                    t.then = Some(b);
                    doubles.push(t);
                }
            }
        }
        trials.extend(doubles.iter().copied());
    }
    if explore.seeded > 0 {
        let mut pool: Vec<Trial> = super::expand(scenario)
            .into_iter()
            .filter(|t| t.cannot_run().is_none())
            .collect();
        pool.extend(steps.iter().copied());
        pool.extend(doubles.iter().copied());
        let base = seed ^ name_hash(scenario.name);
        for k in 0..explore.seeded {
            let pick = splitmix64(base.wrapping_add(u64::from(k)));
            let mut t = pool[usize::try_from(pick % pool.len() as u64).unwrap_or(0)];
            t.seeded = Some(k);
            trials.push(t);
        }
    }
    Ok(trials)
}

/// A crash of worker 1 that a recovery follows and that arms nothing but worker 1.
fn plain_crash(plan: FaultPlan) -> bool {
    match plan {
        FaultPlan::Boundary {
            boundary:
                Boundary::AfterProfileCreated
                | Boundary::AfterLogin
                | Boundary::AfterTargetVerified
                | Boundary::AfterRemoteEffect,
            variant: None,
        } => true,
        FaultPlan::Boundary {
            boundary: Boundary::AfterClick,
            variant: Some(v),
        } => v == Variant::LANDED || v == Variant::LOST,
        _ => false,
    }
}

/// At most `n` of `all`, evenly spread, first and last included.
fn sample_evenly<T: Copy>(all: &[T], n: usize) -> Vec<T> {
    if n == 0 || all.is_empty() {
        return Vec::new();
    }
    if all.len() <= n {
        return all.to_vec();
    }
    if n == 1 {
        return vec![all[0]];
    }
    let last = all.len() - 1;
    let mut picked: Vec<usize> = (0..n).map(|i| i * last / (n - 1)).collect();
    picked.dedup();
    picked.into_iter().map(|i| all[i]).collect()
}

/// Labels live as long as the process: a step trial's plan is `Copy`.
fn leak_label(label: &str) -> &'static str {
    static LABELS: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut labels = LABELS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = labels.iter().find(|l| **l == label) {
        return known;
    }
    let leaked: &'static str = Box::leak(label.to_owned().into_boxed_str());
    labels.push(leaked);
    leaked
}

/// How many times a recording is made before its failure is reported: a run that did not go
/// as its plan says (a browser that did not start under load) is no recording of it.
const RECORDING_ATTEMPTS: u32 = 3;

/// The recording of `trial`: from the cache when this binary recorded it before, else
/// recorded now and kept. Only a run that went as planned is kept (see [`unusable`]); one
/// that did not is made again, up to [`RECORDING_ATTEMPTS`] times.
async fn recorded(
    trial: &Trial,
    settings: &TrialSettings,
) -> Result<Vec<WorkerRecording>, ExploreError> {
    let path = cache_path(trial, settings);
    let cached = || {
        path.as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|bytes| serde_json::from_slice::<Vec<WorkerRecording>>(&bytes).ok())
    };
    if let Some(known) = cached() {
        return Ok(known);
    }
    // One recording of a trial at a time, in this process and in any other of the same
    // out folder: whoever waited finds the first one's in the cache.
    let _held = settings
        .hold(&format!("recording::{}", trial.name()))
        .await
        .map_err(|e| ExploreError::Recording {
            trial: trial.name(),
            source: Box::new(super::error::folders_err(e)),
        })?;
    if let Some(known) = cached() {
        return Ok(known);
    }
    // A recording's evidence stays apart from the run's (reports merge the run's folder).
    let mut apart = settings.clone();
    apart.out_dir = settings.out_dir.join("recordings");
    let mut attempt = 1;
    let report = loop {
        let report =
            run_trial_with(trial, &apart, true)
                .await
                .map_err(|e| ExploreError::Recording {
                    trial: trial.name(),
                    source: Box::new(e),
                })?;
        match unusable(trial.plan == FaultPlan::Clean, &report.evidence) {
            None => break report,
            Some(why) if attempt >= RECORDING_ATTEMPTS => {
                return Err(ExploreError::NotAsPlanned {
                    trial: trial.name(),
                    attempts: attempt,
                    why,
                    evidence: report.evidence_path,
                });
            }
            Some(_) => attempt += 1,
        }
    };
    let recordings = report.recordings;
    if let Some(path) = path
        && let Some(dir) = path.parent()
        && std::fs::create_dir_all(dir).is_ok()
        && let Ok(json) = serde_json::to_vec(&recordings)
    {
        // Whole or not at all: another process may read it at any moment.
        let tmp = path.with_extension(format!(
            "tmp{}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        if std::fs::write(&tmp, json).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
    Ok(recordings)
}

/// Why a recorded run is no recording of its plan, if it is not: its fault did not strike,
/// or, for the clean run, worker 1 did not run to its end or its browser failed under it.
/// Trials generated from such a run would test another schedule than they name.
fn unusable(clean: bool, evidence: &crate::evidence::Evidence) -> Option<String> {
    use crate::worker::{FailureKind, WorkerResult};
    if !clean {
        return (!evidence.fault.struck).then(|| {
            format!(
                "its fault did not strike ({})",
                evidence
                    .fault
                    .instead
                    .as_deref()
                    .unwrap_or("no reason given")
            )
        });
    }
    let first = evidence.workers.iter().find(|w| w.incarnation == 1)?;
    match &first.result {
        None => Some(format!("worker 1 did not run to its end ({:?})", first.end)),
        Some(WorkerResult::Err(
            kind @ (FailureKind::BrowserCrashed
            | FailureKind::Browser
            | FailureKind::Timeout
            | FailureKind::Died),
        )) => Some(format!("worker 1 failed: {kind:?}")),
        Some(_) => None,
    }
}

/// Where `trial`'s recording is kept: keyed by this test binary (its size and time) and the
/// trial, so a rebuilt binary records again.
fn cache_path(trial: &Trial, settings: &TrialSettings) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let meta = std::fs::metadata(&exe).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    let mut hash = sha2::Sha256::new();
    hash.update(exe.as_os_str().as_encoded_bytes());
    hash.update(meta.len().to_le_bytes());
    hash.update(modified.as_nanos().to_le_bytes());
    hash.update(trial.scenario.module_path.as_bytes());
    hash.update(trial.name().as_bytes());
    hash.update(trial.crash_mode.as_str().as_bytes());
    let key: String = hash.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(
        settings
            .out_dir
            .join("recordings")
            .join(format!("{key}.json")),
    )
}

fn name_hash(name: &str) -> u64 {
    let digest = sha2::Sha256::digest(name.as_bytes());
    u64::from_le_bytes(digest[..8].try_into().unwrap_or([0; 8]))
}

/// SplitMix64: a seed in, a well-mixed number out; the same everywhere.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The one command that reruns `trial` exactly: its seed, its package and test target, its
/// name.
pub fn replay_command(trial: &Trial, seed: u64) -> String {
    let seed = if trial.seeded.is_some() {
        format!("{SEED_ENV}={seed} ")
    } else {
        String::new()
    };
    let name = trial.name();
    let target = std::env::current_exe().ok().and_then(|exe| {
        let stem = exe.file_stem()?.to_string_lossy().into_owned();
        Some(match stem.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_owned(),
            _ => stem,
        })
    });
    match (std::env::var("CARGO_PKG_NAME").ok(), target) {
        (Some(package), Some(target)) => {
            format!("{seed}cargo test -p {package} --test {target} -- '{name}' --exact")
        }
        _ => {
            let exe = std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "<test binary>".to_owned());
            format!("{seed}{exe} '{name}' --exact")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_keeps_the_ends_and_the_budget() {
        let all: Vec<u32> = (1..=100).collect();
        let picked = sample_evenly(&all, 5);
        assert_eq!(picked, [1, 25, 50, 75, 100]);
        assert_eq!(sample_evenly(&all[..3], 5), [1, 2, 3]);
        assert!(sample_evenly(&all, 0).is_empty());
        assert_eq!(sample_evenly(&all, 1), [1]);
    }

    #[test]
    fn seeds_parse_in_decimal_and_hex() {
        assert_eq!(parse_seed("42"), Some(42));
        assert_eq!(parse_seed(" 0x2a "), Some(42));
        assert_eq!(parse_seed("forty"), None);
        let e = SeedError {
            given: "forty".to_owned(),
        };
        assert_eq!(
            e.to_string(),
            "failed to read BROWSER_FAULT_SEED=\"forty\": expected a number (decimal, or 0x… hex)"
        );
    }

    /// A recording whose worker 1 never got a browser (seen under load: "Chrome instance
    /// exited"), so its crash at `after_click` never struck.
    fn without_browser() -> crate::evidence::Evidence {
        serde_json::from_str(include_str!("testdata/recording_without_browser.json")).unwrap()
    }

    #[test]
    fn a_crash_recording_whose_fault_did_not_strike_is_refused() {
        let mut e = without_browser();
        let why = unusable(false, &e).expect("refused");
        assert!(why.contains("did not strike"), "{why}");
        e.fault.struck = true;
        assert_eq!(unusable(false, &e), None);
    }

    #[test]
    fn a_clean_recording_needs_worker_1_to_end_without_a_browser_failure() {
        use crate::worker::Outcome;
        use crate::worker::{FailureKind, WorkerResult};
        let mut e = without_browser();
        let why = unusable(true, &e).expect("refused");
        assert!(why.contains("Browser"), "{why}");
        e.workers[0].result = Some(WorkerResult::Ok(Outcome::Confirmed));
        assert_eq!(unusable(true, &e), None);
        // An agent's own verdict is what the clean run recorded, not a failed run.
        e.workers[0].result = Some(WorkerResult::Err(FailureKind::Scenario));
        assert_eq!(unusable(true, &e), None);
        e.workers[0].result = None;
        assert!(unusable(true, &e).is_some());
    }

    #[test]
    fn the_same_seed_picks_the_same() {
        assert_eq!(splitmix64(7), splitmix64(7));
        assert_ne!(splitmix64(7), splitmix64(8));
    }
}
