//! What may still start in this process: one state, below the browser layer and the
//! trials, that every start goes through, the check and the start under one lock. A trial
//! root ([`LiveRoot::create`]), a worker process ([`spawn_worker_process`]), a chromedriver
//! ([`spawn_browser_process`]), a trial or an in-process worker ([`unless_stopped`]). Once
//! the stop of an interrupted run has begun (`trial/interrupt.rs`), each of them is refused,
//! so nothing starts after the signal whatever step a trial is at, and the stop knows every
//! root and worker group there will ever be.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex, mpsc};
use std::time::Duration;

/// What may still start, and what the stop must end.
#[derive(Debug)]
pub(crate) struct State {
    /// The stop has begun: nothing starts any more.
    pub(crate) stopping: bool,
    /// The process groups of live `kill`-mode workers.
    pub(crate) groups: BTreeSet<u32>,
    /// The trial roots of this process.
    pub(crate) roots: BTreeSet<PathBuf>,
    /// Trials and in-process workers running under [`unless_stopped`].
    pub(crate) running: usize,
}

static STATE: Mutex<State> = Mutex::new(State {
    stopping: false,
    groups: BTreeSet::new(),
    roots: BTreeSet::new(),
    running: 0,
});

/// Wakes every [`unless_stopped`] future when the stop begins.
pub(crate) static STOP: LazyLock<tokio::sync::Notify> = LazyLock::new(tokio::sync::Notify::new);

pub(crate) fn lock() -> std::sync::MutexGuard<'static, State> {
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
    /// Makes the trial root `root` with `make` (which puts its owner marker in it) and
    /// registers it, unless the stop has begun: then nothing is made. One lock holds the
    /// check, the folder and the registration, so the stop knows every root there is.
    pub(crate) fn create(
        root: &Path,
        make: impl FnOnce(&Path) -> std::io::Result<()>,
    ) -> std::io::Result<LiveRoot> {
        let mut state = lock();
        if state.stopping {
            return Err(refused());
        }
        make(root)?;
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
