//! The website under test, as the harness sees it.
//!
//! A user implements [`Site`] once for their site: how to sign in through the page, how to
//! tell a sign-in page apart, who the site says the session is, what a page targets, the
//! status of an effect by request key, and the ledger of what the site actually accepted.
//! [`SiteSpec`] says where the site lives and which accounts to act as; it is what
//! `site = path` in `#[browser_fault]` returns. The bundled fixture site implements [`Site`]
//! like any user would ([`Fixture`]).
//!
//! Between the browser and a site of the user's own sits the harness's fault proxy: it
//! holds, loses or drops the request that carries the side effect, and expires the
//! session's cookies, so the `after_click` variants and the network faults run against any
//! site. What still cannot run against a site is listed as ignored, with its reason
//! ([`SiteSpec::cannot_run`]).

#[cfg(feature = "fixture-site")]
mod fixture;
mod http;
mod running;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

#[cfg(feature = "fixture-site")]
pub use fixture::Fixture;
pub use http::Http;
pub(crate) use running::RunningSite;

use crate::journal::RequestKey;
use crate::plan::{Boundary, Hazard};
use crate::trial::{FaultPlan, Trial, Variant};
use crate::worker::{Account, EffectStatus, Page, TaskError};

/// One side effect the remote side accepted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteEffect {
    /// The site's sequence number for the effect: unique, increasing.
    pub seq: u64,
    /// The request key the agent sent with it (empty when it sent none).
    pub request_key: String,
    /// The account the site attributed it to.
    pub account: String,
    /// The tenant of that account, on a site that has tenants.
    pub tenant: Option<String>,
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
            tenant: Some(e.tenant),
            object: e.object,
        }
    }
}

/// Who the site says a session is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The account, as [`Account::id`] names it.
    pub account_id: String,
    /// Its tenant, on a site that has tenants.
    pub tenant_id: Option<String>,
}

/// What kind of page the browser shows, as far as an agent's safety goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum PageKind {
    /// The site asks to sign in.
    SignIn,
    /// A page that stands between the agent and its target (a consent or re-login prompt):
    /// never clicked through.
    Interstitial,
    /// The site says the object the page was opened for is gone or changed.
    Stale,
    /// Anything else: the site's content.
    Content,
}

/// What the current page shows, read by the site's adapter ([`Site::read_page`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PageFacts {
    /// The kind of page.
    pub kind: PageKind,
    /// The site's own name for the page (`thread`, `issue.item`…), for logs and tests.
    pub label: Option<String>,
    /// The account the page says is signed in.
    pub account: Option<String>,
    /// The tenant the page names.
    pub tenant: Option<String>,
    /// The object the page shows (a thread, an issue…).
    pub object: Option<String>,
}

impl PageFacts {
    /// A page of `kind` that names nothing yet.
    pub fn new(kind: PageKind) -> Self {
        PageFacts {
            kind,
            label: None,
            account: None,
            tenant: None,
            object: None,
        }
    }
    /// The site's own name for the page.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
    /// The account the page names.
    pub fn account(mut self, account: impl Into<String>) -> Self {
        self.account = Some(account.into());
        self
    }
    /// The tenant the page names.
    pub fn tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }
    /// The object the page shows.
    pub fn object(mut self, object: impl Into<String>) -> Self {
        self.object = Some(object.into());
        self
    }
}

/// Why the harness could not read the site (its ledger, or a reset).
///
/// URLs in these errors carry no query string: a ledger token must not reach a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SiteError {
    /// Nothing answered, or the connection broke.
    #[error("the site could not be reached at {url}")]
    Unreachable {
        /// The URL, without its query string.
        url: String,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The site answered with an error status.
    #[error("the site answered {status} to {url}")]
    Status {
        /// The URL, without its query string.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The site's answer was not what the adapter expected.
    #[error("the site's answer to {url} could not be read: {why}")]
    Reply {
        /// The URL, without its query string.
        url: String,
        /// What was wrong with it.
        why: String,
    },
    /// The adapter cannot do this here (e.g. read the ledger inside a worker process).
    #[error("the site adapter cannot {0}")]
    Unsupported(&'static str),
    /// Anything else the adapter reports.
    #[error("{0}")]
    Other(String),
}

impl SiteError {
    /// Whether trying again soon may help (the site was down or busy).
    pub fn is_transient(&self) -> bool {
        match self {
            SiteError::Unreachable { .. } => true,
            SiteError::Status { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}

/// A website as the harness drives and judges it: implement it once for your site.
///
/// The browser-side methods run inside a worker, on the worker's [`Page`] (with the
/// session's cookies); keep them read-only except [`sign_in`](Site::sign_in). The
/// harness-side methods run in the test process and must not use a browser.
///
/// Implement it with `#[browser_fault::async_trait]` on the impl block:
///
/// ```no_run
/// use browser_fault::prelude::*;
/// use browser_fault::site::{Http, PageFacts, PageKind, RemoteEffect, SiteError};
///
/// #[derive(Debug)]
/// struct Tracker { http: Http, ledger_url: String }
///
/// #[browser_fault::async_trait]
/// impl Site for Tracker {
///     async fn sign_in(&self, page: &Page, account: &Account) -> Result<(), TaskError> {
///         page.fill("input[name=user]", &account.username).await?;
///         page.fill("input[name=pass]", account.password.expose()).await?;
///         page.click("button[type=submit]").await?;
///         page.wait_for("#logout").await
///     }
///     async fn read_page(&self, page: &Page) -> Result<PageFacts, TaskError> {
///         let signed_in_as = page.script("return document.querySelector('#whoami')?.textContent ?? null").await?;
///         Ok(match signed_in_as.as_str() {
///             Some(who) => PageFacts::new(PageKind::Content).account(who),
///             None => PageFacts::new(PageKind::SignIn),
///         })
///     }
///     async fn identity(&self, page: &Page) -> Result<Identity, TaskError> {
///         let facts = self.read_page(page).await?;
///         let account_id = facts.account.ok_or(SafeStop::NotSignedIn)?;
///         Ok(Identity { account_id, tenant_id: None })
///     }
///     async fn effect_status(&self, page: &Page, key: &RequestKey) -> Result<EffectStatus, TaskError> {
///         let (_, found) = page.api_get(&format!("/api/search?key={key}")).await?;
///         Ok(if found.as_array().is_some_and(|a| !a.is_empty()) { EffectStatus::Present } else { EffectStatus::Absent })
///     }
///     async fn ledger(&self) -> Result<Vec<RemoteEffect>, SiteError> {
///         self.http.get_json(&self.ledger_url).await
///     }
/// }
/// ```
#[async_trait]
pub trait Site: Send + Sync + fmt::Debug + 'static {
    /// Signs in as `account` through the page, which shows the site's sign-in page. Returns
    /// once the site has answered; a refused sign-in is [`SafeStop::NotSignedIn`]. The
    /// worker crosses the `after_login` fault point after it ([`Page::sign_in`]).
    ///
    /// [`SafeStop::NotSignedIn`]: crate::worker::SafeStop::NotSignedIn
    async fn sign_in(&self, page: &Page, account: &Account) -> Result<(), TaskError>;

    /// What the current page shows: a sign-in page, an interstitial, a stale object, or
    /// content, with the account, tenant and object it names. The harness's target check
    /// ([`Page::expect_target`]) compares these with what the agent expects.
    async fn read_page(&self, page: &Page) -> Result<PageFacts, TaskError>;

    /// Who the site says this session is, asked of the site itself (an API, a profile
    /// page), not read from the current page. Not signed in is [`SafeStop::NotSignedIn`].
    ///
    /// [`SafeStop::NotSignedIn`]: crate::worker::SafeStop::NotSignedIn
    async fn identity(&self, page: &Page) -> Result<Identity, TaskError>;

    /// Whether the site holds the effect sent with `key`: the read-only reconciliation of
    /// an effect whose outcome the agent did not observe. Must not change anything.
    async fn effect_status(&self, page: &Page, key: &RequestKey)
    -> Result<EffectStatus, TaskError>;

    /// Every effect the site accepted, in sequence order, read by the harness (not the
    /// browser) without changing anything. Errors are retried briefly, then reported in the
    /// trial's verdicts: never a panic.
    async fn ledger(&self) -> Result<Vec<RemoteEffect>, SiteError>;

    /// Brings the site back to a known state before a trial (default: nothing; the trial
    /// then judges only the effects that appeared while it ran).
    async fn reset(&self) -> Result<(), SiteError> {
        Ok(())
    }

    /// A route of the site that shows its sign-in page to a signed-out browser (default
    /// `/`): where the harness signs a profile in as another account.
    fn home(&self) -> String {
        "/".to_owned()
    }

    /// Whether a request of the browser carries a side effect: the fault proxy holds, loses
    /// or drops the first such request of an `after_click` trial. By default any request
    /// whose method is not `GET`, `HEAD` or `OPTIONS`; narrow it when the site signs in or
    /// autosaves with such requests too. `path` has no query string.
    fn is_effect_request(&self, method: &str, path: &str) -> bool {
        let _ = path;
        !matches!(method, "GET" | "HEAD" | "OPTIONS")
    }
}

/// How a trial gets its site: what `site = path` in `#[browser_fault]` returns.
#[derive(Clone, Debug)]
pub struct SiteSpec {
    pub(crate) kind: SiteKind,
    pub(crate) site: Arc<dyn Site>,
    pub(crate) account: Option<Account>,
    pub(crate) other_account: Option<Account>,
    pub(crate) secrets: Vec<String>,
    pub(crate) fault_proxy: bool,
}

#[derive(Clone, Debug)]
pub(crate) enum SiteKind {
    /// The bundled fixture site, started in-process on 127.0.0.1 for each trial.
    #[cfg(feature = "fixture-site")]
    Fixture(browser_fault_fixtures::SiteConfig),
    /// A site the user runs.
    External { origin: Origin },
}

/// Where a user's site lives: known, or known once the user's code has started it.
#[derive(Clone)]
pub(crate) enum Origin {
    Fixed(String),
    Started(Arc<dyn Fn() -> Result<String, SiteError> + Send + Sync>),
}

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Fixed(origin) => f.write_str(origin),
            Origin::Started(_) => f.write_str("<started by the suite>"),
        }
    }
}

impl Origin {
    pub(crate) fn resolve(&self) -> Result<String, SiteError> {
        let origin = match self {
            Origin::Fixed(origin) => origin.clone(),
            Origin::Started(start) => start()?,
        };
        Ok(origin.trim_end_matches('/').to_owned())
    }
}

impl SiteSpec {
    /// The bundled fixture site with `config`, started for each trial (the default site).
    #[cfg(feature = "fixture-site")]
    pub fn fixture(config: browser_fault_fixtures::SiteConfig) -> Self {
        SiteSpec {
            kind: SiteKind::Fixture(config),
            site: Arc::new(Fixture::new()),
            account: None,
            other_account: None,
            secrets: Vec::new(),
            fault_proxy: false,
        }
    }

    /// A site the user runs at `origin` (e.g. `http://127.0.0.1:8080`), driven and judged
    /// through `site`, acting as `account`. The account's password is always scanned for in
    /// evidence.
    ///
    /// The site's ledger is shared by every trial: unless [`Site::reset`] empties it, a
    /// trial judges only the effects that appeared while it ran, so run such trials one at
    /// a time (`--test-threads=1`).
    pub fn new(origin: impl Into<String>, site: impl Site, account: Account) -> Self {
        SiteSpec::with_origin(Origin::Fixed(origin.into()), site, account)
    }

    /// A site the test binary starts itself: `start` returns its origin, starting it the
    /// first time (memoize it, e.g. in a `OnceLock`). The harness calls it in the test
    /// process only, once per trial, never in a worker process: the function given to
    /// `site = path` runs there too, for the adapter's browser-side methods, and must stay
    /// cheap. A failed start is the trial's typed error, not a panic.
    pub fn started(
        start: impl Fn() -> Result<String, SiteError> + Send + Sync + 'static,
        site: impl Site,
        account: Account,
    ) -> Self {
        SiteSpec::with_origin(Origin::Started(Arc::new(start)), site, account)
    }

    fn with_origin(origin: Origin, site: impl Site, account: Account) -> Self {
        let secrets = vec![account.password.expose().to_owned()];
        SiteSpec {
            kind: SiteKind::External { origin },
            site: Arc::new(site),
            account: Some(account),
            other_account: None,
            secrets,
            fault_proxy: true,
        }
    }

    /// A second account of the site: the trials that switch the profile's sign-in to
    /// another account during the crash sign it in through [`Site::sign_in`]. Without it
    /// they are listed as ignored.
    pub fn other_account(mut self, account: Account) -> Self {
        self.secrets.push(account.password.expose().to_owned());
        self.other_account = Some(account);
        self
    }

    /// Adds strings the evidence scan must never find (API tokens…). Cookie values the
    /// browsers held are found and added by the harness itself.
    pub fn with_secrets(mut self, more: impl IntoIterator<Item = String>) -> Self {
        self.secrets.extend(more);
        self
    }

    /// Runs the browser straight to the site, without the fault proxy: the trials that need
    /// it are then listed as ignored.
    pub fn without_fault_proxy(mut self) -> Self {
        self.fault_proxy = false;
        self
    }

    /// Whether every trial shares this one site (a user's site), so trials take turns.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self.kind, SiteKind::External { .. })
    }

    /// The site's adapter.
    pub fn adapter(&self) -> Arc<dyn Site> {
        self.site.clone()
    }

    /// Why `trial` cannot run against this site, or `None` when it can. Such a trial is
    /// listed as ignored with this reason, never run against a site that cannot make its
    /// fault deterministic.
    pub fn cannot_run(&self, trial: &Trial) -> Option<&'static str> {
        #[cfg(feature = "fixture-site")]
        if let SiteKind::Fixture(_) = self.kind {
            return None;
        }
        const NO_PROXY: &str = "needs the fault proxy (the site spec turned it off)";
        const NO_OTHER: &str = "needs a second account of the site (`SiteSpec::other_account`)";
        match trial.plan {
            FaultPlan::Boundary {
                boundary: Boundary::AfterClick,
                ..
            } if !self.fault_proxy => Some(NO_PROXY),
            FaultPlan::Boundary {
                variant: Some(Variant::AccountSwitched | Variant::OtherAccount),
                ..
            } if self.other_account.is_none() => Some(NO_OTHER),
            FaultPlan::Boundary {
                variant:
                    Some(
                        Variant::LiveAccountSwitch
                        | Variant::LiveTenantSwitch
                        | Variant::LiveObjectSwap,
                    ),
                ..
            } => Some(
                "changes the site's own records under a live session: only the bundled site has that knob",
            ),
            FaultPlan::Boundary { .. } => None,
            FaultPlan::Hazard { hazard } => match hazard {
                Hazard::ExpiredSession if !self.fault_proxy => Some(NO_PROXY),
                Hazard::ExpiredSession | Hazard::BrowserVersionChanged => None,
                Hazard::AccountSwitch if self.other_account.is_none() => Some(NO_OTHER),
                Hazard::AccountSwitch => None,
                Hazard::CredentialRotated => {
                    Some("rotates the account's password: only the bundled site has that knob")
                }
                Hazard::LoginInterstitial
                | Hazard::ConsentInterstitial
                | Hazard::TenantMismatch
                | Hazard::StaleTab => Some("a page only the bundled site shows"),
            },
        }
    }
}

/// The default site: the bundled fixture site with its default configuration.
#[cfg(feature = "fixture-site")]
pub fn fixture_site() -> SiteSpec {
    SiteSpec::fixture(browser_fault_fixtures::SiteConfig::default())
}

/// The account a scenario acts as on the fixture site when `account` is not given.
pub const DEFAULT_ACCOUNT: &str = "acct-test-42";

#[cfg(all(test, feature = "fixture-site"))]
mod tests {
    use super::*;
    use crate::plan::CrashMode;
    use crate::registry::{Scenario, ScenarioFuture};
    use crate::worker::{Secret, Worker};

    fn idle(_: &mut Worker) -> ScenarioFuture<'_> {
        Box::pin(async { Ok(crate::worker::Outcome::Completed) })
    }

    static EVERYTHING: Scenario = Scenario::new(
        "s",
        "m",
        "f.rs",
        1,
        &Boundary::ALL,
        &[
            Hazard::ExpiredSession,
            Hazard::AccountSwitch,
            Hazard::CredentialRotated,
            Hazard::StaleTab,
            Hazard::BrowserVersionChanged,
        ],
        CrashMode::Kill,
        Scenario::DEFAULT_TIMEOUT,
        None,
        None,
        fixture_site,
        idle,
    );

    fn account(id: &str) -> Account {
        Account {
            id: id.to_owned(),
            tenant: None,
            username: id.to_owned(),
            password: Secret::new("pw"),
        }
    }

    #[test]
    fn a_users_site_says_why_a_trial_cannot_run() {
        let trials = crate::trial::expand(&EVERYTHING);
        let reason = |spec: &SiteSpec, name: &str| {
            let trial = trials
                .iter()
                .find(|t| t.name() == format!("s::{name}"))
                .unwrap_or_else(|| panic!("no trial {name}"));
            spec.cannot_run(trial)
        };
        let fixture = fixture_site();
        assert!(trials.iter().all(|t| fixture.cannot_run(t).is_none()));

        let user = SiteSpec::new("http://127.0.0.1:1/", Fixture::new(), account("alice"));
        for runs in [
            "after_click::landed",
            "after_click::live_request_lost",
            "hazard::expired_session",
            "hazard::browser_version_changed",
            "concurrent_profile::lock_removed",
            "stale_profile_restore::older_generation",
        ] {
            assert_eq!(reason(&user, runs), None, "{runs}");
        }
        let no_proxy = user.clone().without_fault_proxy();
        assert!(reason(&no_proxy, "after_click::lost").is_some_and(|r| r.contains("proxy")));
        assert!(reason(&no_proxy, "hazard::expired_session").is_some_and(|r| r.contains("proxy")));
        for switch in [
            "after_target_verified::account_switched",
            "stale_profile_restore::other_account",
            "hazard::account_switch",
        ] {
            assert!(
                reason(&user, switch).is_some_and(|r| r.contains("second account")),
                "{switch}"
            );
            let both = user.clone().other_account(account("bob"));
            assert_eq!(reason(&both, switch), None, "{switch}");
        }
        for knob in [
            "after_login::live_account_switch",
            "hazard::credential_rotated",
            "hazard::stale_tab",
        ] {
            assert!(
                reason(&user, knob).is_some_and(|r| r.contains("bundled site")),
                "{knob}"
            );
        }
    }

    #[test]
    fn the_other_accounts_password_is_a_secret_too() {
        let spec = SiteSpec::new("http://127.0.0.1:1", Fixture::new(), account("alice"))
            .other_account(account("bob"));
        assert_eq!(spec.secrets, ["pw", "pw"]);
    }
}
