//! The runner interrupted: on SIGINT or SIGTERM (what CI's cancel sends) the test process
//! stops every worker and browser of its trials, removes their roots with proof, and exits
//! non-zero saying exactly what it did. A SIGKILL cannot be caught: the worker process
//! groups die with their parent, the browsers this process started itself die with it
//! (`PR_SET_PDEATHSIG`), and the next run's sweep removes the roots (see [`super::sweep`]).
//!
//! One process-wide state decides whether anything may still start. Every start goes through
//! it, the check and the start under one lock: a trial root ([`LiveRoot::create`]), a worker
//! process ([`spawn_worker_process`]), a chromedriver ([`spawn_browser_process`]), a trial
//! or an in-process worker ([`unless_stopped`]). Once the stop has begun, each of them is
//! refused, so nothing starts after the signal whatever step a trial is at, and the stop
//! knows every root and worker group there will ever be.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex, Once, mpsc};
use std::time::{Duration, Instant};

use crate::browser::process;
use crate::cleanup::{CleanupCoordinator, CleanupOutcome};
use crate::exit::ExitCode;
use crate::journal::Journal;
use crate::profile::ProfileStore;

/// What may still start, and what the stop must end.
#[derive(Debug)]
struct State {
    /// The stop has begun: nothing starts any more.
    stopping: bool,
    /// The process groups of live `kill`-mode workers.
    groups: BTreeSet<u32>,
    /// The trial roots of this process.
    roots: BTreeSet<PathBuf>,
    /// Trials and in-process workers running under [`unless_stopped`].
    running: usize,
}

static STATE: Mutex<State> = Mutex::new(State {
    stopping: false,
    groups: BTreeSet::new(),
    roots: BTreeSet::new(),
    running: 0,
});

/// Wakes every [`unless_stopped`] future when the stop begins.
static STOP: LazyLock<tokio::sync::Notify> = LazyLock::new(tokio::sync::Notify::new);

fn lock() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

fn refused() -> std::io::Error {
    std::io::Error::other("the run is being interrupted: nothing starts any more")
}

/// Whether the stop has begun in this process.
pub(crate) fn stopping() -> bool {
    lock().stopping
}

/// A trial root of this process, registered while its trial runs.
#[derive(Debug)]
pub(crate) struct LiveRoot(PathBuf);

impl LiveRoot {
    /// Makes the trial root `root` with its owner marker and registers it, unless the stop
    /// has begun: then nothing is made. One lock holds the check, the folder and the
    /// registration, so the stop knows every root there is.
    pub(crate) fn create(root: &Path) -> std::io::Result<LiveRoot> {
        let mut state = lock();
        if state.stopping {
            return Err(refused());
        }
        let made =
            std::fs::create_dir_all(root).and_then(|()| super::sweep::write_root_owner(root));
        if let Err(e) = made {
            let _ = std::fs::remove_dir_all(root);
            return Err(e);
        }
        state.roots.insert(root.to_owned());
        Ok(LiveRoot(root.to_owned()))
    }
}

impl Drop for LiveRoot {
    fn drop(&mut self) {
        lock().roots.remove(&self.0);
    }
}

/// A worker's process group, registered while its handle lives.
#[derive(Debug)]
pub(crate) struct LiveGroup(u32);

impl Drop for LiveGroup {
    fn drop(&mut self) {
        lock().groups.remove(&self.0);
    }
}

/// Spawns a `kill`-mode worker process (in a process group of its own) and registers its
/// group, unless the stop has begun. The check, the spawn and the registration hold one
/// lock: a worker either is refused or is in the set the stop kills.
pub(crate) fn spawn_worker_process(
    cmd: &mut tokio::process::Command,
) -> std::io::Result<(tokio::process::Child, LiveGroup)> {
    let mut state = lock();
    if state.stopping {
        return Err(refused());
    }
    let child = cmd.spawn()?;
    let pgid = child.id().unwrap_or(0);
    if pgid != 0 {
        state.groups.insert(pgid);
    }
    Ok((child, LiveGroup(pgid)))
}

/// Spawns a browser-side process (`program` with `args`: chromedriver, which starts
/// Chromium) unless the stop has begun; `configure` sets its environment, pipes and group.
/// The check and the spawn hold one lock.
///
/// In a runner or a worker process it dies with the process that starts it, however that
/// process dies (a SIGKILL too): it is this binary, re-entered ([`exec_guarded_if_asked`]).
/// Inside a worker's group it sets `PR_SET_PDEATHSIG` on itself and execs `program` (the
/// signal fires when the thread that forked it ends: a thread that ends only with this
/// process). In a group of its own (`own_group`: a browser of this process) its group must
/// go too, Chromium included, which no signal of the kernel does: it stays as the group's
/// leader, runs `program` and kills the group once its parent is gone.
pub(crate) fn spawn_browser_process(
    program: &Path,
    args: &[&str],
    own_group: bool,
    configure: impl FnOnce(&mut std::process::Command),
) -> std::io::Result<std::process::Child> {
    let mut cmd = if REENTRANT.load(Ordering::SeqCst) {
        let guarded = Guarded {
            program: program.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            parent: std::process::id(),
            supervise: own_group,
        };
        // With this process's own arguments, it takes the way this process took to its
        // entry, where it becomes `program`.
        let mut cmd = std::process::Command::new(std::env::current_exe()?);
        cmd.args(std::env::args_os().skip(1)).env(
            GUARD_ENV,
            serde_json::to_string(&guarded).map_err(std::io::Error::other)?,
        );
        cmd
    } else {
        let mut cmd = std::process::Command::new(program);
        cmd.args(args);
        cmd
    };
    configure(&mut cmd);
    let state = lock();
    if state.stopping {
        return Err(refused());
    }
    let (tx, rx) = mpsc::channel();
    launcher()
        .send((cmd, tx))
        .map_err(|_| std::io::Error::other("the launcher thread is gone"))?;
    let child = rx
        .recv()
        .map_err(|_| std::io::Error::other("the launcher thread is gone"))?;
    drop(state);
    child
}

/// Whether this binary, run again with this process's arguments, checks for
/// [`GUARD_ENV`] before anything else: a runner's `main` and a worker process do; a libtest
/// test that runs trials does not (run again, it would run every test of its binary), and
/// its browsers are started directly.
static REENTRANT: AtomicBool = AtomicBool::new(false);

/// Says that this process's entry checks for a guarded start first (see [`REENTRANT`]).
pub(crate) fn mark_reentrant() {
    REENTRANT.store(true, Ordering::SeqCst);
}

/// The environment variable that turns a re-entered test binary into a browser-side
/// process that dies with its parent.
const GUARD_ENV: &str = "BROWSER_FAULT_DIE_WITH_PARENT";

/// What a guarded process is to become, and whose death it must not outlive.
#[derive(serde::Serialize, serde::Deserialize)]
struct Guarded {
    program: PathBuf,
    args: Vec<String>,
    parent: u32,
    /// Stay as the leader of its group, and kill the group with the parent.
    supervise: bool,
}

/// In a process started by [`spawn_browser_process`]: asks for SIGKILL when the parent
/// dies, then becomes the program it was started for (the environment without
/// [`GUARD_ENV`]). Never returns then; returns at once in any other process.
pub(crate) fn exec_guarded_if_asked() {
    let Some(raw) = std::env::var_os(GUARD_ENV) else {
        return;
    };
    let failed = become_guarded(&raw);
    eprintln!("browser-fault: a browser process could not start: {failed}");
    std::process::exit(127);
}

fn become_guarded(raw: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    let guarded: Guarded = match serde_json::from_slice(raw.as_bytes()) {
        Ok(g) => g,
        Err(e) => return format!("{GUARD_ENV} is unreadable: {e}"),
    };
    if guarded.supervise {
        return supervise(&guarded);
    }
    if let Err(e) = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL) {
        return format!("PR_SET_PDEATHSIG: {e}");
    }
    // The parent may have died before the line above: then no signal will ever come.
    if nix::unistd::getppid().as_raw().unsigned_abs() != guarded.parent {
        return "its parent is gone".to_owned();
    }
    let cstring = |bytes: &[u8]| std::ffi::CString::new(bytes).ok();
    let Some(program) = cstring(guarded.program.as_os_str().as_bytes()) else {
        return "a NUL in the program's path".to_owned();
    };
    let mut args = vec![program.clone()];
    args.extend(guarded.args.iter().filter_map(|a| cstring(a.as_bytes())));
    let env: Vec<std::ffi::CString> = std::env::vars_os()
        .filter(|(k, _)| k != GUARD_ENV)
        .filter_map(|(k, v)| cstring(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
        .collect();
    match nix::unistd::execve(&program, &args, &env) {
        Err(e) => format!("exec {}: {e}", guarded.program.display()),
        Ok(never) => match never {},
    }
}

/// The leader of a browser's own group: runs `program` in the group, exits as it exits, and
/// kills the whole group (itself, chromedriver, Chromium) once its parent is gone, within
/// 50 ms, however the parent died.
fn supervise(guarded: &Guarded) -> String {
    let parent = guarded.parent;
    let group_dies = || -> ! {
        let _ = nix::sys::signal::killpg(nix::unistd::getpgrp(), nix::sys::signal::Signal::SIGKILL);
        std::process::exit(137);
    };
    if nix::unistd::getppid().as_raw().unsigned_abs() != parent {
        group_dies();
    }
    let watch = std::thread::Builder::new()
        .name("browser-fault-parent-watch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(50));
                if nix::unistd::getppid().as_raw().unsigned_abs() != parent {
                    group_dies();
                }
            }
        });
    if let Err(e) = watch {
        return format!("no thread to watch the parent: {e}");
    }
    match std::process::Command::new(&guarded.program)
        .args(&guarded.args)
        .env_remove(GUARD_ENV)
        .status()
    {
        Ok(status) => std::process::exit(status.code().unwrap_or(137)),
        Err(e) => format!("spawn {}: {e}", guarded.program.display()),
    }
}

type Launch = (
    std::process::Command,
    mpsc::Sender<std::io::Result<std::process::Child>>,
);

/// The thread that forks browser-side processes: one that ends only with this process.
fn launcher() -> &'static mpsc::Sender<Launch> {
    static LAUNCHER: LazyLock<mpsc::Sender<Launch>> = LazyLock::new(|| {
        let (tx, rx) = mpsc::channel::<Launch>();
        let spawned = std::thread::Builder::new()
            .name("browser-fault-launcher".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            });
        if let Err(e) = spawned {
            eprintln!("browser-fault: the launcher thread did not start: {e}");
        }
        tx
    });
    &LAUNCHER
}

/// Runs `work` unless the stop begins first or during it: then `work` is dropped at its next
/// await (its browsers and workers are dropped with it) and this future never completes, so
/// the trial's thread does nothing more while the stop removes the roots. A trial or
/// in-process worker that starts after the stop began never runs at all.
pub(crate) async fn unless_stopped<F: Future>(work: F) -> F::Output {
    // Listening before the check: a stop between the two still wakes this future.
    let notified = STOP.notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    let running = {
        let mut state = lock();
        if state.stopping {
            None
        } else {
            state.running += 1;
            Some(Running)
        }
    };
    let Some(running) = running else {
        return std::future::pending().await;
    };
    let finished = tokio::select! {
        biased;
        () = &mut notified => None,
        out = work => Some(out),
    };
    match finished {
        Some(out) if !stopping() => {
            drop(running);
            out
        }
        // `work` has been dropped by now: the stop may go on.
        _ => {
            drop(running);
            std::future::pending().await
        }
    }
}

/// One trial or in-process worker under [`unless_stopped`].
struct Running;

impl Drop for Running {
    fn drop(&mut self) {
        lock().running -= 1;
    }
}

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
    match std::fs::remove_dir_all(root) {
        Ok(()) => report.roots_removed += 1,
        Err(_) if !root.exists() => report.roots_removed += 1,
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
    let mut needles: Vec<Vec<u8>> = Vec::new();
    for root in roots {
        needles.push(root.as_os_str().as_encoded_bytes().to_vec());
        if let Ok(canonical) = std::fs::canonicalize(root) {
            needles.push(canonical.as_os_str().as_encoded_bytes().to_vec());
        }
    }
    let me = std::process::id();
    let my_group = nix::unistd::getpgrp().as_raw().unsigned_abs();
    let mut killed = BTreeSet::new();
    let deadline = Instant::now() + within;
    loop {
        let alive = run_processes(&needles, groups, me);
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

/// The live (not zombie) processes of the run: (pid, process group).
fn run_processes(needles: &[Vec<u8>], groups: &[u32], me: u32) -> Vec<(u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) S ppid pgid …`: the name may hold anything but a last ')'.
            let mut rest = stat.get(stat.rfind(')')? + 2..)?.split(' ');
            let state = rest.next()?;
            let pgid: u32 = rest.nth(1)?.parse().ok()?;
            if state == "Z" || state == "X" {
                return None;
            }
            let ours = groups.contains(&pgid)
                || [
                    format!("/proc/{pid}/environ"),
                    format!("/proc/{pid}/cmdline"),
                ]
                .iter()
                .filter_map(|f| std::fs::read(f).ok())
                .any(|bytes| needles.iter().any(|n| contains(&bytes, n)));
            ours.then_some((pid, pgid))
        })
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::contains;

    #[test]
    fn a_root_is_found_anywhere_in_an_environment_block() {
        let environ = b"HOME=/root\0TMPDIR=/tmp/browser-fault-0/0a1b2c3d/tmp-w1\0";
        assert!(contains(environ, b"/tmp/browser-fault-0/0a1b2c3d"));
        assert!(!contains(environ, b"/tmp/browser-fault-0/ffffffff"));
        assert!(!contains(environ, b""));
    }
}
