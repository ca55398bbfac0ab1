//! One incarnation of the agent.

/// What a scenario returns.
pub type TaskResult = Result<Outcome, TaskError>;

/// How a scenario ended when it ended well.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Outcome {
    /// The task finished with no side effect left open.
    Completed,
    /// The side effect is `REMOTE_CONFIRMED`.
    Confirmed,
    /// The side effect's outcome is unknown, and the journal says so.
    Unknown,
}

/// Why a scenario did not end well.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// Placeholder until the browser layer lands.
    #[error("not yet implemented")]
    Todo,
}

/// One incarnation of the agent: a browser session on a profile, and the journal.
#[derive(Debug)]
pub struct Worker {
    _private: (),
}
