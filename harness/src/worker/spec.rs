//! What a trial hands to each incarnation of a worker.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Account;
use crate::browser::BrowserBinaries;
#[cfg(doc)]
use crate::browser::BrowserOptions;
use crate::plan::FaultPoint;

/// Everything a worker needs to start: what a trial hands to each incarnation (serialized
/// into the environment of a `kill`-mode worker process).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkerSpec {
    /// The run this worker belongs to.
    pub run_id: String,
    /// 1 for the first worker, 2 for the recovery worker, …
    pub incarnation: u32,
    /// The journal file.
    pub journal_path: PathBuf,
    /// The profile root.
    pub profile_root: PathBuf,
    /// The profile to run on.
    pub profile_path: PathBuf,
    /// This worker's `TMPDIR` (a killed Chromium leaves a folder there).
    pub tmp_dir: PathBuf,
    /// Where fault-point screenshots go.
    pub evidence_dir: Option<PathBuf>,
    /// The site's origin, e.g. `http://127.0.0.1:41234`.
    pub origin: String,
    /// The account to act as.
    pub account: Account,
    /// The boundary armed for this worker.
    pub armed: Option<FaultPoint>,
    /// The step (numbered from 1) after which this worker is crashed.
    #[serde(default)]
    pub armed_step: Option<u32>,
    /// Report every step and fault point crossed (a recording run).
    #[serde(default)]
    pub record_steps: bool,
    /// The limit of one step (a navigation, a wait, a click).
    pub step_timeout: Duration,
    /// The lease's time to live.
    pub lease_ttl: Duration,
    /// A remote WebDriver endpoint instead of a local chromedriver.
    pub webdriver_url: Option<String>,
    /// The fault proxy the browser's requests go through (`http://127.0.0.1:PORT`), loopback
    /// included; `None`: straight to the site.
    pub proxy: Option<String>,
    /// What of the proxy's own certificates the browser trusts: the value of Chromium's
    /// `--ignore-certificate-errors-spki-list` (the proxy intercepts an HTTPS origin).
    #[serde(default)]
    pub proxy_trust: Option<String>,
    /// Whether chromedriver gets a process group of its own (off for `kill`-mode worker
    /// processes, whose whole group dies together).
    pub own_process_group: bool,
    /// Start Chromium on `about:blank` (see [`BrowserOptions::fast_first_navigation`]).
    pub fast_first_navigation: bool,
    /// Wait at the start gate for the trial's word before claiming the lease.
    pub start_gate: bool,
    /// The profile is removed once this worker has ended (the last worker of a trial): end
    /// its local browser by SIGKILL, waiting until every process on the profile is dead,
    /// instead of a polite quit (0.1-0.2 s) that would only tidy a profile about to go. A
    /// remote browser is always quit politely.
    pub discard_profile_after: bool,
    /// The browser binaries, found once by the trial (`None`: find them).
    pub binaries: Option<BrowserBinaries>,
    /// The run's scratch folder ([`Worker::scratch_dir`](super::Worker::scratch_dir)), the
    /// same for every worker of the run; `None`: `scratch` beside `tmp_dir`.
    #[serde(default)]
    pub scratch_dir: Option<PathBuf>,
    /// The folder where the trial's proxy notes the sign-ins and effects it saw answered:
    /// the boundaries the worker's endpoints read from the network for an agent that marks
    /// none. `None`: none are read.
    #[serde(default)]
    pub network_marks: Option<PathBuf>,
}

impl WorkerSpec {
    /// A spec with the defaults: incarnation 1, nothing armed, 20 s steps, a 120 s lease,
    /// a local chromedriver in its own process group, the fast first navigation.
    pub fn new(
        run_id: impl Into<String>,
        journal_path: impl Into<PathBuf>,
        profile_root: impl Into<PathBuf>,
        profile_path: impl Into<PathBuf>,
        tmp_dir: impl Into<PathBuf>,
        origin: impl Into<String>,
        account: Account,
    ) -> Self {
        WorkerSpec {
            run_id: run_id.into(),
            incarnation: 1,
            journal_path: journal_path.into(),
            profile_root: profile_root.into(),
            profile_path: profile_path.into(),
            tmp_dir: tmp_dir.into(),
            evidence_dir: None,
            origin: origin.into(),
            account,
            armed: None,
            armed_step: None,
            record_steps: false,
            step_timeout: Duration::from_secs(20),
            lease_ttl: Duration::from_secs(120),
            webdriver_url: None,
            proxy: None,
            proxy_trust: None,
            own_process_group: true,
            fast_first_navigation: true,
            start_gate: false,
            discard_profile_after: false,
            binaries: None,
            scratch_dir: None,
            network_marks: None,
        }
    }
}
