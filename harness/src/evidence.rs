//! Evidence: the bounded, redacted record of a trial, written as JSON beside the fault-point
//! screenshot, and snapshotted with insta so that a diff means a behaviour changed.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// How a trial's cleanup of a profile ended ([`CleanupEvidence::outcome`]).
pub use crate::cleanup::CleanupOutcome;
/// What a worker measured and reported: its timing, the step a step crash struck after, a
/// screenshot's file.
pub use crate::fault::{ScreenshotRef, Step, WorkerTiming};
use crate::journal::Checkpoint;
/// What the fault engine recorded: a fault that struck or was scheduled.
pub use crate::oracle::{FaultRecord, ScheduledFault};
use crate::oracle::{LeakedProfile, Verdict};
use crate::plan::Variant;
use crate::plan::{CrashMode, FaultPoint, Hazard};
use crate::worker::WorkerResult;

/// How a worker's life ended, as the trial saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerEnd {
    /// It reported a result and exited.
    Finished,
    /// The fault engine killed it at its boundary.
    Crashed,
    /// It exceeded the trial's timeout and was killed.
    TimedOut,
    /// It died without a word.
    Died,
}

/// One worker of a trial.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerEvidence {
    /// The incarnation.
    pub incarnation: u32,
    /// The fault point it was armed with.
    pub armed: Option<FaultPoint>,
    /// The fault point where it struck.
    pub struck: Option<FaultPoint>,
    /// What it reported.
    pub result: Option<WorkerResult>,
    /// How its life ended.
    pub end: WorkerEnd,
    /// From spawn to a running browser, in ms.
    pub start_ms: u64,
    /// From spawn to its end, in ms.
    pub total_ms: u64,
    /// Where its time went, as it measured it (up to its crash, for a crashed worker).
    pub timing: WorkerTiming,
    /// The last 8 KiB of its log, with a truncation marker; known secrets redacted.
    pub log_tail: String,
    /// Each side effect's verify step: what it actually checked before `TARGET_VERIFIED`.
    #[serde(default)]
    pub verified: Vec<Verification>,
    /// What its profile check found that makes the profile untrustworthy (a rollback,
    /// another browser version), after any migration; empty: trusted.
    #[serde(default)]
    pub untrusted_profile: Vec<String>,
    /// Its locks that someone removed or replaced while it held them.
    #[serde(default)]
    pub tampered: Vec<String>,
    /// For a step crash: the step it had just completed when it was crashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub struck_step: Option<Step>,
    /// What the agent left running in the worker's process group after the worker ended
    /// (its own chromedriver, a helper it spawned), by command name; the harness killed them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stray_processes: Vec<String>,
    /// Whether its scenario (the agent's code) began. `false` for a worker struck or refused
    /// in the harness's own code before it: crashed at `after_profile_created` right after
    /// its launch, refused the profile's lease by `concurrent_profile`. Such a worker tests
    /// the harness's guards, not the agent (see [`Evidence::before_scenario`]). Written only
    /// when `false`.
    #[serde(default = "began", skip_serializing_if = "is_began")]
    pub scenario_began: bool,
}

/// What evidence written before `scenario_began` was recorded means: the scenario began.
fn began() -> bool {
    true
}

fn is_began(began: &bool) -> bool {
    *began
}

/// What one verify step checked before its side effect was journaled `TARGET_VERIFIED`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verification {
    /// The side effect.
    pub effect: String,
    /// The checks that passed (`origin`, `route`, `account`, `tenant`, `object`,
    /// `api_identity`, `no_interstitial`); empty: the step checked nothing.
    pub checked: Vec<String>,
}

/// One checkpoint transition, as states (never page content).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceStep {
    /// The side effect's name.
    pub effect: String,
    /// The state before (`None` when the intent was recorded).
    pub from: Option<Checkpoint>,
    /// The state after.
    pub to: Checkpoint,
    /// The incarnation that wrote it.
    pub incarnation: u32,
}

/// What the site accepted, in counts and ids.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerSummary {
    /// Accepted effects.
    pub effects: usize,
    /// The accounts they were attributed to, in sequence order.
    pub accounts: Vec<String>,
    /// The objects they acted on, in sequence order.
    pub objects: Vec<String>,
}

/// One profile removal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupEvidence {
    /// The profile folder's name (not its path: paths vary).
    pub profile: String,
    /// The outcome.
    pub outcome: CleanupOutcome,
}

/// Where a trial's time went, in ms. Chromium's own work is `browser_launch_ms`,
/// `browser_quit_ms` and `browser_steps_ms` (inside WebDriver commands); what is left of
/// `total_ms` is the harness's and the agent's own.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Durations {
    /// Starting the site, the journal and the profile.
    pub setup_ms: u64,
    /// From spawning each worker to its running browser, summed (process start, lease,
    /// session record, browser launch).
    pub worker_start_ms: u64,
    /// Launching browsers (chromedriver and Chromium up, session created), summed.
    pub browser_launch_ms: u64,
    /// Quitting browsers, summed.
    pub browser_quit_ms: u64,
    /// Inside browser commands (navigations, waits, clicks, API calls), summed.
    pub browser_steps_ms: u64,
    /// The first worker(s), from spawn to crash or end.
    pub scenario_ms: u64,
    /// The recovery worker, from spawn to end.
    pub recovery_ms: u64,
    /// Collecting facts and judging.
    pub oracle_ms: u64,
    /// Removing profiles and folders.
    pub cleanup_ms: u64,
    /// The whole trial.
    pub total_ms: u64,
}

/// Peak resident memory, in KiB (Chromium excluded).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    /// The test process that runs the trials, so far.
    pub runner_peak_rss_kb: u64,
    /// The largest worker process of the trial (for `abort` mode, the test process).
    pub worker_peak_rss_kb: u64,
}

/// The record of one trial.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The trial's stable name.
    pub trial: String,
    /// The scenario.
    pub scenario: String,
    /// The boundary, for boundary trials.
    pub boundary: Option<FaultPoint>,
    /// The variant.
    pub variant: Option<Variant>,
    /// The hazard, for hazard trials.
    pub hazard: Option<Hazard>,
    /// The crash mode.
    pub crash_mode: CrashMode,
    /// The workers, in incarnation order.
    pub workers: Vec<WorkerEvidence>,
    /// The checkpoint history of the run.
    pub checkpoint_trace: Vec<TraceStep>,
    /// What the site accepted.
    pub ledger: LedgerSummary,
    /// One verdict per invariant.
    pub verdicts: Vec<Verdict>,
    /// Whether every invariant held.
    pub passed: bool,
    /// Whether every profile of the trial was removed, with proof.
    pub profile_cleaned: bool,
    /// Each profile removal.
    pub cleanup: Vec<CleanupEvidence>,
    /// Chromium temp folders left in the workers' TMPDIRs (removed with the trial root).
    pub chromium_temp_dirs: usize,
    /// Where the time went.
    pub durations: Durations,
    /// Peak memory.
    pub memory: Memory,
    /// The fault-point screenshot.
    pub screenshot: Option<ScreenshotRef>,
    /// Why the fault point's screenshot was not kept: the page it showed held a secret (its
    /// kind and where, never its value), or could not be checked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_withheld: Option<String>,
    /// Whether, where and when the trial's fault struck.
    pub fault: FaultRecord,
    /// Profiles left behind by the agent, with who made them.
    pub leaks: Vec<LeakedProfile>,
    /// What deserves a look although no invariant broke (a verify step that checked
    /// nothing…).
    pub warnings: Vec<String>,
}

impl Evidence {
    /// The verdicts that did not hold.
    pub fn broken(&self) -> impl Iterator<Item = &Verdict> {
        self.verdicts.iter().filter(|v| !v.held)
    }

    /// Writes `evidence.json` into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<std::path::PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("evidence.json");
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&path, json)?;
        Ok(path)
    }

    /// Counts the occurrences of `secrets` in the evidence as serialized.
    pub fn count_secrets(&self, secrets: &[String]) -> usize {
        let text = serde_json::to_string(self).unwrap_or_default();
        count_in(&text, secrets)
    }

    /// Replaces every occurrence of `secrets` in the evidence's free-text fields (log tails,
    /// effect names, warnings) with [`REDACTED`]; returns how many there were.
    pub fn redact(&mut self, secrets: &[String]) -> usize {
        let mut found = 0;
        let mut fix = |s: &mut String| {
            let (out, n) = redact(s, secrets);
            if n > 0 {
                *s = out;
                found += n;
            }
        };
        for w in &mut self.workers {
            fix(&mut w.log_tail);
            for v in &mut w.verified {
                fix(&mut v.effect);
            }
        }
        for t in &mut self.checkpoint_trace {
            fix(&mut t.effect);
        }
        for a in self
            .ledger
            .accounts
            .iter_mut()
            .chain(self.ledger.objects.iter_mut())
            .chain(self.warnings.iter_mut())
        {
            fix(a);
        }
        if let Some(instead) = &mut self.fault.instead {
            fix(instead);
        }
        // Whatever else holds one (it should be none of the structured fields).
        found + self.count_secrets(secrets)
    }

    /// Whether any worker of the trial acted: a side effect reached `ACTION_SUBMITTED`, or
    /// the site accepted one.
    pub fn acted(&self) -> bool {
        self.ledger.effects > 0
            || self
                .checkpoint_trace
                .iter()
                .any(|t| t.to == Checkpoint::ActionSubmitted)
    }

    /// The workers of this trial that never ran the agent's code, one line each, saying where
    /// the harness stopped them (`worker 1 was crashed at after_profile_created before its
    /// scenario began`, `worker 2 ended with safe_stop(lease_held) before its scenario
    /// began`). Not empty: in those workers the fault struck the harness's own code
    /// (its launch, its profile lease), and what the trial judges of the agent is how the
    /// other workers start on what was left: a guard of the harness and a clean restart, not
    /// the agent's recovery from a step of its own. The runner lists these trials at the end
    /// of a run.
    pub fn before_scenario(&self) -> Vec<String> {
        self.workers
            .iter()
            .filter(|w| !w.scenario_began)
            .map(|w| {
                let n = w.incarnation;
                match (w.struck, w.result) {
                    (Some(point), _) => {
                        format!("worker {n} was crashed at {point} before its scenario began")
                    }
                    (None, Some(WorkerResult::Err(kind))) => format!(
                        "worker {n} ended with {} before its scenario began",
                        kind.name()
                    ),
                    (None, _) => format!("worker {n} ended before its scenario began"),
                }
            })
            .collect()
    }

    /// Asserts the insta snapshot of this evidence in `snapshot_dir`, named after the trial.
    /// Times, hashes and log tails are redacted: they vary from run to run.
    pub fn assert_snapshot(&self, snapshot_dir: &Path) {
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(snapshot_dir);
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.set_description(format!("browser-fault evidence of {}", self.trial));
        settings.add_redaction(".durations", "[durations]");
        settings.add_redaction(".workers[].start_ms", "[ms]");
        settings.add_redaction(".workers[].timing", "[timing]");
        settings.add_redaction(".memory", "[memory]");
        settings.add_redaction(".workers[].total_ms", "[ms]");
        settings.add_redaction(".workers[].log_tail", "[log tail]");
        settings.add_redaction(".screenshot.sha256", "[sha256]");
        settings.add_redaction(".chromium_temp_dirs", "[count]");
        settings.add_redaction(".cleanup[].profile", "[profile]");
        settings.add_redaction(".leaks[].profile", "[profile]");
        settings.add_redaction(".fault.at_ms", "[ms]");
        let mut view = self.clone();
        if self.boundary == Some(FaultPoint::ConcurrentProfile) {
            // Which of the two racing workers wins is the race's to decide: the snapshot
            // keeps what must hold (one winner, one safe stop), not who.
            view.workers
                .sort_by_key(|w| serde_json::to_string(&w.result).unwrap_or_default());
            settings.add_redaction(".workers[].incarnation", "[racer]");
            settings.add_redaction(".checkpoint_trace[].incarnation", "[racer]");
            settings.add_redaction(".verdicts[3].explanation", "[one winner, one safe stop]");
        }
        let name = self.trial.replace("::", "__");
        settings.bind(|| insta::assert_json_snapshot!(name, view));
    }
}

/// Counts the occurrences of any of `secrets` in every file under `dir` (screenshots and
/// anything else a trial wrote there), read as bytes, and overwrites each occurrence in
/// every file but an image with `[REDACTED]`: a secret is counted, never kept on disk.
pub fn redact_files(dir: &Path, secrets: &[String]) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut found = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found += redact_files(&path, secrets);
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let (redacted, n) = redact_bytes(&bytes, secrets);
        found += n;
        let image = path.extension().is_some_and(|e| e == "png");
        if n > 0 && !image {
            let _ = std::fs::write(&path, redacted);
        }
    }
    found
}

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// `text` with every occurrence of `secrets` replaced by [`REDACTED`], and how many there
/// were. Longer secrets first, so a secret that contains another is replaced whole.
pub fn redact(text: &str, secrets: &[String]) -> (String, usize) {
    let (bytes, found) = redact_bytes(text.as_bytes(), secrets);
    // Whole UTF-8 sequences are replaced by ASCII: the result is still UTF-8.
    (String::from_utf8_lossy(&bytes).into_owned(), found)
}

fn redact_bytes(bytes: &[u8], secrets: &[String]) -> (Vec<u8>, usize) {
    let mut sorted: Vec<&[u8]> = secrets
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| s.as_bytes())
        .collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = bytes.to_vec();
    let mut found = 0;
    for s in sorted {
        let mut next = Vec::with_capacity(out.len());
        let mut i = 0;
        while i < out.len() {
            if out[i..].starts_with(s) {
                next.extend_from_slice(REDACTED.as_bytes());
                i += s.len();
                found += 1;
            } else {
                next.push(out[i]);
                i += 1;
            }
        }
        out = next;
    }
    (out, found)
}

/// Counts the occurrences of any of `secrets` in `text`.
pub fn count_in(text: &str, secrets: &[String]) -> usize {
    secrets
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| text.matches(s.as_str()).count())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_replaces_every_occurrence_longest_first_and_counts_them() {
        let secrets = vec!["abcCANARY".to_owned(), "abcCANARYdef".to_owned()];
        let (out, n) = redact("x abcCANARYdef y abcCANARY z", &secrets);
        assert_eq!(out, "x [REDACTED] y [REDACTED] z");
        assert_eq!(n, 2);
    }

    #[test]
    fn redact_files_removes_secrets_from_text_files_and_counts_images() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("log.txt"), "cookie=SECRETVALUE1;").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.png"), b"\x89PNGSECRETVALUE1").unwrap();
        let n = redact_files(dir.path(), &["SECRETVALUE1".to_owned()]);
        assert_eq!(n, 2);
        let text = std::fs::read_to_string(dir.path().join("log.txt")).unwrap();
        assert_eq!(text, "cookie=[REDACTED];");
        // A second pass finds only what an image still holds.
        assert_eq!(redact_files(dir.path(), &["SECRETVALUE1".to_owned()]), 1);
    }
}
