//! Trials: one run of a scenario under one fault plan, with stable names.
//!
//! `send_message::after_click::landed`, `send_message::browser_crash`,
//! `send_message::hazard::expired_session`: the name is the scenario, then the boundary (or
//! `hazard`), then the variant. Names do not depend on anything but the registration, so
//! filters, nextest partitions and JUnit reports stay meaningful from run to run.

mod engine;
mod faults;
pub(crate) mod interrupt;
mod remote;
mod settings;
pub(crate) mod spawn;
mod sweep;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use engine::{SetupError, TrialError, TrialReport, run_trial};
pub use interrupt::{EXIT_INTERRUPTED, EXIT_TERMINATED};
pub use settings::TrialSettings;
pub use sweep::{SweepSummary, sweep_stale_roots};

use crate::plan::{Boundary, CrashMode, Hazard};
use crate::registry::Scenario;

pub use crate::plan::Variant;

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
    ///
    /// It also says what cannot run on the WebDriver endpoint of
    /// `BROWSER_FAULT_WEBDRIVER_URL` ([`Trial::cannot_run_at`]).
    pub fn cannot_run(&self) -> Option<&'static str> {
        self.cannot_run_at(crate::browser::remote::endpoint_from_env().as_deref())
    }

    /// Why this trial cannot run against its site with its browsers at `webdriver_url`
    /// (`None`: a local chromedriver per worker), or `None` when it can: an orphaned session
    /// needs a remote endpoint, and killing the browser process needs it on this host.
    pub fn cannot_run_at(&self, webdriver_url: Option<&str>) -> Option<&'static str> {
        self.cannot_run_on(&(self.scenario.site)())
            .or_else(|| faults::unit(self.plan).and_then(|unit| unit.cannot_run_at(webdriver_url)))
    }

    /// Why this trial cannot run against `site`, or `None` when it can.
    pub(crate) fn cannot_run_on(&self, site: &crate::site::SiteSpec) -> Option<&'static str> {
        if site.is_fixture() {
            return None;
        }
        faults::unit(self.plan).map_or(Some("its boundary has no such variant"), |unit| {
            unit.cannot_run(site)
        })
    }

    /// Whether a correct agent acts in this trial: reaches `ACTION_SUBMITTED` in one of its
    /// workers. Trials that must end in a safe stop before any action (a stale restore, an
    /// account switched during the crash, an interstitial, another tenant) do not.
    pub fn expects_action(&self) -> bool {
        faults::unit(self.plan).is_some_and(|unit| unit.expects_action())
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

/// The variants each boundary runs in (`None`: the plain fault), in a stable order.
pub fn variants(boundary: Boundary) -> &'static [Option<Variant>] {
    faults::variants(boundary)
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
