//! The fault hook: the worker's side of the fault engine. It knows the point (or step) the
//! worker is armed at, counts steps, and reports to the trial over its channel (a socket to
//! the parent, or a channel to a trial in this process); unarmed fault points cost one
//! comparison.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::fault::{Resume, Shot, Step, WorkerEvent, WorkerTiming, ms, peak_rss_kb};
use crate::plan::FaultPoint;

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
    armed: Option<FaultPoint>,
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
        FaultHook::new(None, Channel::Detached, None)
    }

    pub(crate) fn new(
        armed: Option<FaultPoint>,
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
                boundary: FaultPoint::AfterStep,
                screenshot: None,
                screenshot_withheld: None,
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
    pub(crate) fn report_now(&self, event: WorkerEvent) {
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
    pub(crate) async fn crossed(&self, boundary: FaultPoint) {
        if self.recording {
            self.report(WorkerEvent::Crossed { boundary }).await;
        }
    }

    /// Connects a `kill`-mode worker to its trial's socket.
    pub(crate) async fn connect(
        armed: Option<FaultPoint>,
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
    pub fn armed(&self) -> Option<FaultPoint> {
        self.armed
    }

    /// Whether `boundary` is armed and not yet struck. One comparison when unarmed.
    #[inline]
    pub fn is_armed_for(&self, boundary: FaultPoint) -> bool {
        self.armed == Some(boundary) && !*self.struck.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether crossing `boundary` matters to this worker: it is armed there, or recording
    /// (a recording reports every crossing).
    pub(crate) fn watches(&self, boundary: FaultPoint) -> bool {
        self.recording || self.is_armed_for(boundary)
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
        boundary: FaultPoint,
        screenshot: Shot,
        browser_pid: Option<u32>,
        cookie_values: Vec<String>,
    ) -> Resume {
        *self.struck.lock().unwrap_or_else(|p| p.into_inner()) = true;
        let timing = self.timing();
        self.report(WorkerEvent::Boundary {
            boundary,
            screenshot: screenshot.kept,
            screenshot_withheld: screenshot.withheld,
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
