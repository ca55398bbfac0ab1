//! browser-fault: prove that a browser agent is safe across crashes.
#![forbid(unsafe_code)]

pub mod plan;
pub mod registry;
pub mod site;
pub mod worker;

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

    /// The site a scenario gets when `site` is not given.
    #[cfg(feature = "fixture-site")]
    pub fn default_site() -> SiteSpec {
        crate::site::fixture_site()
    }
}
