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
}

/// A scenario's registration as `#[browser_fault]` writes it: one named field per option, so
/// that the attribute and this crate cannot disagree on an argument's place (a renamed or
/// missing field is an error naming the field). The generated code reaches it through the
/// versioned `__private_v0_1` path only; [`ScenarioDef::into_scenario`] makes the
/// [`Scenario`].
#[derive(Clone, Copy, Debug)]
pub struct ScenarioDef {
    /// [`Scenario::name`].
    pub name: &'static str,
    /// [`Scenario::module_path`].
    pub module_path: &'static str,
    /// [`Scenario::file`].
    pub file: &'static str,
    /// [`Scenario::line`].
    pub line: u32,
    /// [`Scenario::boundaries`].
    pub boundaries: &'static [Boundary],
    /// [`Scenario::hazards`].
    pub hazards: &'static [Hazard],
    /// [`Scenario::crash_mode`].
    pub crash_mode: CrashMode,
    /// [`Scenario::timeout`].
    pub timeout: Duration,
    /// [`Scenario::account`].
    pub account: Option<&'static str>,
    /// [`Scenario::effects`].
    pub effects: Option<&'static [&'static str]>,
    /// [`Scenario::site`].
    pub site: fn() -> SiteSpec,
    /// [`Scenario::run`].
    pub run: ScenarioFn,
    /// [`Exploration::every_step`].
    pub every_step: u32,
    /// [`Exploration::depth`].
    pub depth: u8,
    /// [`Exploration::seeded`].
    pub seeded: u32,
}

impl ScenarioDef {
    /// The registration.
    pub const fn into_scenario(self) -> Scenario {
        Scenario {
            name: self.name,
            module_path: self.module_path,
            file: self.file,
            line: self.line,
            boundaries: self.boundaries,
            hazards: self.hazards,
            crash_mode: self.crash_mode,
            timeout: self.timeout,
            account: self.account,
            effects: self.effects,
            site: self.site,
            run: self.run,
            explore: Exploration {
                every_step: self.every_step,
                depth: self.depth,
                seeded: self.seeded,
            },
        }
    }
}

#[cfg(test)]
impl ScenarioDef {
    /// A registration for the harness's own tests: `name` at `boundaries`, with the
    /// defaults of an attribute that says nothing else, on the fixture site, running a
    /// scenario that does nothing. Change a field with `ScenarioDef { .., ..base }`.
    #[cfg(feature = "fixture-site")]
    pub(crate) const fn for_tests(name: &'static str, boundaries: &'static [Boundary]) -> Self {
        fn idle(_: &mut Worker) -> ScenarioFuture<'_> {
            Box::pin(async { Ok(crate::worker::Outcome::Completed) })
        }
        ScenarioDef {
            name,
            module_path: "m",
            file: "f.rs",
            line: 1,
            boundaries,
            hazards: &[],
            crash_mode: CrashMode::Kill,
            timeout: Scenario::DEFAULT_TIMEOUT,
            account: None,
            effects: None,
            site: crate::site::fixture_site,
            run: idle,
            every_step: 0,
            depth: 1,
            seeded: 0,
        }
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_private_path_is_named_after_this_release() {
        // `#[browser_fault]` names `__private_v<major>_<minor>` from its own version; both
        // crates share the workspace's, so a release bump must rename the module in lib.rs.
        let release = concat!(
            "__private_v",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        );
        assert_eq!(release, "__private_v0_1");
        let _: fn(crate::__private_v0_1::ScenarioDef) -> crate::__private_v0_1::Scenario =
            crate::__private_v0_1::ScenarioDef::into_scenario;
    }
}
