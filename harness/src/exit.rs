//! The runner's exit codes: a leaf below the runner and the interrupt handler, which both
//! end the process with one of them. Re-exported as [`crate::runner::ExitCode`].

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
    /// `130` (128 + SIGINT, as a shell reports it): the run was interrupted; its workers were
    /// stopped and their profiles removed. Run it again.
    Interrupted,
    /// `143` (128 + SIGTERM): the run was terminated; its workers were stopped and their
    /// profiles removed. Run it again.
    Terminated,
}

impl ExitCode {
    /// Every exit code the runner uses.
    pub const ALL: [ExitCode; 7] = [
        ExitCode::Success,
        ExitCode::TrialFailed,
        ExitCode::CleanupUnproven,
        ExitCode::NeverActed,
        ExitCode::NoBrowser,
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
            ExitCode::Interrupted => 130,
            ExitCode::Terminated => 143,
        }
    }

    /// The exit code that `code` stands for, if the runner uses it.
    pub fn from_code(code: i32) -> Option<ExitCode> {
        ExitCode::ALL.into_iter().find(|c| c.code() == code)
    }

    /// Exits the process with this code.
    pub fn exit(self) -> ! {
        std::process::exit(self.code())
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        // Every code is within 0..=255 (see `ExitCode::code`).
        std::process::ExitCode::from(u8::try_from(code.code()).unwrap_or(1))
    }
}
