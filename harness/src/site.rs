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

#[cfg(feature = "fixture-site")]
impl From<browser_fault_fixtures::LedgerEntry> for RemoteEffect {
    fn from(e: browser_fault_fixtures::LedgerEntry) -> Self {
        RemoteEffect {
            seq: e.seq,
            request_key: e.request_key,
            account: e.account,
            tenant: e.tenant,
            object: e.object,
        }
    }
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
    /// A site the user runs, with a read-only view of its ledger. Build it with
    /// [`SiteSpec::external`].
    ///
    /// Such a site has no fault knobs: the trials that need them (`after_click`, which must
    /// hold or lose a request at the site, the variants that switch the account during the
    /// crash, and hazard trials) are listed as ignored. Its ledger is shared by every trial,
    /// so a trial judges only the effects that appeared while it ran: run them one at a time
    /// (`--test-threads=1`).
    External {
        /// The origin the agent must act on, e.g. `http://127.0.0.1:8080`.
        origin: String,
        /// The site's ledger.
        ledger: Arc<dyn RemoteLedger>,
        /// The account the scenario acts as.
        account: crate::worker::Account,
        /// Strings that must never appear in evidence (passwords, cookie values, tokens).
        secrets: Vec<String>,
    },
}

impl SiteSpec {
    /// A site the user runs at `origin`, with its read-only `ledger`, acting as `account`.
    /// The account's password is always scanned for in evidence.
    pub fn external(
        origin: impl Into<String>,
        ledger: Arc<dyn RemoteLedger>,
        account: crate::worker::Account,
    ) -> Self {
        let secrets = vec![account.password.expose().to_owned()];
        SiteSpec::External {
            origin: origin.into(),
            ledger,
            account,
            secrets,
        }
    }

    /// Adds strings the evidence scan must never find (cookie values, API tokens…).
    pub fn with_secrets(mut self, more: impl IntoIterator<Item = String>) -> Self {
        if let SiteSpec::External { secrets, .. } = &mut self {
            secrets.extend(more);
        }
        self
    }

    /// Whether the site has the fault knobs some trials need (hold or lose a request,
    /// switch the account, switch a hazard on).
    pub fn has_fault_knobs(&self) -> bool {
        match self {
            #[cfg(feature = "fixture-site")]
            SiteSpec::Fixture(_) => true,
            SiteSpec::External { .. } => false,
        }
    }
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
        account: crate::worker::Account,
        secrets: Vec<String>,
        /// Effects up to this sequence number were there before the trial.
        since_seq: u64,
    },
}

/// The fixture's switch for a hazard the site itself shows; `None` for the harness's own.
#[cfg(feature = "fixture-site")]
fn fixture_hazard(h: crate::plan::Hazard) -> Option<browser_fault_fixtures::Hazard> {
    use crate::plan::Hazard as P;
    use browser_fault_fixtures::Hazard as F;
    Some(match h {
        P::ExpiredSession => F::ExpiredSession,
        P::LoginInterstitial => F::LoginInterstitial,
        P::ConsentInterstitial => F::ConsentInterstitial,
        P::TenantMismatch => F::TenantMismatch,
        P::AccountSwitch => F::AccountSwitch,
        P::StaleTab => F::StaleTab,
        P::BrowserVersionChanged | P::CredentialRotated => return None,
    })
}

impl RunningSite {
    pub(crate) async fn start(spec: SiteSpec) -> std::io::Result<RunningSite> {
        match spec {
            #[cfg(feature = "fixture-site")]
            SiteSpec::Fixture(config) => Ok(RunningSite::Fixture(
                browser_fault_fixtures::FixtureSite::start(config).await?,
            )),
            SiteSpec::External {
                origin,
                ledger,
                account,
                secrets,
            } => {
                let since_seq = ledger.effects().iter().map(|e| e.seq).max().unwrap_or(0);
                Ok(RunningSite::External {
                    origin,
                    ledger,
                    account,
                    secrets,
                    since_seq,
                })
            }
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
            RunningSite::Fixture(site) => {
                let demo = browser_fault_fixtures::account_by_id(id.unwrap_or(DEFAULT_ACCOUNT))?;
                // The account source: the password as it is now, after any rotation.
                let password = site.password_of(demo.id)?;
                Some(crate::worker::Account {
                    id: demo.id.to_owned(),
                    tenant: demo.tenant.to_owned(),
                    username: demo.username.to_owned(),
                    password: crate::worker::Secret::new(password),
                })
            }
            RunningSite::External { account, .. } => {
                if id.is_some_and(|id| id != account.id) {
                    return None;
                }
                Some(account.clone())
            }
        }
    }

    /// Arms the next effect as an `after_click` variant demands: held after landing, held
    /// and lost, lost at once, landed with its response lost, or slow.
    pub(crate) fn arm(&self, variant: Option<crate::trial::Variant>) -> Option<()> {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => {
                use crate::trial::Variant as V;
                use browser_fault_fixtures::ArmedEffect as A;
                site.arm_next_effect(match variant {
                    Some(V::Lost) => A::Lost,
                    Some(V::LiveRequestLost) => A::Dropped,
                    Some(V::LiveResponseLost) => A::ResponseDropped,
                    Some(V::LiveSlowResponse) => A::Slow,
                    _ => A::Landed,
                });
                Some(())
            }
            RunningSite::External { .. } => {
                let _ = variant;
                None
            }
        }
    }

    /// Changes the world under a live worker, as a live `after_login` variant demands:
    /// the account's sessions now belong to another account, the account moved to another
    /// tenant, or the route `/threads/{object}` serves another object.
    pub(crate) fn change_world(
        &self,
        variant: crate::trial::Variant,
        account: &crate::worker::Account,
        object: Option<&str>,
    ) -> Result<(), &'static str> {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => {
                use crate::trial::Variant as V;
                match variant {
                    V::LiveAccountSwitch => site.switch_account(
                        &account.id,
                        browser_fault_fixtures::switched_account(&account.id),
                    ),
                    V::LiveTenantSwitch => site.move_account(
                        &account.id,
                        browser_fault_fixtures::other_tenant(&account.tenant),
                    ),
                    V::LiveObjectSwap => {
                        let route: u32 = object.and_then(|o| o.parse().ok()).ok_or(
                            "the scenario declares no thread object (`effects = \"42\"`) to swap",
                        )?;
                        let other = if route < browser_fault_fixtures::THREADS {
                            route + 1
                        } else {
                            route - 1
                        };
                        site.swap_object(route, other);
                    }
                    _ => return Err("not a world change"),
                }
                Ok(())
            }
            RunningSite::External { .. } => {
                let _ = (variant, account, object);
                Err("this site has no knob to change the world")
            }
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

    /// Takes back an arm that no request took (the worker never sent it). Returns whether
    /// one was still pending.
    pub(crate) fn disarm(&self) -> bool {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => site.disarm_next_effect(),
            RunningSite::External { .. } => false,
        }
    }

    /// Rotates the account's password (signing its sessions out). `None`: this site cannot.
    pub(crate) fn rotate_password(&self, account: &str) -> Option<()> {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => {
                site.rotate_password(account);
                Some(())
            }
            RunningSite::External { .. } => {
                let _ = account;
                None
            }
        }
    }

    /// The ledger's highest sequence number now (0 when empty).
    pub(crate) fn ledger_seq(&self) -> u64 {
        self.ledger().iter().map(|e| e.seq).max().unwrap_or(0)
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
                if let Some(h) = fixture_hazard(hazard) {
                    site.set_hazard(h, on);
                }
            }
            RunningSite::External { .. } => {
                let _ = (hazard, on);
            }
        }
    }

    pub(crate) fn ledger(&self) -> Vec<RemoteEffect> {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => {
                site.ledger().into_iter().map(RemoteEffect::from).collect()
            }
            RunningSite::External {
                ledger, since_seq, ..
            } => ledger
                .effects()
                .into_iter()
                .filter(|e| e.seq > *since_seq)
                .collect(),
        }
    }

    pub(crate) fn secrets(&self) -> Vec<String> {
        match self {
            #[cfg(feature = "fixture-site")]
            RunningSite::Fixture(site) => site.secrets(),
            RunningSite::External { secrets, .. } => secrets.clone(),
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
