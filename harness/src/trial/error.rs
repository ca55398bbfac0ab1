//! Why a trial could not run at all.

/// Why a trial could not run at all (as opposed to running and failing a verdict).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrialError {
    /// The site could not be started, reset or read before the trial.
    #[error("failed to start the site")]
    Site(#[source] crate::site::SiteError),
    /// The trial root, its journal, its profile or the browser binaries could not be
    /// prepared.
    #[error("failed to prepare the trial")]
    Setup(#[from] SetupError),
    /// A worker could not be spawned.
    #[error("failed to spawn a worker")]
    Spawn(#[source] std::io::Error),
    /// The trial needs a site knob that this site does not have.
    #[error("this site has no {0} knob; the trial needs it")]
    Unsupported(&'static str),
    /// The evidence could not be written.
    #[error("failed to write the evidence")]
    Evidence(#[source] std::io::Error),
    /// The trial's fault plan pairs a boundary with a variant it does not have.
    #[error(
        "trial `{0}` has a fault plan no fault unit runs (a boundary with a variant it does not have)"
    )]
    UnknownPlan(String),
}

/// What failed while a trial was being prepared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The trial root, its evidence folder or its owner marker could not be written.
    #[error("the trial's folders could not be made")]
    Folders(#[source] std::io::Error),
    /// The trial's journal refused.
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    /// The trial's profile store refused.
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    /// The browser binaries are missing or mismatched.
    #[error(transparent)]
    Browser(#[from] crate::browser::PreflightError),
}

pub(super) fn setup_err(e: impl Into<SetupError>) -> TrialError {
    TrialError::Setup(e.into())
}

pub(super) fn folders_err(e: std::io::Error) -> TrialError {
    TrialError::Setup(SetupError::Folders(e))
}
