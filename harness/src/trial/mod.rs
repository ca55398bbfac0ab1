//! Trials: one run of a scenario under one fault plan, with stable names.
//!
//! `send_message::after_click::landed`, `send_message::browser_crash`,
//! `send_message::hazard::expired_session`: the name is the scenario, then the boundary (or
//! `hazard`), then the variant. Names do not depend on anything but the registration, so
//! filters, nextest partitions and JUnit reports stay meaningful from run to run.

mod conclude;
mod context;
mod drive;
mod engine;
mod error;
pub(crate) mod explore;
mod faults;
pub(crate) mod interrupt;
mod remote;
mod settings;
pub(crate) mod spawn;
mod sweep;

use std::fmt;

use serde::Serialize;

pub use conclude::TrialReport;
pub use engine::run_trial;
pub use error::{SetupError, TrialError};
pub use explore::{ExploreError, SEED_ENV, SeedError, explore, replay_command, run_seed};
pub use settings::TrialSettings;
pub use sweep::{SweepSummary, sweep_stale_roots};

use crate::plan::{Boundary, CrashMode, FaultPoint, Hazard};

pub use crate::plan::Variant;
/// The scenarios `#[browser_fault]` registered in this binary, for runners of your own:
/// [`scenarios`] lists them, [`find_scenario`] finds one by module and name, [`expand`]
/// makes a scenario's trials.
pub use crate::scenario::{
    Exploration, Scenario, ScenarioFn, ScenarioFuture, find as find_scenario, scenarios,
};

/// What a trial does to its scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
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
    /// Crash worker 1 right after its step `step` (a browser command or a journal write,
    /// numbered as the recorded clean run made them): `every_step`.
    Step {
        /// The step's number, from 1.
        step: u32,
        /// What the recorded clean run did at that step (`click`, `journal_target_verified`).
        label: &'static str,
    },
    /// No fault: the scenario runs once, each step and fault point recorded. What
    /// `every_step`'s trials are numbered from; not a trial of its own.
    Clean,
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
    /// Depth 2: the recovery worker is crashed too, at this boundary of its own, and a third
    /// worker recovers (`depth = 2`).
    pub then: Option<Boundary>,
    /// A seeded trial: its number among the scenario's seeded trials of this run's seed
    /// (`seeded = N`, `BROWSER_FAULT_SEED`). Its schedule is `plan` and `then`.
    pub seeded: Option<u32>,
}

impl Trial {
    /// A trial of `scenario` under `plan`, in the scenario's crash mode, at depth 1.
    pub fn new(scenario: &'static Scenario, plan: FaultPlan) -> Trial {
        Trial {
            scenario,
            plan,
            crash_mode: scenario.crash_mode,
            then: None,
            seeded: None,
        }
    }
    /// The trial's stable name: `scenario::boundary[::variant]` or `scenario::hazard::name`.
    pub fn name(&self) -> String {
        let scenario = self.scenario.name;
        if let Some(k) = self.seeded {
            return format!("{scenario}::seeded::{k:02}");
        }
        match self.then {
            Some(then) => format!("{}::then::{then}", self.schedule_name()),
            None => self.schedule_name(),
        }
    }

    /// The name of the first fault alone (without `then`, or the seeded name).
    fn schedule_name(&self) -> String {
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
            FaultPlan::Step { step, label } => format!("{scenario}::step::{step:04}_{label}"),
            FaultPlan::Clean => format!("{scenario}::clean"),
        }
    }

    /// The schedule in words: which fault strikes which worker, at which point (for seeded
    /// trials, whose name does not say it).
    pub fn schedule(&self) -> String {
        let first = self
            .schedule_name()
            .trim_start_matches(self.scenario.name)
            .trim_start_matches("::")
            .to_owned();
        match self.then {
            Some(then) => format!("worker 1: {first}; worker 2: {then}"),
            None => format!("worker 1: {first}"),
        }
    }

    /// The boundary, for boundary trials.
    pub fn boundary(&self) -> Option<Boundary> {
        match self.plan {
            FaultPlan::Boundary { boundary, .. } => Some(boundary),
            FaultPlan::Step { .. } | FaultPlan::Hazard { .. } | FaultPlan::Clean => None,
        }
    }

    /// Where the trial's fault strikes, as evidence names it: its boundary, or `after_step`
    /// for a step trial.
    pub(crate) fn fault_point(&self) -> Option<FaultPoint> {
        match self.plan {
            FaultPlan::Step { .. } => Some(FaultPoint::AfterStep),
            _ => self.boundary().map(FaultPoint::from),
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
            _ => None,
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
            trials.push(Trial::new(
                scenario,
                FaultPlan::Boundary { boundary, variant },
            ));
        }
    }
    for &hazard in scenario.hazards {
        trials.push(Trial::new(scenario, FaultPlan::Hazard { hazard }));
    }
    trials
}
