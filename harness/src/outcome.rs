//! How a scenario ends: well ([`Outcome`]), or not ([`TaskError`], [`SafeStop`]), and how a
//! worker reports it to its trial ([`WorkerResult`], [`FailureKind`]): typed, and never
//! carrying page content. A leaf below `worker` (which returns them) and `fault` (whose
//! parent/child protocol carries them), so that neither imports the other for them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::browser::BrowserError;

/// What a scenario returns.
pub type TaskResult = Result<Outcome, TaskError>;

/// How a scenario ended when it ended well.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// The task finished with no side effect left open.
    Completed,
    /// The side effect is `REMOTE_CONFIRMED`.
    Confirmed,
    /// The side effect's outcome is unknown, and the journal says so.
    Unknown,
}

/// A deliberate refusal to go on: the safe way for a worker to end when the world is not
/// what it expected. Nothing was done after the check that raised it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SafeStop {
    /// The page or the API names an account other than the expected one.
    #[error("signed in as another account")]
    WrongAccount,
    /// The page or the API names a tenant other than the expected one.
    #[error("acting in another tenant")]
    WrongTenant,
    /// The page shows another object than the target.
    #[error("the page shows another object")]
    WrongObject,
    /// The page is on another origin or route than the target.
    #[error("the page is not the target route")]
    WrongRoute,
    /// The site asks for a login that the worker cannot or must not give.
    #[error("not signed in")]
    NotSignedIn,
    /// A login or consent interstitial stands before the target.
    #[error("an interstitial stands before the target")]
    Interstitial,
    /// The target changed after it was verified.
    #[error("the target changed after it was verified")]
    StaleTarget,
    /// The profile's generation is older than the journal's: it was restored from a backup.
    #[error("the profile was rolled back to an older generation")]
    ProfileRolledBack,
    /// The profile was used by another browser version.
    #[error("the profile was written by another browser version")]
    BrowserVersionChanged,
    /// The profile's lock names a live process or another host.
    #[error("the profile is in use by a live browser")]
    ProfileInUse,
    /// Another worker holds the profile's lease.
    #[error("another worker holds the profile's lease")]
    LeaseHeld,
    /// A live browser session of an earlier worker (orphaned on a remote endpoint) holds the
    /// profile, and could not be proven gone.
    #[error("an orphaned browser session of an earlier worker still holds the profile")]
    OrphanedSession,
}

/// Why a scenario did not end well.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// The worker stopped on purpose, safely.
    #[error("stopped safely")]
    SafeStop(#[from] SafeStop),
    /// The browser could not be launched or driven.
    #[error(transparent)]
    Browser(#[from] BrowserError),
    /// The journal refused or failed.
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    /// A checkpoint transition was refused.
    #[error(transparent)]
    Transition(#[from] crate::journal::TransitionError),
    /// The profile store failed.
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    /// The lease could not be claimed for a reason other than another holder.
    #[error(transparent)]
    Lease(#[from] crate::lease::LeaseError),
    /// A step did not finish within its timeout; its browser session was retired.
    #[error("step `{step}` timed out after {after:?}")]
    Timeout {
        /// The step.
        step: &'static str,
        /// Its limit.
        after: Duration,
    },
    /// An element never appeared.
    #[error("no element matches `{selector}` within {after:?}")]
    NotFound {
        /// The CSS selector.
        selector: String,
        /// How long it was waited for.
        after: Duration,
    },
    /// The page answered something the worker cannot read (an API reply that is not JSON…).
    #[error("unexpected reply from {what}")]
    UnexpectedReply {
        /// What was read.
        what: &'static str,
    },
    /// An agent command ([`Worker::run_agent`](crate::worker::Worker::run_agent)) ended
    /// without a claim the harness can take.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The scenario's own error.
    #[error(transparent)]
    Scenario(Box<dyn std::error::Error + Send + Sync>),
}

impl TaskError {
    /// Wraps a scenario's own error.
    pub fn scenario(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        TaskError::Scenario(Box::new(e))
    }

    /// The failure's type, as evidence records it (never its message).
    pub fn kind(&self) -> FailureKind {
        match self {
            TaskError::SafeStop(s) => FailureKind::SafeStop(*s),
            TaskError::Browser(BrowserError::Crashed) => FailureKind::BrowserCrashed,
            TaskError::Browser(BrowserError::Retired) => FailureKind::Timeout,
            TaskError::Browser(_) => FailureKind::Browser,
            TaskError::Journal(_) | TaskError::Transition(_) => FailureKind::Journal,
            TaskError::Profile(_) | TaskError::Lease(_) => FailureKind::Profile,
            TaskError::Timeout { .. } => FailureKind::Timeout,
            TaskError::NotFound { .. } => FailureKind::NotFound,
            TaskError::UnexpectedReply { .. } => FailureKind::UnexpectedReply,
            TaskError::Agent(e) => FailureKind::Agent(e.failure()),
            TaskError::Scenario(_) => FailureKind::Scenario,
        }
    }
}

/// The type of a failure, serializable, with no message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type", content = "reason")]
#[non_exhaustive]
pub enum FailureKind {
    /// A typed safe stop.
    SafeStop(SafeStop),
    /// The browser died under the worker, and the worker noticed.
    BrowserCrashed,
    /// A browser command failed.
    Browser,
    /// The journal failed.
    Journal,
    /// The profile store or the lease failed.
    Profile,
    /// A step or the worker timed out.
    Timeout,
    /// An element never appeared.
    NotFound,
    /// An unreadable reply.
    UnexpectedReply,
    /// The scenario's own error.
    Scenario,
    /// An agent command ended without a claim the harness can take, and this is why.
    Agent(AgentFailure),
    /// The scenario panicked.
    Panic,
    /// The worker process died without a word (killed or crashed).
    Died,
}

impl FailureKind {
    /// Whether the failure is a typed, safe stop (invariant 4 accepts it).
    pub fn is_safe_stop(self) -> bool {
        matches!(self, FailureKind::SafeStop(_) | FailureKind::BrowserCrashed)
    }

    /// Its name as verdicts and evidence lines write it: `safe_stop(lease_held)`, `panic`.
    pub(crate) fn name(self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => {
                let ty = m.get("type").and_then(|v| v.as_str()).unwrap_or("failure");
                match m.get("reason").and_then(|v| v.as_str()) {
                    Some(reason) => format!("{ty}({reason})"),
                    None => ty.to_owned(),
                }
            }
            _ => "failure".to_owned(),
        }
    }
}

/// How a worker ended, as it reports it to its trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerResult {
    /// The scenario returned `Ok`.
    Ok(Outcome),
    /// The scenario returned `Err` (or panicked).
    Err(FailureKind),
}

impl From<&TaskResult> for WorkerResult {
    fn from(r: &TaskResult) -> Self {
        match r {
            Ok(o) => WorkerResult::Ok(*o),
            Err(e) => WorkerResult::Err(e.kind()),
        }
    }
}

/// Why an agent command did not end with a claim the harness can take.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The command could not be started (no such program, not executable).
    #[error("the agent command `{program}` could not be started")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The command ended before it ever drove its browser, and claimed nothing.
    #[error(
        "the agent ended ({status}) before it ever drove its browser, and claimed nothing (its output is in the worker's log)"
    )]
    NeverDrove {
        /// Its exit status.
        status: String,
    },
    /// The command ended with a failing status and no claim.
    #[error("the agent ended ({status}) with no claim (its output is in the worker's log)")]
    Exited {
        /// Its exit status.
        status: String,
    },
    /// The command ended well, but printed no claim.
    #[error(
        "the agent ended well but printed no claim (one line `{{\"claim\": \"confirmed\"}}` on its standard output)"
    )]
    NoClaim,
    /// A claim line the harness cannot read, or more than one.
    #[error("the agent's claim is not one the harness knows: {why}")]
    BadClaim {
        /// What is wrong with it.
        why: String,
    },
    /// The agent wrote something on its checkpoint socket that is not the protocol.
    #[error("the agent broke the checkpoint protocol: {why}")]
    Protocol {
        /// What it did.
        why: String,
    },
    /// The agent claimed its browser crashed while its browser lives.
    #[error("the agent claimed `browser_crashed`, but its browser lives")]
    FalseCrashClaim,
}

/// The type of an [`AgentError`], as evidence records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentFailure {
    /// [`AgentError::Spawn`].
    Spawn,
    /// [`AgentError::NeverDrove`].
    NeverDrove,
    /// [`AgentError::Exited`].
    Exited,
    /// [`AgentError::NoClaim`].
    NoClaim,
    /// [`AgentError::BadClaim`].
    BadClaim,
    /// [`AgentError::Protocol`].
    Protocol,
    /// [`AgentError::FalseCrashClaim`].
    FalseCrashClaim,
}

impl AgentError {
    /// Its type.
    pub fn failure(&self) -> AgentFailure {
        match self {
            AgentError::Spawn { .. } => AgentFailure::Spawn,
            AgentError::NeverDrove { .. } => AgentFailure::NeverDrove,
            AgentError::Exited { .. } => AgentFailure::Exited,
            AgentError::NoClaim => AgentFailure::NoClaim,
            AgentError::BadClaim { .. } => AgentFailure::BadClaim,
            AgentError::Protocol { .. } => AgentFailure::Protocol,
            AgentError::FalseCrashClaim => AgentFailure::FalseCrashClaim,
        }
    }
}
