//! The website under test, as the harness sees it: where it lives, and its ledger of what
//! the remote side actually accepted.

use std::fmt;
use std::sync::Arc;

/// One side effect the remote side accepted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemoteEffect {
    /// The site's sequence number for the effect.
    pub seq: u64,
    /// The request key the agent sent with it.
    pub request_key: String,
    /// The account the site attributed it to.
    pub account: String,
    /// The tenant of that account.
    pub tenant: String,
    /// The object it acted on.
    pub object: String,
}

/// What the remote side actually accepted, read without changing anything.
pub trait RemoteLedger: Send + Sync + fmt::Debug {
    /// Every accepted effect, in sequence order.
    fn effects(&self) -> Vec<RemoteEffect>;
}

/// How a trial gets its site: what `site = path` in `#[browser_fault]` returns.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SiteSpec {
    /// The bundled fixture site, started in-process on 127.0.0.1 for each trial.
    #[cfg(feature = "fixture-site")]
    Fixture(browser_fault_fixtures::SiteConfig),
    /// A site the user runs, with a read-only view of its ledger.
    External {
        /// The origin the agent must act on, e.g. `http://127.0.0.1:8080`.
        origin: String,
        /// The site's ledger.
        ledger: Arc<dyn RemoteLedger>,
    },
}

/// The default site: the bundled fixture site with its default configuration.
#[cfg(feature = "fixture-site")]
pub fn fixture_site() -> SiteSpec {
    SiteSpec::Fixture(browser_fault_fixtures::SiteConfig::default())
}
