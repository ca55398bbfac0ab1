//! browser-fault: prove that a browser agent is safe across crashes.
//!
//! Annotate an agent's task with [`#[browser_fault]`](browser_fault); each trial kills the
//! worker at a lifecycle boundary (a real SIGKILL of a real Chromium's worker), runs a
//! recovery worker on the same profile, and judges what the website accepted.
//!
//! # Quick start
//!
//! A `harness = false` test target (`[[test]] name = "agent", harness = false` in your
//! `Cargo.toml`, browser-fault your only dev-dependency) holds the scenarios and ends with
//! [`main!`]; `cargo test --test agent` then runs every trial against the bundled fixture
//! site, one per boundary and variant (`send_message::after_click::landed`, …):
//!
//! ```no_run
//! // tests/agent.rs
//! use browser_fault::prelude::*;
//!
//! #[browser_fault(at = "all", hazards = "all", effects = "42")]
//! async fn send_message(w: &mut Worker) -> TaskResult {
//!     let route = "/threads/42";
//!     w.require_trusted_profile()?; // refuses a profile rolled back to an older generation
//!     let page = w.open(route).await?;
//!     if page.is_sign_in().await? {
//!         let account = w.account().clone();
//!         page.sign_in(&account).await?;
//!     }
//!     w.probe_identity().await?; // never trust a profile's login
//!     let target = w.target().route(route).object("42").api();
//!     w.side_effect("send-hello")
//!         .verify(move |p| p.expect_target(target.clone()))
//!         .act(|p, key| async move {
//!             p.fill("#request-key", key.as_str()).await?;
//!             p.click("button#send").await
//!         })
//!         .confirm(|p, key| async move {
//!             // Its own message; a stale object (stop); or an answer that says nothing of
//!             // it (an error page, or a success notice without its key: another send's
//!             // answer), so the protocol reconciles. Tried in order.
//!             let mine = format!("[data-sent-key=\"{key}\"]");
//!             let answers = [
//!                 mine.as_str(),
//!                 "body[data-page=stale]",
//!                 "body[data-page=unavailable]",
//!                 "body:not([data-page])",
//!                 "#sent-notice",
//!             ];
//!             match p.wait_for_any(&answers).await? {
//!                 0 => Ok(()),
//!                 1 => Err(SafeStop::StaleTarget.into()),
//!                 _ => Err(TaskError::UnexpectedReply { what: "the send" }),
//!             }
//!         })
//!         .reconcile(|p, key| p.effect_status(key))
//!         .run()
//!         .await
//! }
//!
//! browser_fault::main!();
//! ```
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
//! The harness's own layers (the browser, the lease, the cleanup, the fault proxy, …) are
//! private; nothing outside this crate may rely on them.
#![forbid(unsafe_code)]
// Without `_internal`, what only the harness's own tests reach through it (the lease's
// renewal, the fault proxy's request log, …) is unreachable and unused. The builds that
// check these lints (`cargo clippy --all-targets`, `cargo test`) turn `_internal` on.
#![cfg_attr(
    not(feature = "_internal"),
    expect(
        dead_code,
        unreachable_pub,
        reason = "the items `_internal` re-exports for the harness's own tests"
    )
)]

// The harness's own layers: crate-private, so that the compiler flags their dead code and
// their `pub` items that nothing outside reaches. The harness's own tests reach what they
// need through `_internal`.
mod browser;
mod cleanup;
mod error;
pub mod evidence;
mod exit;
mod fault;
pub mod journal;
mod lease;
mod liveness;
mod logtail;
mod network_marks;
pub mod oracle;
mod outcome;
pub mod plan;
pub mod profile;
mod proxy;
pub mod report;
pub mod runner;
mod scenario;
pub mod site;
mod startgate;
mod tls;
pub mod trial;
pub mod worker;
mod worker_role;

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
    pub use crate::worker::{AgentCommand, TaskResult, Worker};
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
    pub use crate::plan::{Boundary, FaultPoint};
    pub use crate::site::{Identity, PageFacts, PageKind, RemoteEffect, Site, SiteError, SiteSpec};
    pub use crate::worker::{
        Account, AgentCommand, EffectStatus, FailureKind, Outcome, Page, SafeStop, Secret, Target,
        TargetCheck, TaskError, TaskResult, Worker,
    };
}

/// Not public API: what the harness's own integration tests, benches and doctests of private
/// items reach of its private layers, behind the `_internal` feature (insta's
/// `_cargo_insta_support`). May change in any release.
///
/// Enabled by the harness's dev-dependency on itself (`Cargo.toml`), so that `cargo test`
/// (`--workspace`, `-p browser-fault --test X`), `cargo bench` and `cargo clippy
/// --all-targets` see it, and a plain build of the library does not.
#[cfg(feature = "_internal")]
#[doc(hidden)]
pub mod _internal {
    /// The browser layer.
    pub mod browser {
        pub use crate::browser::{Browser, BrowserError, BrowserOptions, HEADLESS_FLAGS};
        /// The process accounting.
        pub mod process {
            pub use crate::browser::process::{
                kill_group, kill_profile_processes, processes_using_profile, wait_dead,
            };
        }
    }
    /// The cleanup coordinator.
    pub mod cleanup {
        pub use crate::cleanup::{
            CleanupCoordinator, CleanupOutcome, CleanupReason, CleanupReport, KeepReason,
            KeptProfile, SweepReport,
        };
    }
    /// The fault hook and its records.
    pub mod fault {
        pub use crate::fault::ScreenshotRef;
        pub use crate::worker::hook::FaultHook;
    }
    /// The profile lease.
    pub mod lease {
        pub use crate::lease::{Lease, LeaseErrorKind, LeaseHolder, claim_lease, lease_row};
    }
    /// Process liveness.
    pub mod liveness {
        pub use crate::liveness::{host_name, pid_alive, process_start_ticks};
    }
    /// The fault proxy.
    pub mod proxy {
        pub use crate::proxy::interstitial::CONTINUE_PATH;
        pub use crate::proxy::{
            DeclaredOrigin, EffectFault, EffectMatcher, Exchange, ExchangeObserver, FaultProxy,
            Interstitial, ProxiedRequest, SecretKind, SignInPredicate, Upstreams,
        };
    }
    /// A worker outside any trial.
    pub mod worker {
        pub use crate::worker::spec::WorkerSpec;

        /// Starts a worker outside any trial: no fault point is armed, nobody listens, the
        /// log is kept in memory ([`Worker::log_tail`](crate::worker::Worker::log_tail)).
        pub async fn start_standalone(
            spec: WorkerSpec,
            site: std::sync::Arc<dyn crate::site::Site>,
        ) -> Result<crate::worker::Worker, crate::worker::TaskError> {
            crate::worker::Worker::start_standalone(spec, site).await
        }

        /// The WebDriver server of the worker's current session (its chromedriver), which
        /// the worker's endpoint forwards to: for measuring what the endpoint adds.
        pub fn webdriver_server(w: &crate::worker::Worker) -> Option<String> {
            w.webdriver_server()
        }

        /// The browser's own DevTools address (`host:port`), which the worker's CDP endpoint
        /// forwards to: for measuring what the endpoint adds.
        pub fn devtools_address(w: &crate::worker::Worker) -> Option<String> {
            w.devtools_address()
        }
    }
}

/// The clients browser-fault ships for agents in other languages ([`worker::AgentCommand`]):
/// one file each, standard library only, in the crate's own `clients/` folder.
pub mod clients {
    use std::path::Path;

    /// The folder of `browser_fault.py`, the Python client: put it on the agent's
    /// `PYTHONPATH` (`AgentCommand::env("PYTHONPATH", python_dir())`).
    pub fn python_dir() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/clients/python"))
    }

    /// `browser-fault.mjs`, the Node client (an ES module with no dependencies): an agent
    /// imports it by this path, which its command gets as `BROWSER_FAULT_NODE_CLIENT`.
    pub fn node_client() -> &'static Path {
        Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/clients/node/browser-fault.mjs"
        ))
    }
}
