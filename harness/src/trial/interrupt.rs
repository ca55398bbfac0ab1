//! The runner interrupted: on SIGINT or SIGTERM (what CI's cancel sends) the test process
//! stops every worker and browser of its trials, removes their roots with proof, and exits
//! non-zero saying exactly what it did. A SIGKILL cannot be caught: the worker process
//! groups die with their parent, the browsers this process started itself die with it
//! (`PR_SET_PDEATHSIG`), and the next run's sweep removes the roots (see [`super::sweep`]).
//!
//! One process-wide state decides whether anything may still start (`crate::startgate`,
//! a leaf below the browser layer): every trial root, worker process, chromedriver, trial
//! and in-process worker starts through it. Once the stop has begun, each of them is
//! refused, so nothing starts after the signal whatever step a trial is at, and the stop
//! knows every root and worker group there will ever be.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, Instant};

use crate::browser::process;
use crate::cleanup::{CleanupCoordinator, CleanupOutcome};
use crate::exit::ExitCode;
use crate::journal::Journal;
use crate::profile::ProfileStore;
pub(crate) use crate::startgate::{
    LiveGroup, LiveRoot, mark_reentrant, spawn_worker_process, unless_stopped,
};
use crate::startgate::{STOP, lock, stopping};

/// Installs the SIGINT and SIGTERM handlers of a runner, once per process: a thread of its
/// own waits for either, then [`stop_everything`] and exits.
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    // A runner's `main` enters the worker role (and a guarded start) first of all.
    mark_reentrant();
    ONCE.call_once(|| {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("browser-fault-signals".into())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    let _ = ready_tx.send(());
                    return;
                };
                runtime.block_on(async move {
                    use tokio::signal::unix::{SignalKind, signal};
                    let (Ok(mut int), Ok(mut term)) = (
                        signal(SignalKind::interrupt()),
                        signal(SignalKind::terminate()),
                    ) else {
                        let _ = ready_tx.send(());
                        return;
                    };
                    let _ = ready_tx.send(());
                    let (name, code) = tokio::select! {
                        _ = int.recv() => ("SIGINT", ExitCode::Interrupted),
                        _ = term.recv() => ("SIGTERM", ExitCode::Terminated),
                    };
                    let report = stop_everything().await;
                    report.print(name);
                    code.exit();
                });
            });
        // The handlers are in place before the first trial starts.
        if spawned.is_ok() {
            let _ = ready_rx.recv_timeout(Duration::from_secs(5));
        }
    });
}

/// Blocks forever once the run is being interrupted: the signal's thread cleans up and
/// exits the process with the signal's code; the trials it stopped must not end the run
/// first, with another code and half the cleanup done.
pub(crate) fn hold_if_interrupted() {
    if stopping() {
        loop {
            std::thread::park();
        }
    }
}

/// What an interrupt did.
#[derive(Debug, Default)]
pub(crate) struct StopReport {
    /// Trials running when the stop began.
    pub(crate) trials: usize,
    /// Worker process groups killed.
    pub(crate) groups: usize,
    /// Processes of the run killed (workers, chromedrivers, Chromiums and their helpers).
    pub(crate) killed: usize,
    /// Processes of the run still alive when the stop gave up waiting.
    pub(crate) alive: usize,
    /// Trial roots there were, and how many are gone now.
    pub(crate) roots: usize,
    pub(crate) roots_removed: usize,
    /// Profiles removed through the cleanup coordinator (containment proven).
    pub(crate) profiles_removed: usize,
    /// Trials that had not stopped when their roots were removed.
    pub(crate) unstopped: usize,
    /// What is left, and why.
    pub(crate) kept: Vec<(PathBuf, String)>,
}

impl StopReport {
    fn print(&self, signal: &str) {
        let mut line = format!(
            "browser-fault: interrupted by {signal}: stopped {} running trial(s): killed {} process(es) of the run ({} worker group(s)), {} still alive; {} of {} trial root(s) removed, their {} profile(s) removed with proof",
            self.trials,
            self.killed,
            self.groups,
            self.alive,
            self.roots_removed,
            self.roots,
            self.profiles_removed,
        );
        if self.unstopped > 0 {
            line.push_str(&format!(
                "; {} trial(s) had not stopped within {} s",
                self.unstopped,
                TRIALS_STOP_WITHIN.as_secs()
            ));
        }
        if self.kept.is_empty() {
            line.push_str("; nothing kept");
        } else {
            line.push_str(&format!(
                "; {} kept (the next run's sweep looks again):",
                self.kept.len()
            ));
        }
        eprintln!("{line}");
        for (path, why) in &self.kept {
            eprintln!("browser-fault:   kept {}: {why}", path.display());
        }
    }
}

/// The stop: nothing starts any more; every worker group and every process on a root of
/// this run is killed and seen dead; the trials are dropped at their next await; then each
/// root's profiles are removed through the cleanup coordinator and the root itself.
pub(crate) async fn stop_everything() -> StopReport {
    let (groups, roots) = {
        let mut state = lock();
        state.stopping = true;
        let groups: Vec<u32> = state.groups.iter().copied().collect();
        let roots: Vec<PathBuf> = state.roots.iter().cloned().collect();
        (groups, roots)
    };
    STOP.notify_waiters();
    let mut report = StopReport {
        trials: roots.len(),
        groups: groups.len(),
        roots: roots.len(),
        ..StopReport::default()
    };
    for pgid in &groups {
        process::kill_group(*pgid);
    }
    let (killed, alive) = kill_run_processes(&roots, &groups, PROCESSES_DEAD_WITHIN).await;
    report.killed = killed;
    report.alive = alive;
    // The trials' own futures are dropped at their next await; until then they may still
    // write in their roots (the journal and its side files). Removal waits for that.
    let deadline = tokio::time::Instant::now() + TRIALS_STOP_WITHIN;
    while lock().running > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    report.unstopped = lock().running;
    for root in &roots {
        remove_root(root, &mut report);
    }
    report
}

/// Removes the trial root `root`: its profiles through the cleanup coordinator (a profile
/// whose containment cannot be proven is kept, and so is its root), then the root itself.
fn remove_root(root: &Path, report: &mut StopReport) {
    if !root.exists() {
        // Its trial ended and removed it.
        report.roots_removed += 1;
        return;
    }
    let profiles_dir = root.join("profiles");
    // A store is opened only where there is one: opening one creates its folder.
    if profiles_dir.exists() {
        let store = match ProfileStore::open(&profiles_dir) {
            Ok(store) => store,
            Err(e) => {
                report
                    .kept
                    .push((root.to_owned(), format!("its profile store refused: {e}")));
                return;
            }
        };
        let profiles = store.profile_dirs();
        if !profiles.is_empty() {
            let journal = match Journal::open(&root.join("journal.sqlite3")) {
                Ok(journal) => journal,
                Err(e) => {
                    report.kept.push((
                        root.to_owned(),
                        format!(
                            "{} profile(s) and a journal that refused: {}",
                            profiles.len(),
                            e.kind()
                        ),
                    ));
                    return;
                }
            };
            let coordinator = CleanupCoordinator::new(&journal, &store);
            let mut unproven = Vec::new();
            for p in &profiles {
                process::kill_profile_processes(p);
                match coordinator.remove_profile(p).outcome {
                    CleanupOutcome::Cleaned => report.profiles_removed += 1,
                    outcome => unproven.push(format!("{} ({outcome:?})", file_name(p))),
                }
            }
            drop(journal);
            if !unproven.is_empty() {
                report.kept.push((
                    root.to_owned(),
                    format!(
                        "profile(s) whose removal could not be proven: {}",
                        unproven.join(", ")
                    ),
                ));
                return;
            }
        }
    }
    match super::sweep::remove_root(root) {
        Ok(()) => report.roots_removed += 1,
        Err(e) => report
            .kept
            .push((root.to_owned(), format!("removing it failed: {e}"))),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// How long the stop waits for the processes of the run to be dead.
const PROCESSES_DEAD_WITHIN: Duration = Duration::from_millis(1500);

/// How long the stop waits for the stopped trials' futures to be dropped before it removes
/// their roots regardless.
const TRIALS_STOP_WITHIN: Duration = Duration::from_secs(3);

/// Kills every live process of the run and waits until none is left (or `within` passed):
/// the members of the worker groups, and every process whose environment or command line
/// names a trial root (chromedrivers and Chromiums run with `TMPDIR` in their root and
/// their profile in it; Chromium's crash handler leaves every process group, not its
/// `TMPDIR`). Nothing new starts meanwhile, so the scan converges. Returns (processes
/// killed, processes still alive).
async fn kill_run_processes(roots: &[PathBuf], groups: &[u32], within: Duration) -> (usize, usize) {
    let needles: Vec<Vec<u8>> = roots
        .iter()
        .flat_map(|r| process::path_needles(r))
        .collect();
    let me = std::process::id();
    let my_group = nix::unistd::getpgrp().as_raw().unsigned_abs();
    let mut killed = BTreeSet::new();
    let deadline = Instant::now() + within;
    loop {
        let alive = process::processes_naming(&needles, groups, me);
        if alive.is_empty() {
            return (killed.len(), 0);
        }
        if Instant::now() >= deadline {
            return (killed.len(), alive.len());
        }
        for (pid, pgid) in alive {
            process::kill_pid(pid);
            // A group leader of its own (an in-process chromedriver): its whole group, so a
            // Chromium it is forking right now goes too.
            if pgid == pid && pgid != my_group {
                process::kill_group(pgid);
            }
            killed.insert(pid);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
