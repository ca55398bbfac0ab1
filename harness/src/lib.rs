//! browser-fault: prove that a browser agent is safe across crashes.
#![forbid(unsafe_code)]

pub mod browser;
pub mod cleanup;
mod error;
pub mod evidence;
pub mod fault;
pub mod journal;
pub mod lease;
pub mod logtail;
pub mod oracle;
pub mod plan;
pub mod process;
pub mod profile;
pub mod proxy;
pub mod registry;
pub mod report;
pub mod runner;
pub mod site;
pub mod trial;
pub mod worker;

/// The JSON values [`worker::Page::script`] and [`worker::Page::api_get`] return, and what a
/// site adapter parses its ledger into.
pub use serde_json;

/// Implements [`site::Site`] (an `async` trait) for your site's adapter: put it on the
/// `impl` block.
pub use async_trait::async_trait;

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

/// What a scenario file needs: `use browser_fault::prelude::*;`.
pub mod prelude {
    pub use crate::browser_fault;
    pub use crate::journal::{Checkpoint, RequestKey};
    pub use crate::plan::Boundary;
    pub use crate::site::{Identity, PageFacts, PageKind, RemoteEffect, Site, SiteError, SiteSpec};
    pub use crate::worker::{
        Account, EffectStatus, Outcome, Page, SafeStop, Secret, Target, TaskError, TaskResult,
        Worker,
    };
}
