//! browser-fault: prove that a browser agent is safe across crashes.
//!
//! Annotate an agent's task with [`#[browser_fault]`](browser_fault); each trial kills the
//! worker at a lifecycle boundary (a real SIGKILL of a real Chromium's worker), runs a
//! recovery worker on the same profile, and judges what the website accepted.
//!
//! # The public API
//!
//! - [`prelude`]: what a scenario file needs (`use browser_fault::prelude::*;`).
//! - [`macro@browser_fault`] and [`main!`]: the attribute that registers a scenario, and the
//!   `main` of a `harness = false` test target ([`runner::main_with`] for settings of your
//!   own; [`runner::Conclusion`] is what a run returns).
//! - [`worker`]: [`Worker`](worker::Worker), [`Page`](worker::Page),
//!   [`Target`](worker::Target), the side-effect protocol
//!   ([`SideEffect`](worker::SideEffect)), accounts and secrets, the typed errors and safe
//!   stops.
//! - [`site`]: your site: the [`Site`](site::Site) trait you implement once,
//!   [`SiteSpec`](site::SiteSpec), the bundled site's adapter, an HTTP client for ledgers.
//! - [`journal`]: checkpoints and request keys ([`Checkpoint`](journal::Checkpoint),
//!   [`RequestKey`](journal::RequestKey)).
//! - [`plan`]: boundaries, variants, hazards, crash modes.
//! - [`trial`], [`evidence`], [`oracle`]: a trial, its settings and report, the evidence it
//!   writes and the invariants it judges, for runners and checks of your own.
//! - [`profile`]: the profile store (profiles, owner markers, policy findings).
//! - [`fixtures`] (feature `fixture-site`, on by default): the bundled fixture site.
//! - [`BrowserBinaries`]: the Chromium and chromedriver the harness runs (found through
//!   `BROWSER_FAULT_CHROME`, `BROWSER_FAULT_CHROMEDRIVER` or `PATH`), for a browser pool of
//!   your own that must run the same ones.
//!
//! [`trial::scenarios`] lists the scenarios `#[browser_fault]` registered, for a runner of
//! your own.
//!
//! The other modules (`browser`, `cleanup`, `fault`, `lease`, `liveness`, `logtail`,
//! `proxy`) are hidden from these docs: they are the harness's own layers, public only for
//! its tests and the code the attribute generates, and may change in any release.
#![forbid(unsafe_code)]

#[doc(hidden)]
pub mod browser;
#[doc(hidden)]
pub mod cleanup;
mod error;
pub mod evidence;
#[doc(hidden)]
pub mod fault;
pub mod journal;
#[doc(hidden)]
pub mod lease;
#[doc(hidden)]
pub mod liveness;
#[doc(hidden)]
pub mod logtail;
pub mod oracle;
mod outcome;
pub mod plan;
pub mod profile;
#[doc(hidden)]
pub mod proxy;
pub mod report;
pub mod runner;
mod scenario;
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

/// The Chromium and chromedriver the harness runs, and why they could not be found.
pub use browser::{BrowserBinaries, PreflightError};

/// The bundled fixture site.
#[cfg(feature = "fixture-site")]
pub use browser_fault_fixtures as fixtures;

/// Not public API: what `#[browser_fault]` generates calls into. May change in any release.
///
/// Versioned as the two crates are (`browser-fault` pins `browser-fault-macros` with `=`):
/// an attribute of another release names another module, and the build says the module is
/// missing instead of failing on a type in the user's code.
#[doc(hidden)]
pub mod __private_v0_1 {
    pub use crate::plan::{Boundary, CrashMode, Hazard};
    pub use crate::scenario::{Scenario, ScenarioDef, ScenarioFuture};
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
