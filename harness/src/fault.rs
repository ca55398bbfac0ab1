//! The parent/child protocol of the fault engine: what a worker reports to the trial that
//! runs it ([`WorkerEvent`]: its start, its steps, the fault point it reached, its end), the
//! trial's word back ([`Resume`]), and what those reports measure.
//!
//! A worker is armed with at most one [`FaultPoint`]. When it crosses that point it takes a
//! screenshot, reports [`WorkerEvent::Boundary`] and waits for the trial's word. For a crash
//! point the word never comes: in `kill` mode the trial SIGKILLs the worker's process group;
//! in `abort` mode it drops the worker's task. For `browser_crash` the trial kills the
//! browser and then lets the worker go on. The worker's side is its fault hook
//! (`worker/hook.rs`); the trial's is `trial/drive.rs`.

use serde::{Deserialize, Serialize};

use crate::outcome::WorkerResult;
use crate::plan::FaultPoint;

/// A file the fault point wrote, named in evidence by file name and hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenshotRef {
    /// The file name, relative to the trial's evidence folder.
    pub file: String,
    /// The SHA-256 of the PNG, hex.
    pub sha256: String,
}

/// What came of a fault point's screenshot: kept, or withheld because the page it shows held
/// a secret (or could not be checked for one). The reason names the secret's kind and where
/// it showed, never its value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shot {
    /// The screenshot kept in the evidence folder.
    pub(crate) kept: Option<ScreenshotRef>,
    /// Why a screenshot that was taken was not kept.
    pub(crate) withheld: Option<String>,
}

/// Where a worker's time went, as it measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerTiming {
    /// Launching the browser (chromedriver and Chromium up, session created), in ms.
    pub launch_ms: u64,
    /// Inside browser commands (navigations, waits, clicks, API calls), in ms.
    pub browser_ms: u64,
    /// Quitting the browser, in ms.
    pub quit_ms: u64,
    /// The worker process's peak resident memory (`VmHWM`), in KiB.
    pub peak_rss_kb: u64,
}

/// What a worker tells the trial that runs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub(crate) enum WorkerEvent {
    /// The worker is up and waits at the start gate (before claiming the lease) for the
    /// trial's word: how two workers are made to race for one profile at the same instant.
    Ready,
    /// The worker started and its scenario (the agent's code) begins now: a worker that
    /// never sends this was struck, or refused, in the harness's own code before it.
    ScenarioBegan,
    /// The worker holds its lease and its browser runs.
    Started {
        /// The browser's pid, when known.
        browser_pid: Option<u32>,
        /// The worker's browser-session id.
        browser_session_id: String,
        /// How long the browser took to launch, in ms.
        launch_ms: u64,
    },
    /// The worker reached its armed boundary and waits.
    Boundary {
        /// Which.
        boundary: FaultPoint,
        /// The screenshot taken at the fault point.
        screenshot: Option<ScreenshotRef>,
        /// Why the fault point's screenshot was not kept (the page showed a secret).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        screenshot_withheld: Option<String>,
        /// The browser's pid, so the trial can kill just the browser.
        browser_pid: Option<u32>,
        /// Where the worker's time went so far.
        timing: WorkerTiming,
        /// Cookie values the browser held at the fault point: secrets the evidence must not
        /// show, whatever the site declared.
        #[serde(default)]
        cookie_values: Vec<String>,
        /// For [`FaultPoint::AfterStep`]: the step the worker had just completed.
        #[serde(default)]
        step: Option<Step>,
    },
    /// A recording worker completed a step (a browser command or a journal write).
    Step(Step),
    /// A recording worker crossed a boundary's fault point (armed or not).
    Crossed {
        /// Which.
        boundary: FaultPoint,
    },
    /// The worker checked its profile against the journal: what makes it untrustworthy (a
    /// rollback, another browser version). Sent at start, and again after a migration.
    ProfileChecked {
        /// The findings that `Worker::require_trusted_profile` refuses; empty: trusted.
        untrusted: Vec<String>,
    },
    /// A side effect's verify step passed and `TARGET_VERIFIED` is about to be journaled.
    Verified {
        /// The side effect.
        effect: String,
        /// What the verify step actually checked (`origin`, `route`, `account`, `tenant`,
        /// `object`, `api_identity`, `no_interstitial`); empty when it checked nothing.
        checked: Vec<String>,
    },
    /// The scenario returned.
    Finished {
        /// How it ended.
        result: WorkerResult,
        /// Where the worker's time went.
        timing: WorkerTiming,
        /// Cookie values the browser held at the end.
        #[serde(default)]
        cookie_values: Vec<String>,
        /// Locks of the worker's that someone removed or replaced while it held them.
        #[serde(default)]
        tampered: Vec<String>,
    },
}

/// One step of a worker: a browser command or a journal write, numbered from 1 in the order
/// the worker made them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Step {
    /// Its number.
    pub n: u32,
    /// What it was: a browser command (`goto`, `click`, `fill`, …) or `journal_` and the
    /// checkpoint written (`journal_target_verified`).
    pub label: String,
}

/// The trial's word to a worker waiting at a boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Resume {
    /// Go on.
    Continue,
    /// Reload the current page, then go on: the world changed under the live worker, and
    /// its tab shows it (another tab signed in, the tab was reused).
    Reload,
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// This process's peak resident memory (`VmHWM` in `/proc/self/status`), in KiB.
pub(crate) fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
