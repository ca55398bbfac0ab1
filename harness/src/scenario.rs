//! Scenarios registered at compile time by `#[browser_fault]`.
//!
//! The attribute emits one [`Scenario`] per annotated fn through `inventory`; the runner
//! expands every registered scenario into trials. The scenario body is compiled once,
//! whatever the number of boundaries.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::plan::{Boundary, CrashMode, Hazard};
use crate::site::SiteSpec;
use crate::worker::{TaskResult, Worker};

/// The future a scenario returns, boxed so that every scenario has one type.
pub type ScenarioFuture<'a> = Pin<Box<dyn Future<Output = TaskResult> + Send + 'a>>;

/// A scenario's entry point: the user's `async fn(&mut Worker) -> TaskResult`, boxed.
pub type ScenarioFn = for<'a> fn(&'a mut Worker) -> ScenarioFuture<'a>;

/// One `#[browser_fault]` scenario as the attribute registered it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Scenario {
    /// The annotated fn's name: the first segment of every trial name.
    pub name: &'static str,
    /// `module_path!()` where the fn is defined.
    pub module_path: &'static str,
    /// `file!()` where the fn is defined.
    pub file: &'static str,
    /// `line!()` of the fn.
    pub line: u32,
    /// The boundaries to strike (`at = ...`), in lifecycle order, without repeats.
    pub boundaries: &'static [Boundary],
    /// The hazards to run the scenario under (`hazards = [...]`), one trial each.
    pub hazards: &'static [Hazard],
    /// How workers die (`crash = ...`).
    pub crash_mode: CrashMode,
    /// The trial's timeout (`timeout = "..."`).
    pub timeout: Duration,
    /// The account the scenario must act as (`account = "..."`); `None` takes the site's default.
    pub account: Option<&'static str>,
    /// The objects of the scenario's intended side effects (`effects = [...]`), one entry per
    /// effect; `None` when not declared: one side effect, on an object the oracle does not
    /// check. Duplicates are counted against these, never against what the agent journaled.
    pub effects: Option<&'static [&'static str]>,
    /// Describes the site to start for each trial (`site = path`).
    pub site: fn() -> SiteSpec,
    /// The scenario itself.
    pub run: ScenarioFn,
    /// Trials beyond the named boundaries: every step, depth 2, seeded.
    pub explore: Exploration,
}

/// The trials a scenario asks for beyond its boundaries and hazards, generated at run time
/// from recorded runs (never by the macro: they add no compile time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Exploration {
    /// `every_step = N`: a crash right after each step of a recorded clean run (each browser
    /// command and journal write), at most `N` trials, sampled evenly; 0: none.
    pub every_step: u32,
    /// `depth = 2`: after each plain crash, the recovery worker is crashed too, at each
    /// fault point it crossed when recorded; 1: no such trials.
    pub depth: u8,
    /// `seeded = N`: `N` trials whose schedule a seed picks (`BROWSER_FAULT_SEED`); 0: none.
    pub seeded: u32,
}

impl Exploration {
    /// Nothing beyond the named boundaries and hazards.
    pub const NONE: Exploration = Exploration {
        every_step: 0,
        depth: 1,
        seeded: 0,
    };

    /// Builds one; used by the code `#[browser_fault]` generates.
    pub const fn new(every_step: u32, depth: u8, seeded: u32) -> Exploration {
        Exploration {
            every_step,
            depth,
            seeded,
        }
    }

    /// Whether the scenario asks for any of it.
    pub const fn any(&self) -> bool {
        self.every_step > 0 || self.depth > 1 || self.seeded > 0
    }
}

impl Scenario {
    /// How many side effects the scenario intends: the declared ones, else one.
    pub fn intended_effects(&self) -> usize {
        self.effects.map_or(1, <[_]>::len)
    }

    /// The default trial timeout when `timeout` is not given.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

    /// Builds a registration; used by the code `#[browser_fault]` generates.
    #[expect(
        clippy::too_many_arguments,
        reason = "one argument per attribute option"
    )]
    pub const fn new(
        name: &'static str,
        module_path: &'static str,
        file: &'static str,
        line: u32,
        boundaries: &'static [Boundary],
        hazards: &'static [Hazard],
        crash_mode: CrashMode,
        timeout: Duration,
        account: Option<&'static str>,
        effects: Option<&'static [&'static str]>,
        site: fn() -> SiteSpec,
        run: ScenarioFn,
    ) -> Self {
        Scenario {
            name,
            module_path,
            file,
            line,
            boundaries,
            hazards,
            crash_mode,
            timeout,
            account,
            effects,
            site,
            run,
            explore: Exploration::NONE,
        }
    }

    /// This scenario with trials beyond its named boundaries; used by the code
    /// `#[browser_fault]` generates.
    #[must_use]
    pub const fn exploring(mut self, explore: Exploration) -> Self {
        self.explore = explore;
        self
    }
}

inventory::collect!(Scenario);

/// Every scenario linked into this binary, sorted by name then module.
pub fn scenarios() -> Vec<&'static Scenario> {
    let mut all: Vec<&'static Scenario> = inventory::iter::<Scenario>.into_iter().collect();
    all.sort_by(|a, b| (a.name, a.module_path).cmp(&(b.name, b.module_path)));
    all
}

/// The scenario registered as `name` in `module_path`.
pub fn find(module_path: &str, name: &str) -> Option<&'static Scenario> {
    inventory::iter::<Scenario>
        .into_iter()
        .find(|s| s.name == name && s.module_path == module_path)
}
