//! browser-fault: prove that a browser agent is safe across crashes.
#![forbid(unsafe_code)]

pub mod plan;
pub mod runner;
pub mod registry;
pub mod site;
pub mod worker;

#[doc = include_str!("macro_docs.md")]
pub use browser_fault_macros::browser_fault;

/// The bundled fixture site.
#[cfg(feature = "fixture-site")]
pub use browser_fault_fixtures as fixtures;

#[doc(hidden)]
pub mod __private {
    //! Not public API: what `#[browser_fault]` generates calls into. May change in any release.
    pub use crate::plan::{Boundary, CrashMode, Hazard};
    pub use crate::registry::{Scenario, ScenarioFuture};
    pub use crate::site::SiteSpec;
    pub use crate::worker::{TaskResult, Worker};
    pub use core::time::Duration;
    pub use inventory;
    pub use std::boxed::Box;

    /// The entry of the `#[test]` fn that `#[browser_fault]` emits for ordinary (libtest)
    /// test targets: runs every trial of the scenario, or the worker role when re-entered.
    pub fn libtest_entry(module_path: &'static str, name: &'static str) {
        crate::runner::libtest_entry(module_path, name)
    }

    /// The site a scenario gets when `site` is not given.
    #[cfg(feature = "fixture-site")]
    pub fn default_site() -> SiteSpec {
        crate::site::fixture_site()
    }
}
