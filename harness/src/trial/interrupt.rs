//! The runner interrupted: on SIGINT or SIGTERM (what CI's cancel sends) the test process
//! stops every worker and browser of its trials, removes their profiles with proof, and
//! exits non-zero saying so. A SIGKILL cannot be caught: the worker process groups die with
//! their pipes, and the next run's sweep removes the roots (see [`super::sweep`]).
//!
//! Trials register what they start: their root ([`LiveRoot`]) and each worker process
//! group ([`LiveGroup`]); the guards take them out again when the trial ends, so an
//! interrupt never signals a process group whose id a finished worker left for reuse.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use std::time::Duration;

use crate::browser::process;
use crate::cleanup::{CleanupCoordinator, CleanupOutcome};
use crate::journal::Journal;
use crate::profile::ProfileStore;

static ROOTS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
/// The live worker groups, and whether the run was interrupted (no new worker after that).
static GROUPS: Mutex<(BTreeSet<u32>, bool)> = Mutex::new((BTreeSet::new(), false));

/// A trial root of this process, registered while its trial runs.
#[derive(Debug)]
pub(crate) struct LiveRoot(PathBuf);

impl LiveRoot {
    pub(crate) fn register(root: &Path) -> LiveRoot {
        lock(&ROOTS).insert(root.to_owned());
        LiveRoot(root.to_owned())
    }
}

impl Drop for LiveRoot {
    fn drop(&mut self) {
        lock(&ROOTS).remove(&self.0);
    }
}

/// A worker's process group, registered while its handle lives.
#[derive(Debug)]
pub(crate) struct LiveGroup(u32);

impl LiveGroup {
    /// Registers a worker's group; `None` when the run is being interrupted, and then the
    /// group has been killed: no worker outlives an interrupt that began before it.
    pub(crate) fn register(pgid: u32) -> Option<LiveGroup> {
        let mut groups = lock(&GROUPS);
        if groups.1 {
            drop(groups);
            process::kill_group(pgid);
            return None;
        }
        if pgid != 0 {
            groups.0.insert(pgid);
        }
        Some(LiveGroup(pgid))
    }
}

impl Drop for LiveGroup {
    fn drop(&mut self) {
        lock(&GROUPS).0.remove(&self.0);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Exit code after SIGINT (128 + 2, as a shell reports it).
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit code after SIGTERM (128 + 15).
pub const EXIT_TERMINATED: i32 = 143;

/// Installs the SIGINT and SIGTERM handlers of a runner, once per process: a thread of its
/// own waits for either, then [`stop_everything`] and exits.
pub(crate) fn install() {
    static ONCE: Once = Once::new();
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
                        _ = int.recv() => ("SIGINT", EXIT_INTERRUPTED),
                        _ = term.recv() => ("SIGTERM", EXIT_TERMINATED),
                    };
                    let roots = lock(&ROOTS).len();
                    eprintln!(
                        "browser-fault: interrupted by {name}: stopping the workers and browsers of {roots} running trial(s) and removing their profiles"
                    );
                    let (removed, kept) = stop_everything().await;
                    eprintln!(
                        "browser-fault: interrupted by {name}: {removed} profile(s) removed with proof, {kept} kept (see the sweep of the next run)"
                    );
                    std::process::exit(code);
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
    if lock(&GROUPS).1 {
        loop {
            std::thread::park();
        }
    }
}

/// Kills every registered worker group and every process on a profile of a registered
/// root, then removes each profile through the cleanup coordinator and each root it
/// emptied. Returns (profiles removed, profiles kept).
pub(crate) async fn stop_everything() -> (usize, usize) {
    let groups: Vec<u32> = {
        let mut groups = lock(&GROUPS);
        groups.1 = true;
        groups.0.iter().copied().collect()
    };
    for pgid in &groups {
        process::kill_group(*pgid);
    }
    let roots: Vec<PathBuf> = lock(&ROOTS).iter().cloned().collect();
    let (mut removed, mut kept) = (0, 0);
    let mut emptied = Vec::new();
    for root in roots {
        let Ok(store) = ProfileStore::open(root.join("profiles")) else {
            continue;
        };
        let profiles = store.profile_dirs();
        let mut on_profiles = Vec::new();
        for p in &profiles {
            on_profiles.extend(process::processes_using_profile(p));
            process::kill_profile_processes(p);
        }
        process::kill_and_wait(&on_profiles, Duration::from_secs(5)).await;
        let Ok(journal) = Journal::open(&root.join("journal.sqlite3")) else {
            kept += profiles.len();
            continue;
        };
        let coordinator = CleanupCoordinator::new(&journal, &store);
        for p in &profiles {
            match coordinator.remove_profile(p).outcome {
                CleanupOutcome::Cleaned => removed += 1,
                _ => kept += 1,
            }
        }
        let _ = std::fs::remove_dir_all(store.root().join(".backups"));
        drop(journal);
        if remove_root_without_profiles(&root) {
            emptied.push(root);
        }
    }
    // The trials' own threads go on until they see their workers dead, and can still write
    // in their roots meanwhile (the journal and its side files): a root removed under them
    // was seen left behind, once in a CI run. Each trial removes its own root when it ends
    // (and drops its `LiveRoot`): wait for that, briefly, then remove what is left, again
    // only where no profile is left.
    let deadline = tokio::time::Instant::now() + TRIALS_END_WITHIN;
    while !lock(&ROOTS).is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for root in emptied.iter().filter(|root| root.exists()) {
        remove_root_without_profiles(root);
    }
    (removed, kept)
}

/// Removes the trial root `root` if its profile store holds no profile; answers whether it
/// held none. The store is opened only where it is (opening one creates its folder).
fn remove_root_without_profiles(root: &Path) -> bool {
    let profiles = root.join("profiles");
    let holds_profiles = profiles.exists()
        && ProfileStore::open(&profiles).is_ok_and(|store| !store.profile_dirs().is_empty());
    if !holds_profiles {
        let _ = std::fs::remove_dir_all(root);
    }
    !holds_profiles
}

/// How long an interrupt waits for the stopped trials' threads to end before it removes
/// what they left in their roots.
const TRIALS_END_WITHIN: Duration = Duration::from_secs(3);
