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

/// A site started for one trial.
#[derive(Debug)]
pub(crate) enum RunningSite {
    /// The fixture site, in-process.
    #[cfg(feature = "fixture-site")]
    Fixture(browser_fault_fixtures::FixtureSite),
    /// A site the user runs.
    External {
        origin: String,
        ledger: Arc<dyn RemoteLedger>,
    },
}

#[cfg(feature = "fixture-site")]
fn fixture_hazard(h: crate::plan::Hazard) -> browser_fault_fixtures::Hazard {
    use crate::plan::Hazard as P;
    use browser_fault_fixtures::Hazard as F;
    match h {
        P::ExpiredSession => F::ExpiredSession,
        P::LoginInterstitial => F::LoginInterstitial,
        P::ConsentInterstitial => F::ConsentInterstitial,
        P::TenantMismatch => F::TenantMismatch,
        P::AccountSwitch => F::AccountSwitch,
        P::StaleTab => F::StaleTab,
    }
}

impl RunningSite {
    pub(crate) async fn start(
        spec: SiteSpec,
        _hazard: Option<crate::plan::Hazard>,
    ) -> std::io::Result<RunningSite> {
        match spec {
            #[cfg(feature = "fixture-site")]
            SiteSpec::Fixture(config) => Ok(RunningSite::Fixture(
                browser_fault_fixtures::FixtureSite::start(config).await?,
            )),
            SiteSpec::External { origin, ledger } => Ok(RunningSite::External { origin, ledger }),
        }
    }

    pub(crate) fn origin(&self) -> String {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => site.base_url(),
            RunningSite::External { origin, .. } => origin.clone(),
        }
    }

    /// The account to act as: `id`, or the site's default.
    pub(crate) fn account(&self, id: Option<&str>) -> Option<crate::worker::Account> {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(_) => {
                let demo = browser_fault_fixtures::account_by_id(id.unwrap_or(DEFAULT_ACCOUNT))?;
                Some(crate::worker::Account {
                    id: demo.id.to_owned(),
                    tenant: demo.tenant.to_owned(),
                    username: demo.username.to_owned(),
                    password: crate::worker::Secret::new(demo.password),
                })
            }
            RunningSite::External { .. } => None,
        }
    }

    /// Arms the next effect: landed, or lost.
    pub(crate) fn arm(&self, lost: bool) -> Option<()> {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => {
                use browser_fault_fixtures::ArmedEffect;
                site.arm_next_effect(if lost {
                    ArmedEffect::Lost
                } else {
                    ArmedEffect::Landed
                });
                Some(())
            }
            RunningSite::External { .. } => None,
        }
    }

    pub(crate) async fn wait_armed_reached(&self, limit: std::time::Duration) {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => {
                let _ = tokio::time::timeout(limit, site.wait_armed_reached()).await;
            }
            RunningSite::External { .. } => {}
        }
    }

    pub(crate) fn release_held(&self) {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => site.release_held(),
            RunningSite::External { .. } => {}
        }
    }

    pub(crate) fn set_hazard(&self, hazard: crate::plan::Hazard, on: bool) {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => {
                if hazard == crate::plan::Hazard::ExpiredSession && on {
                    site.expire_sessions();
                }
                site.set_hazard(fixture_hazard(hazard), on);
            }
            RunningSite::External { .. } => {
                let _ = (hazard, on);
            }
        }
    }

    pub(crate) fn ledger(&self) -> Vec<RemoteEffect> {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => site
                .ledger()
                .into_iter()
                .map(|e| RemoteEffect {
                    seq: e.seq,
                    request_key: e.request_key,
                    account: e.account,
                    tenant: e.tenant,
                    object: e.object,
                })
                .collect(),
            RunningSite::External { ledger, .. } => ledger.effects(),
        }
    }

    pub(crate) fn secrets(&self) -> Vec<String> {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => site.secrets(),
            RunningSite::External { .. } => Vec::new(),
        }
    }

    pub(crate) async fn shutdown(self) {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => site.shutdown().await,
            RunningSite::External { .. } => {}
        }
    }
}

/// The account a scenario acts as on the fixture site when `account` is not given.
pub const DEFAULT_ACCOUNT: &str = "acct-test-42";
