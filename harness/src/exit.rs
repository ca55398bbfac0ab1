//! The runner's exit codes: a leaf below the runner and the interrupt handler, which both
//! end the process with one of them. Re-exported as [`crate::runner::ExitCode`]. What must
//! run before the process ends (the stop of a site the suite started) is registered here,
//! and [`ExitCode::exit`] runs it, however the run ends: its own end or a signal.

use std::any::TypeId;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Something to run once before the runner's process exits.
pub(crate) type ExitHook = Arc<dyn Fn() + Send + Sync>;

/// The hooks to run at exit, one per kind (a site's stop closure is registered by every
/// trial that started the site: its type says it is the same stop).
static AT_EXIT: Mutex<Vec<(TypeId, ExitHook)>> = Mutex::new(Vec::new());

/// How long one hook may take before the exit goes on without it.
const HOOK_LIMIT: Duration = Duration::from_secs(10);

/// Runs `hook` once before the process exits through [`ExitCode::exit`]; a second hook of
/// the same `kind` is the same one and is not added.
pub(crate) fn at_exit(kind: TypeId, hook: ExitHook) {
    let mut hooks = AT_EXIT.lock().unwrap_or_else(PoisonError::into_inner);
    if !hooks.iter().any(|(k, _)| *k == kind) {
        hooks.push((kind, hook));
    }
}

/// Runs every hook registered so far, each once, in the order registered: each on a thread
/// of its own, waited for at most [`HOOK_LIMIT`], so a hook that hangs or panics is said and
/// does not keep the process from ending.
fn run_exit_hooks() {
    let hooks = std::mem::take(&mut *AT_EXIT.lock().unwrap_or_else(PoisonError::into_inner));
    for (_, hook) in hooks {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let ran = std::thread::Builder::new()
            .name("browser-fault-at-exit".into())
            .spawn(move || {
                let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook())).is_ok();
                let _ = done_tx.send(ok);
            });
        if ran.is_err() {
            eprintln!("browser-fault: a site's stop could not run: no thread for it");
            continue;
        }
        match done_rx.recv_timeout(HOOK_LIMIT) {
            Ok(true) => {}
            Ok(false) => eprintln!("browser-fault: a site's stop panicked"),
            Err(_) => eprintln!(
                "browser-fault: a site's stop did not end within {} s; exiting without it",
                HOOK_LIMIT.as_secs()
            ),
        }
    }
}

/// How a run ends, as its process's exit code: one value per reason the runner stops, each
/// saying what to do next. [`Conclusion::exit_code`](crate::runner::Conclusion::exit_code) picks it; the gates come before the
/// trials' own failures, so that they fail closed whatever the trials say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExitCode {
    /// `0`: every trial that ran passed, and both gates hold. Nothing to do.
    Success,
    /// `101`, as libtest: a trial failed. Read its verdicts, then run its `replay:` line to
    /// see it again.
    TrialFailed,
    /// `3`: a trial ran without cleanup proof, so profiles may be left on disk. Read the
    /// trial's `cleanup` evidence; `browser-fault-report` lists the trials.
    CleanupUnproven,
    /// `4`: a scenario that intends a side effect never acted in any trial that ran: every
    /// trial passed without the effect it exists to test. Check the scenario reaches its
    /// `SideEffect::run` (its target, its account, the site's state).
    NeverActed,
    /// `5`: the browser binaries are missing or mismatched, so no trial ran. Set
    /// `BROWSER_FAULT_CHROME` / `BROWSER_FAULT_CHROMEDRIVER`, or run `cargo xtask drill`.
    NoBrowser,
    /// `6`: a trial could not run because its site did not start or could not be reached
    /// before the trial began (`SiteSpec::started`'s closure failed, the origin did not
    /// answer, its reset failed). No worker ran and nothing was left. Read the trial's
    /// message, which names the site's error, and fix the site.
    SiteUnavailable,
    /// `130` (128 + SIGINT, as a shell reports it): the run was interrupted; its workers were
    /// stopped and their profiles removed. Run it again.
    Interrupted,
    /// `143` (128 + SIGTERM): the run was terminated; its workers were stopped and their
    /// profiles removed. Run it again.
    Terminated,
}

impl ExitCode {
    /// Every exit code the runner uses.
    pub const ALL: [ExitCode; 8] = [
        ExitCode::Success,
        ExitCode::TrialFailed,
        ExitCode::CleanupUnproven,
        ExitCode::NeverActed,
        ExitCode::NoBrowser,
        ExitCode::SiteUnavailable,
        ExitCode::Interrupted,
        ExitCode::Terminated,
    ];

    /// The number the process exits with.
    pub const fn code(self) -> i32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::TrialFailed => 101,
            ExitCode::CleanupUnproven => 3,
            ExitCode::NeverActed => 4,
            ExitCode::NoBrowser => 5,
            ExitCode::SiteUnavailable => 6,
            ExitCode::Interrupted => 130,
            ExitCode::Terminated => 143,
        }
    }

    /// The exit code that `code` stands for, if the runner uses it.
    pub fn from_code(code: i32) -> Option<ExitCode> {
        ExitCode::ALL.into_iter().find(|c| c.code() == code)
    }

    /// Exits the process with this code, after the stops of the sites the run started
    /// ([`SiteSpec::stopped_by`](crate::site::SiteSpec::stopped_by)).
    pub fn exit(self) -> ! {
        run_exit_hooks();
        std::process::exit(self.code())
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        // Every code is within 0..=255 (see `ExitCode::code`).
        std::process::ExitCode::from(u8::try_from(code.code()).unwrap_or(1))
    }
}
