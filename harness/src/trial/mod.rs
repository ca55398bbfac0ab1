//! Trials: one run of a scenario under one fault plan, with stable names.
//!
//! `send_message::after_click::landed`, `send_message::browser_crash`,
//! `send_message::hazard::expired_session`: the name is the scenario, then the boundary (or
//! `hazard`), then the variant. Names do not depend on anything but the registration, so
//! filters, nextest partitions and JUnit reports stay meaningful from run to run.

mod engine;
mod faults;
mod settings;
pub(crate) mod spawn;
mod sweep;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use engine::{TrialError, TrialReport, run_trial};
pub use settings::TrialSettings;
pub use sweep::{SweepSummary, sweep_stale_roots};

use crate::plan::{Boundary, CrashMode, Hazard};
use crate::registry::Scenario;

/// The variants a boundary runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Variant {
    /// `after_click`: the request landed (committed, response held) before the crash.
    Landed,
    /// `after_click`: the request was lost (never committed) before the crash.
    Lost,
    /// `after_target_verified`: during the crash the profile's login came to belong to
    /// another account, so trusting the old verification is caught.
    AccountSwitched,
    /// `stale_profile_restore`: the restored backup is signed in as another account.
    OtherAccount,
    /// `stale_profile_restore`: the restored backup is the same account, older generation.
    OlderGeneration,
    /// `after_login`, live: after the identity probe and before the verify step, the
    /// browser's session comes to belong to another account (another tab signed in) and the
    /// worker's tab reloads. No crash.
    LiveAccountSwitch,
    /// `after_login`, live: the account is moved to another tenant at the same point.
    LiveTenantSwitch,
    /// `after_login`, live: the route the agent opened now serves another object (a reused
    /// tab), at the same point.
    LiveObjectSwap,
    /// `after_click`, live: the site loses the request (nothing committed, a 502 at once).
    /// No crash.
    LiveRequestLost,
    /// `after_click`, live: the site accepts the request and its response is lost (a 502
    /// at once). No crash.
    LiveResponseLost,
    /// `after_click`, live: the site accepts the request and answers slowly. No crash.
    LiveSlowResponse,
    /// `concurrent_profile`: a second worker arrives on the profile after the first has
    /// verified its target, mid-task.
    MidTask,
    /// `concurrent_profile`: mid-task, the first worker's lease lock file and Chromium's
    /// `SingletonLock` are removed, then a second worker arrives: the live holder must still
    /// be recognised, and the second refused.
    LockRemoved,
}

impl Variant {
    /// The name in trial names.
    pub const fn as_str(self) -> &'static str {
        match self {
            Variant::Landed => "landed",
            Variant::Lost => "lost",
            Variant::AccountSwitched => "account_switched",
            Variant::OtherAccount => "other_account",
            Variant::OlderGeneration => "older_generation",
            Variant::LiveAccountSwitch => "live_account_switch",
            Variant::LiveTenantSwitch => "live_tenant_switch",
            Variant::LiveObjectSwap => "live_object_swap",
            Variant::LiveRequestLost => "live_request_lost",
            Variant::LiveResponseLost => "live_response_lost",
            Variant::LiveSlowResponse => "live_slow_response",
            Variant::MidTask => "mid_task",
            Variant::LockRemoved => "lock_removed",
        }
    }

    /// Whether the variant strikes a live worker (no crash at its fault point).
    pub const fn is_live(self) -> bool {
        matches!(
            self,
            Variant::LiveAccountSwitch
                | Variant::LiveTenantSwitch
                | Variant::LiveObjectSwap
                | Variant::LiveRequestLost
                | Variant::LiveResponseLost
                | Variant::LiveSlowResponse
                | Variant::MidTask
                | Variant::LockRemoved
        )
    }
}

/// What a trial does to its scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum FaultPlan {
    /// Crash (or perturb) at a boundary.
    Boundary {
        /// Where.
        boundary: Boundary,
        /// Which world.
        variant: Option<Variant>,
    },
    /// Run under a hazard switched on at the site; no crash.
    Hazard {
        /// Which.
        hazard: Hazard,
    },
}

/// One trial: a scenario under one fault plan and crash mode.
#[derive(Clone, Copy, Debug)]
pub struct Trial {
    /// The scenario.
    pub scenario: &'static Scenario,
    /// The fault plan.
    pub plan: FaultPlan,
    /// The crash mode.
    pub crash_mode: CrashMode,
}

impl Trial {
    /// The trial's stable name: `scenario::boundary[::variant]` or `scenario::hazard::name`.
    pub fn name(&self) -> String {
        let scenario = self.scenario.name;
        match self.plan {
            FaultPlan::Boundary {
                boundary,
                variant: Some(v),
            } => format!("{scenario}::{boundary}::{}", v.as_str()),
            FaultPlan::Boundary {
                boundary,
                variant: None,
            } => format!("{scenario}::{boundary}"),
            FaultPlan::Hazard { hazard } => format!("{scenario}::hazard::{hazard}"),
        }
    }

    /// The boundary, for boundary trials.
    pub fn boundary(&self) -> Option<Boundary> {
        match self.plan {
            FaultPlan::Boundary { boundary, .. } => Some(boundary),
            FaultPlan::Hazard { .. } => None,
        }
    }

    /// Why this trial cannot run against its scenario's site (it needs a knob the site
    /// lacks), or `None`. Such a trial is listed as ignored with this reason, never run
    /// against a site that cannot make its fault deterministic.
    pub fn cannot_run(&self) -> Option<&'static str> {
        (self.scenario.site)().cannot_run(self)
    }

    /// Whether a correct agent acts in this trial: reaches `ACTION_SUBMITTED` in one of its
    /// workers. Trials that must end in a safe stop before any action (a stale restore, an
    /// account switched during the crash, an interstitial, another tenant) do not.
    pub fn expects_action(&self) -> bool {
        match self.plan {
            FaultPlan::Boundary {
                boundary: Boundary::StaleProfileRestore,
                ..
            }
            | FaultPlan::Boundary {
                variant:
                    Some(
                        Variant::AccountSwitched
                        | Variant::LiveAccountSwitch
                        | Variant::LiveTenantSwitch
                        | Variant::LiveObjectSwap,
                    ),
                ..
            } => false,
            FaultPlan::Boundary { .. } => true,
            FaultPlan::Hazard { hazard } => matches!(
                hazard,
                Hazard::ExpiredSession | Hazard::StaleTab | Hazard::CredentialRotated
            ),
        }
    }

    /// The variant, when the boundary has several.
    pub fn variant(&self) -> Option<Variant> {
        match self.plan {
            FaultPlan::Boundary { variant, .. } => variant,
            FaultPlan::Hazard { .. } => None,
        }
    }
}

impl fmt::Display for Trial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The variants each boundary runs in.
pub fn variants(boundary: Boundary) -> &'static [Option<Variant>] {
    match boundary {
        Boundary::AfterLogin => &[
            None,
            Some(Variant::LiveAccountSwitch),
            Some(Variant::LiveTenantSwitch),
            Some(Variant::LiveObjectSwap),
        ],
        Boundary::AfterClick => &[
            Some(Variant::Landed),
            Some(Variant::Lost),
            Some(Variant::LiveRequestLost),
            Some(Variant::LiveResponseLost),
            Some(Variant::LiveSlowResponse),
        ],
        Boundary::AfterTargetVerified => &[None, Some(Variant::AccountSwitched)],
        Boundary::StaleProfileRestore => {
            &[Some(Variant::OtherAccount), Some(Variant::OlderGeneration)]
        }
        Boundary::ConcurrentProfile => &[None, Some(Variant::MidTask), Some(Variant::LockRemoved)],
        _ => &[None],
    }
}

/// Every trial of a scenario, in a stable order: boundaries in lifecycle order with their
/// variants, then hazards.
pub fn expand(scenario: &'static Scenario) -> Vec<Trial> {
    let mut trials = Vec::new();
    for &boundary in scenario.boundaries {
        for &variant in variants(boundary) {
            trials.push(Trial {
                scenario,
                plan: FaultPlan::Boundary { boundary, variant },
                crash_mode: scenario.crash_mode,
            });
        }
    }
    for &hazard in scenario.hazards {
        trials.push(Trial {
            scenario,
            plan: FaultPlan::Hazard { hazard },
            crash_mode: scenario.crash_mode,
        });
    }
    trials
}

/// The insta snapshot name of a trial: `a::b::c` → `a__b__c`.
pub(crate) fn snapshot_name(trial_name: &str) -> String {
    settings::file_name(trial_name)
}
