//! What each fault plan does to a trial, in one place: where worker 1 is armed, how the
//! plan reads in evidence, and what worker 1 did when its fault never struck. (The engine
//! applies the perturbations; a new variant adds its words here.)

use super::{FaultPlan, Trial, Variant};
use crate::evidence::{WorkerEnd, WorkerEvidence};
use crate::plan::Boundary;

/// The fault point a trial's first worker is armed with.
pub(super) fn strike_point(trial: &Trial) -> Option<Boundary> {
    match trial.plan {
        FaultPlan::Boundary {
            variant:
                Some(
                    Variant::LiveAccountSwitch
                    | Variant::LiveTenantSwitch
                    | Variant::LiveObjectSwap,
                ),
            ..
        } => Some(Boundary::BeforeVerify),
        // The site strikes these, at the request.
        FaultPlan::Boundary {
            variant:
                Some(
                    Variant::LiveRequestLost
                    | Variant::LiveResponseLost
                    | Variant::LiveSlowResponse,
                ),
            ..
        } => None,
        FaultPlan::Boundary {
            boundary: Boundary::ConcurrentProfile,
            variant: Some(Variant::MidTask | Variant::LockRemoved),
        } => Some(Boundary::AfterTargetVerified),
        FaultPlan::Boundary {
            boundary: Boundary::StaleProfileRestore,
            ..
        } => Some(Boundary::AfterTargetVerified),
        FaultPlan::Boundary {
            boundary: Boundary::ConcurrentProfile,
            ..
        } => None,
        FaultPlan::Boundary { boundary, .. } => Some(boundary),
        // The hazard appears while the worker is down, after it signed in.
        FaultPlan::Hazard { .. } => Some(Boundary::AfterLogin),
    }
}

/// What the trial means to do, in words (stable: it is snapshotted).
pub(super) fn planned(trial: &Trial) -> String {
    match trial.plan {
        FaultPlan::Boundary {
            boundary: Boundary::BrowserCrash,
            ..
        } => "browser killed under a live worker at browser_crash".to_owned(),
        FaultPlan::Boundary {
            boundary: Boundary::StaleProfileRestore,
            ..
        } => "older profile restored after a crash at after_target_verified".to_owned(),
        FaultPlan::Boundary {
            boundary: Boundary::ConcurrentProfile,
            variant: Some(Variant::MidTask),
        } => "a second worker arrives after the first verified its target".to_owned(),
        FaultPlan::Boundary {
            boundary: Boundary::ConcurrentProfile,
            variant: Some(Variant::LockRemoved),
        } => "the first worker's lock files removed, then a second worker arrives".to_owned(),
        FaultPlan::Boundary {
            boundary: Boundary::ConcurrentProfile,
            ..
        } => "two workers let go at once on one profile".to_owned(),
        FaultPlan::Boundary {
            variant:
                Some(
                    v @ (Variant::LiveAccountSwitch
                    | Variant::LiveTenantSwitch
                    | Variant::LiveObjectSwap),
                ),
            ..
        } => format!(
            "{} under the live worker before it verifies its target",
            match v {
                Variant::LiveAccountSwitch => "the session switched to another account",
                Variant::LiveTenantSwitch => "the account moved to another tenant",
                _ => "the route swapped to another object",
            }
        ),
        FaultPlan::Boundary {
            variant:
                Some(
                    v @ (Variant::LiveRequestLost
                    | Variant::LiveResponseLost
                    | Variant::LiveSlowResponse),
                ),
            ..
        } => format!(
            "{} under the live worker",
            match v {
                Variant::LiveRequestLost => "the request lost on the wire",
                Variant::LiveResponseLost => "the request landed and its response lost",
                _ => "the request landed and its response slow",
            }
        ),
        FaultPlan::Boundary {
            boundary: Boundary::AfterTargetVerified,
            variant: Some(Variant::AccountSwitched),
        } => "account switched after a crash at after_target_verified".to_owned(),
        FaultPlan::Boundary { boundary, .. } => format!("crash at {boundary}"),
        FaultPlan::Hazard { hazard } => format!("hazard {hazard} after a crash at after_login"),
    }
}

/// What worker 1 did instead of reaching its armed fault point.
pub(super) fn missed(w: &WorkerEvidence, armed: Option<Boundary>) -> String {
    let point = armed.map_or_else(|| "its fault point".to_owned(), |b| format!("`{b}`"));
    let how = match w.end {
        WorkerEnd::Finished => format!(
            "worker 1 finished ({}) without crossing {point}",
            crate::oracle::result_name(w.result)
        ),
        WorkerEnd::TimedOut => format!("worker 1 timed out before reaching {point}"),
        WorkerEnd::Died | WorkerEnd::Crashed => format!("worker 1 died before reaching {point}"),
    };
    format!(
        "{how} (fault points sit in `Page::sign_in`, `side_effect(..).run()`, the worker's start, and wherever the agent calls `Worker::fault_point`)"
    )
}
