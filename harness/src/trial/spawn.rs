//! Starting workers and killing them: a child process in its own process group (`kill`),
//! or a task in this process (`abort`). The worker role of the re-entered test binary (its
//! `main`, and one worker's life) is `crate::worker_role`.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::browser::process;
use crate::fault::{Resume, WorkerEvent};
use crate::logtail::LogTail;
use crate::plan::CrashMode;
use crate::scenario::Scenario;
use crate::worker::hook::{Channel, FaultHook};
use crate::worker::{LogSink, WorkerSpec};
use crate::worker_role::{WORKER_ENV, WorkerLaunch, run_worker};

/// The trial's side of one worker.
#[derive(Debug)]
pub(crate) struct WorkerHandle {
    events: mpsc::UnboundedReceiver<WorkerEvent>,
    control: Control,
    log: Arc<Mutex<LogTail>>,
    profile: PathBuf,
    /// The worker's process group, known to an interrupt until the worker is reaped.
    group: Option<super::interrupt::LiveGroup>,
    /// What the agent left running in the worker's process group after the worker exited on
    /// its own (by command name; killed since).
    strays: Vec<String>,
}

#[derive(Debug)]
enum Control {
    Process {
        child: tokio::process::Child,
        pgid: u32,
        resume: Option<tokio::net::unix::OwnedWriteHalf>,
    },
    Task {
        task: tokio::task::JoinHandle<()>,
        resume: mpsc::UnboundedSender<Resume>,
    },
}

impl WorkerHandle {
    /// The next event, or `None` once the worker is gone.
    pub(crate) async fn next_event(&mut self) -> Option<WorkerEvent> {
        self.events.recv().await
    }

    /// Lets a worker waiting at a boundary go on.
    pub(crate) async fn resume(&mut self) {
        self.resume_with(Resume::Continue).await;
    }

    /// Lets a worker waiting at a boundary go on, with this word.
    pub(crate) async fn resume_with(&mut self, word: Resume) {
        match &mut self.control {
            Control::Process {
                resume: Some(w), ..
            } => {
                let mut line = serde_json::to_vec(&word).unwrap_or_default();
                line.push(b'\n');
                let _ = w.write_all(&line).await;
            }
            Control::Process { resume: None, .. } => {}
            Control::Task { resume, .. } => {
                let _ = resume.send(word);
            }
        }
    }

    /// The crash: SIGKILL of the worker's process group (`kill`), or the worker's task
    /// dropped and its browser tree killed (`abort`). Returns when the worker is gone.
    pub(crate) async fn crash(&mut self) {
        // Who to wait for is read before the kill: a dying process's command line reads as
        // empty, so it can no longer be found by its profile path.
        let browsers = process::processes_using_profile(&self.profile);
        match &mut self.control {
            Control::Process { child, pgid, .. } => {
                process::kill_group(*pgid);
                let _ = child.wait().await;
            }
            Control::Task { task, .. } => {
                task.abort();
                let _ = (&mut *task).await;
            }
        }
        // Reaped: its group id may be reused from now on, and is never signalled again.
        self.group = None;
        // Whatever of the browser outlived its group (nothing, when the group kill worked),
        // and then wait until all of it is dead: a SIGKILL lands asynchronously, and the
        // recovery worker must find the old browser's lock held by a dead pid, not a dying one.
        // The pids were read before the kill: they are only waited for here, never signalled
        // again (one may already be dead and its pid reused).
        process::kill_profile_processes(&self.profile);
        process::wait_all_dead(&browsers, Duration::from_secs(10)).await;
    }

    /// Waits until the worker has exited on its own, up to `limit`; kills it past that.
    /// Returns whether it exited on its own.
    pub(crate) async fn wait_exit(&mut self, limit: Duration) -> bool {
        let exited = match &mut self.control {
            Control::Process { child, .. } => {
                tokio::time::timeout(limit, child.wait()).await.is_ok()
            }
            Control::Task { task, .. } => tokio::time::timeout(limit, &mut *task).await.is_ok(),
        };
        if !exited {
            self.crash().await;
        } else if let Control::Process { pgid, .. } = &self.control {
            // A worker's process group outlives it only by what the agent left in it: its
            // own chromedriver, a helper it spawned. (A crash killed the whole group.)
            let profile_root = self.profile.parent().unwrap_or(&self.profile);
            self.strays = process::strays_of_group(*pgid, profile_root, STRAY_GRACE).await;
        }
        self.group = None;
        exited
    }

    /// What the agent left running in the worker's process group ([`Self::wait_exit`]).
    pub(crate) fn take_strays(&mut self) -> Vec<String> {
        std::mem::take(&mut self.strays)
    }

    /// The last 8 KiB of the worker's log.
    pub(crate) fn log_tail(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).text()
    }
}

/// How long a process left in an exited worker's group may take to finish dying before it
/// counts as left running.
const STRAY_GRACE: Duration = Duration::from_secs(5);

/// Starts one worker for `scenario` in `mode`.
pub(crate) async fn spawn_worker(
    scenario: &'static Scenario,
    mut spec: WorkerSpec,
    mode: CrashMode,
    worker_args: &[String],
    trial_root: &std::path::Path,
) -> std::io::Result<WorkerHandle> {
    let log = Arc::new(Mutex::new(LogTail::default()));
    let (tx, rx) = mpsc::unbounded_channel();
    let profile = spec.profile_path.clone();
    match mode {
        CrashMode::Abort => {
            spec.own_process_group = true;
            let (resume_tx, resume_rx) = mpsc::unbounded_channel();
            let channel = Channel::InProcess {
                events: tx,
                resume: tokio::sync::Mutex::new(resume_rx),
            };
            let hook = Arc::new(
                FaultHook::new(spec.armed, channel, spec.evidence_dir.clone())
                    .with_steps(spec.armed_step, spec.record_steps),
            );
            let sink = LogSink::Tail(log.clone());
            // Dropped when the run is interrupted, browser and all; never started after.
            let task = tokio::spawn(super::interrupt::unless_stopped(async move {
                run_worker(scenario, spec, hook, sink).await;
            }));
            Ok(WorkerHandle {
                events: rx,
                control: Control::Task {
                    task,
                    resume: resume_tx,
                },
                log,
                profile,
                group: None,
                strays: Vec::new(),
            })
        }
        _ => {
            spec.own_process_group = false;
            let socket = trial_root.join(format!("w{}.sock", spec.incarnation));
            let _ = std::fs::remove_file(&socket);
            let listener = tokio::net::UnixListener::bind(&socket)?;
            let launch = WorkerLaunch {
                spec,
                module_path: scenario.module_path.to_owned(),
                scenario: scenario.name.to_owned(),
                socket: socket.clone(),
            };
            // The agent's own temporary files (its own chromedriver's, a tempfile of its own)
            // stay inside the trial, and go with it.
            std::fs::create_dir_all(&launch.spec.tmp_dir)?;
            let exe = std::env::current_exe()?;
            let mut cmd = tokio::process::Command::new(exe);
            cmd.env("TMPDIR", &launch.spec.tmp_dir);
            cmd.args(worker_args)
                .env(
                    WORKER_ENV,
                    serde_json::to_string(&launch).map_err(std::io::Error::other)?,
                )
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .kill_on_drop(true);
            // Refused once the run is being interrupted; otherwise known to the stop at once.
            let (mut child, group) = super::interrupt::spawn_worker_process(&mut cmd)?;
            let pgid = child.id().unwrap_or(0);
            let group = Some(group);
            for pipe in [
                child
                    .stdout
                    .take()
                    .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
                child
                    .stderr
                    .take()
                    .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
            ]
            .into_iter()
            .flatten()
            {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut pipe = pipe;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = pipe.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        log.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(&buf[..n]);
                    }
                });
            }
            let accepted = accept_worker(&listener, &mut child).await;
            let _ = std::fs::remove_file(&socket);
            let Some(stream) = accepted else {
                process::kill_group(pgid);
                let _ = child.wait().await;
                drop(tx);
                return Ok(WorkerHandle {
                    events: rx,
                    control: Control::Process {
                        child,
                        pgid,
                        resume: None,
                    },
                    log,
                    profile,
                    group: None,
                    strays: Vec::new(),
                });
            };
            let (read, write) = stream.into_split();
            tokio::spawn(async move {
                let mut lines = BufReader::new(read).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(event) = serde_json::from_str::<WorkerEvent>(&line) {
                        let _ = tx.send(event);
                    }
                }
            });
            Ok(WorkerHandle {
                events: rx,
                control: Control::Process {
                    child,
                    pgid,
                    resume: Some(write),
                },
                group,
                log,
                profile,
                strays: Vec::new(),
            })
        }
    }
}

/// Waits for a `kill`-mode worker to connect to its trial's socket: `None` when it exits
/// (or 60 s pass) without connecting.
///
/// The accept comes first (`biased`): a worker that finishes fast (a profile its check
/// refused, so no browser) can connect, report its whole life and exit before this is first
/// polled. Then both branches are ready, and an unbiased select took the exit half the time:
/// the connection, result and all, was dropped and the worker judged "died without a
/// result" (seen under load in the downstream suite). A connection that was made waits in
/// the listener's backlog, so it always wins.
async fn accept_worker(
    listener: &tokio::net::UnixListener,
    child: &mut tokio::process::Child,
) -> Option<tokio::net::UnixStream> {
    tokio::select! {
        biased;
        a = listener.accept() => a.ok().map(|(stream, _)| stream),
        _ = child.wait() => None,
        _ = tokio::time::sleep(Duration::from_secs(60)) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::accept_worker;

    /// A worker that connected and exited before the trial looked: its connection is taken,
    /// every time (an unbiased select dropped it half the time; 20 rounds catch that but for
    /// one chance in a million).
    #[tokio::test]
    async fn a_worker_that_connected_and_exited_before_the_trial_looked_is_still_heard() {
        let dir = tempfile::tempdir().unwrap();
        for round in 0..20 {
            let socket = dir.path().join(format!("w{round}.sock"));
            let listener = tokio::net::UnixListener::bind(&socket).unwrap();
            let mut child = tokio::process::Command::new("true").spawn().unwrap();
            let _client = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            // The child has exited, and its status is known: both branches are ready.
            child.wait().await.unwrap();
            assert!(
                accept_worker(&listener, &mut child).await.is_some(),
                "round {round}: the connection was dropped for the exit"
            );
        }
    }

    #[tokio::test]
    async fn a_worker_that_exits_without_connecting_is_seen_gone() {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::UnixListener::bind(dir.path().join("w.sock")).unwrap();
        let mut child = tokio::process::Command::new("true").spawn().unwrap();
        assert!(accept_worker(&listener, &mut child).await.is_none());
    }
}
