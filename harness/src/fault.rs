//! The fault engine's worker side: the fault points inside the worker's primitives, and the
//! channel on which a worker reports to the trial that runs it.
//!
//! A worker is armed with at most one [`Boundary`]. When it crosses that boundary it takes a
//! screenshot, reports [`WorkerEvent::Boundary`] and waits for the trial's word. For a crash
//! boundary the word never comes: in `kill` mode the trial SIGKILLs the worker's process
//! group; in `abort` mode it drops the worker's task. For `browser_crash` the trial kills the
//! browser and then lets the worker go on. Unarmed fault points cost one comparison.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::outcome::WorkerResult;
use crate::plan::Boundary;

/// A file the fault point wrote, named in evidence by file name and hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenshotRef {
    /// The file name, relative to the trial's evidence folder.
    pub file: String,
    /// The SHA-256 of the PNG, hex.
    pub sha256: String,
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
pub enum WorkerEvent {
    /// The worker is up and waits at the start gate (before claiming the lease) for the
    /// trial's word: how two workers are made to race for one profile at the same instant.
    Ready,
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
        boundary: Boundary,
        /// The screenshot taken at the fault point.
        screenshot: Option<ScreenshotRef>,
        /// The browser's pid, so the trial can kill just the browser.
        browser_pid: Option<u32>,
        /// Where the worker's time went so far.
        timing: WorkerTiming,
        /// Cookie values the browser held at the fault point: secrets the evidence must not
        /// show, whatever the site declared.
        #[serde(default)]
        cookie_values: Vec<String>,
        /// For [`Boundary::AfterStep`]: the step the worker had just completed.
        #[serde(default)]
        step: Option<Step>,
    },
    /// A recording worker completed a step (a browser command or a journal write).
    Step(Step),
    /// A recording worker crossed a boundary's fault point (armed or not).
    Crossed {
        /// Which.
        boundary: Boundary,
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
pub enum Resume {
    /// Go on.
    Continue,
    /// Reload the current page, then go on: the world changed under the live worker, and
    /// its tab shows it (another tab signed in, the tab was reused).
    Reload,
}

/// How a worker reaches its trial.
#[derive(Debug)]
pub(crate) enum Channel {
    /// A `kill`-mode worker process: one line of JSON per event on a Unix socket.
    Socket(
        tokio::sync::Mutex<(
            BufReader<tokio::net::unix::OwnedReadHalf>,
            tokio::net::unix::OwnedWriteHalf,
        )>,
    ),
    /// An `abort`-mode worker task.
    InProcess {
        events: mpsc::UnboundedSender<WorkerEvent>,
        resume: tokio::sync::Mutex<mpsc::UnboundedReceiver<Resume>>,
    },
    /// Nobody listens (a worker run outside a trial).
    Detached,
}

/// The worker side of the fault engine.
#[derive(Debug)]
pub struct FaultHook {
    armed: Option<Boundary>,
    channel: Channel,
    screenshot_dir: Option<PathBuf>,
    struck: Mutex<bool>,
    timing: Mutex<WorkerTiming>,
    /// The step after which the worker is crashed, if any.
    armed_step: Option<u32>,
    /// Whether every step and crossing is reported (a recording run).
    recording: bool,
    /// Steps completed so far.
    steps: AtomicU32,
    /// Set once a step struck: an `abort`-mode worker's task may not be dropped before its
    /// next await, and must neither write its journal nor drive its browser meanwhile.
    halted: AtomicBool,
}

impl FaultHook {
    /// A hook that never strikes and reports to nobody.
    pub fn detached() -> Self {
        FaultHook {
            armed: None,
            channel: Channel::Detached,
            screenshot_dir: None,
            struck: Mutex::new(false),
            timing: Mutex::new(WorkerTiming::default()),
            armed_step: None,
            recording: false,
            steps: AtomicU32::new(0),
            halted: AtomicBool::new(false),
        }
    }

    pub(crate) fn new(
        armed: Option<Boundary>,
        channel: Channel,
        screenshot_dir: Option<PathBuf>,
    ) -> Self {
        FaultHook {
            armed,
            channel,
            screenshot_dir,
            struck: Mutex::new(false),
            timing: Mutex::new(WorkerTiming::default()),
            armed_step: None,
            recording: false,
            steps: AtomicU32::new(0),
            halted: AtomicBool::new(false),
        }
    }

    /// Arms the step after which the worker is crashed, and turns recording on or off.
    pub(crate) fn with_steps(mut self, armed_step: Option<u32>, recording: bool) -> Self {
        self.armed_step = armed_step;
        self.recording = recording;
        self
    }

    /// Whether steps need counting at all (armed with a step, or recording).
    #[inline]
    fn counts_steps(&self) -> bool {
        self.armed_step.is_some() || self.recording
    }

    /// Whether the next step to complete is the armed one.
    pub(crate) fn next_step_is_armed(&self) -> bool {
        self.armed_step
            .is_some_and(|n| self.steps.load(Ordering::Acquire) + 1 == n)
    }

    /// Whether a step struck and this worker must do nothing more.
    pub(crate) fn halted(&self) -> bool {
        self.halted.load(Ordering::Acquire)
    }

    /// Counts a step: what a recording reports, and, at the armed step, the strike's event
    /// (the strike is marked and the worker halted before it is reported). `None`: steps are
    /// not counted in this worker.
    fn count_step(
        &self,
        label: &str,
        browser_pid: Option<u32>,
    ) -> Option<(WorkerEvent, Option<WorkerEvent>)> {
        if !self.counts_steps() {
            return None;
        }
        let n = self.steps.fetch_add(1, Ordering::AcqRel) + 1;
        let step = Step {
            n,
            label: label.to_owned(),
        };
        let strike = (self.armed_step == Some(n)).then(|| {
            *self.struck.lock().unwrap_or_else(|p| p.into_inner()) = true;
            self.halted.store(true, Ordering::Release);
            WorkerEvent::Boundary {
                boundary: Boundary::AfterStep,
                screenshot: None,
                browser_pid,
                timing: self.timing(),
                cookie_values: Vec::new(),
                step: Some(step.clone()),
            }
        });
        Some((WorkerEvent::Step(step), strike))
    }

    /// Counts a completed browser command. Recording, reports it; at the armed step, strikes
    /// and waits for the crash (which, for a step, always comes).
    pub(crate) async fn browser_step(&self, label: &str, browser_pid: Option<u32>) {
        let Some((recorded, strike)) = self.count_step(label, browser_pid) else {
            return;
        };
        if self.recording {
            self.report(recorded).await;
        }
        if let Some(strike) = strike {
            self.report(strike).await;
            // A step is always a crash: the trial's word never comes.
            std::future::pending::<()>().await;
        }
    }

    /// Counts a completed journal write, from synchronous code. Recording, reports it; at the
    /// armed step, reports the strike and never returns in a worker process (its process
    /// group is SIGKILLed), or halts an `abort`-mode task: from then on its journal writes
    /// fail and its browser commands never complete, until the task is dropped.
    pub(crate) fn journal_step(&self, label: &str) {
        let Some((recorded, strike)) = self.count_step(label, None) else {
            return;
        };
        if self.recording {
            self.report_now(recorded);
        }
        if let Some(strike) = strike {
            self.report_now(strike);
            if matches!(self.channel, Channel::Socket(_)) {
                // This process is about to be SIGKILLed with its group; nothing of it may run
                // on meanwhile.
                loop {
                    std::thread::park();
                }
            }
        }
    }

    /// Reports an event from synchronous code, without waiting.
    fn report_now(&self, event: WorkerEvent) {
        match &self.channel {
            Channel::Socket(stream) => {
                use std::io::Write;
                use std::os::fd::AsFd;
                let mut line = serde_json::to_vec(&event).unwrap_or_default();
                line.push(b'\n');
                // The worker's own code is sequential: no async report holds the socket now.
                let Ok(guard) = stream.try_lock() else {
                    return;
                };
                let Ok(fd) = guard.1.as_ref().as_fd().try_clone_to_owned() else {
                    return;
                };
                let mut sock = std::os::unix::net::UnixStream::from(fd);
                let mut rest = &line[..];
                while !rest.is_empty() {
                    match sock.write(rest) {
                        Ok(0) => return,
                        Ok(n) => rest = &rest[n..],
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => return,
                    }
                }
            }
            Channel::InProcess { events, .. } => {
                let _ = events.send(event);
            }
            Channel::Detached => {}
        }
    }

    /// A recording worker reports crossing `boundary`'s fault point.
    pub(crate) async fn crossed(&self, boundary: Boundary) {
        if self.recording {
            self.report(WorkerEvent::Crossed { boundary }).await;
        }
    }

    /// Connects a `kill`-mode worker to its trial's socket.
    pub(crate) async fn connect(
        armed: Option<Boundary>,
        socket: &std::path::Path,
        screenshot_dir: Option<PathBuf>,
    ) -> std::io::Result<Self> {
        let stream = tokio::net::UnixStream::connect(socket).await?;
        let (read, write) = stream.into_split();
        Ok(FaultHook::new(
            armed,
            Channel::Socket(tokio::sync::Mutex::new((BufReader::new(read), write))),
            screenshot_dir,
        ))
    }

    /// The boundary this worker is armed with.
    pub fn armed(&self) -> Option<Boundary> {
        self.armed
    }

    /// Whether `boundary` is armed and not yet struck. One comparison when unarmed.
    #[inline]
    pub fn is_armed_for(&self, boundary: Boundary) -> bool {
        self.armed == Some(boundary) && !*self.struck.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn screenshot_dir(&self) -> Option<&std::path::Path> {
        self.screenshot_dir.as_deref()
    }

    /// Reports an event without waiting.
    pub(crate) async fn report(&self, event: WorkerEvent) {
        match &self.channel {
            Channel::Socket(stream) => {
                let mut guard = stream.lock().await;
                let mut line = serde_json::to_vec(&event).unwrap_or_default();
                line.push(b'\n');
                let _ = guard.1.write_all(&line).await;
                let _ = guard.1.flush().await;
            }
            Channel::InProcess { events, .. } => {
                let _ = events.send(event);
            }
            Channel::Detached => {}
        }
    }

    /// Reports reaching the armed boundary and waits for the trial's word (which, for a
    /// crash, never comes).
    pub(crate) async fn strike(
        &self,
        boundary: Boundary,
        screenshot: Option<ScreenshotRef>,
        browser_pid: Option<u32>,
        cookie_values: Vec<String>,
    ) -> Resume {
        *self.struck.lock().unwrap_or_else(|p| p.into_inner()) = true;
        let timing = self.timing();
        self.report(WorkerEvent::Boundary {
            boundary,
            screenshot,
            browser_pid,
            timing,
            cookie_values,
            step: None,
        })
        .await;
        self.wait_resume().await
    }

    /// Adds time spent in browser commands.
    pub(crate) fn add_browser_time(&self, d: std::time::Duration) {
        self.timing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .browser_ms += ms(d);
    }

    /// Adds time spent launching a browser.
    pub(crate) fn add_launch_time(&self, d: std::time::Duration) {
        self.timing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .launch_ms += ms(d);
    }

    /// Adds time spent quitting a browser.
    pub(crate) fn add_quit_time(&self, d: std::time::Duration) {
        self.timing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .quit_ms += ms(d);
    }

    /// Where the worker's time went so far, with this process's peak memory.
    pub(crate) fn timing(&self) -> WorkerTiming {
        let mut t = *self.timing.lock().unwrap_or_else(|p| p.into_inner());
        t.peak_rss_kb = peak_rss_kb();
        t
    }

    /// Reports [`WorkerEvent::Ready`] and waits for the trial's word.
    pub(crate) async fn start_gate(&self) {
        self.report(WorkerEvent::Ready).await;
        self.wait_resume().await;
    }

    async fn wait_resume(&self) -> Resume {
        match &self.channel {
            Channel::Socket(stream) => {
                let mut guard = stream.lock().await;
                let mut line = String::new();
                // EOF means the trial is gone: wait to be killed rather than run on unobserved.
                if guard.0.read_line(&mut line).await.unwrap_or(0) == 0 {
                    std::future::pending::<()>().await;
                }
                serde_json::from_str(line.trim()).unwrap_or(Resume::Continue)
            }
            Channel::InProcess { resume, .. } => match resume.lock().await.recv().await {
                Some(word) => word,
                None => std::future::pending().await,
            },
            Channel::Detached => Resume::Continue,
        }
    }
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// This process's peak resident memory (`VmHWM` in `/proc/self/status`), in KiB.
pub fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Whether, where and when a trial's armed fault struck. A trial whose fault never struck
/// tested nothing, and fails with its own verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// What the trial meant to do, e.g. `crash at after_click` or `hazard expired_session
    /// after a crash at after_login`.
    pub planned: String,
    /// Whether it happened.
    pub struck: bool,
    /// The worker it struck.
    pub worker: Option<u32>,
    /// When, in ms from the trial's start.
    pub at_ms: Option<u64>,
    /// When it did not strike: what happened instead.
    pub instead: Option<String>,
    /// For a schedule of more than one fault, or a seeded one: which worker each fault was
    /// for, where, and whether it struck, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<ScheduledFault>,
}

/// One fault of a trial's schedule, as it went.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledFault {
    /// The worker it was for (1, then the recovery worker 2, …).
    pub worker: u32,
    /// Where: a boundary's name, or `step 7 (click)`.
    pub at: String,
    /// Whether it struck.
    pub struck: bool,
}
