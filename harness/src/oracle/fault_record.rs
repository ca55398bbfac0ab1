//! Whether, where and when a trial's fault struck: a fact the oracle judges (`fault_struck`)
//! and the evidence records.

use serde::{Deserialize, Serialize};

/// Whether, where and when a trial's armed fault struck. A trial whose fault never struck
/// tested nothing, and fails with its own verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// What the trial meant to do, e.g. `crash at after_click` or `hazard expired_session
    /// after a crash at after_login`.
    pub planned: String,
    /// Whether it happened.
    pub struck: bool,
    /// The worker it struck.
    pub worker: Option<u32>,
    /// When, in ms from the trial's start.
    pub at_ms: Option<u64>,
    /// When it did not strike: what happened instead.
    pub instead: Option<String>,
    /// For a schedule of more than one fault, or a seeded one: which worker each fault was
    /// for, where, and whether it struck, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<ScheduledFault>,
}

/// One fault of a trial's schedule, as it went.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledFault {
    /// The worker it was for (1, then the recovery worker 2, …).
    pub worker: u32,
    /// Where: a boundary's name, or `step 7 (click)`.
    pub at: String,
    /// Whether it struck.
    pub struck: bool,
}
