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
//! ([`Trial::cannot_run`](crate::trial::Trial::cannot_run)).

#[cfg(feature = "fixture-site")]
mod fixture;
mod http;
mod running;

use std::fmt;
use std::sync::Arc;

pub use crate::worker::adapter::{
    ChangeOf, Identity, PageFacts, PageKind, RemoteEffect, Site, SiteChange, SiteError,
};
#[cfg(feature = "fixture-site")]
pub use fixture::Fixture;
pub use http::Http;
pub(crate) use running::{EffectArm, RunningSite};

use crate::worker::Account;

/// How a trial gets its site: what `site = path` in `#[browser_fault]` returns.
#[derive(Clone, Debug)]
pub struct SiteSpec {
    pub(crate) kind: SiteKind,
    pub(crate) site: Arc<dyn Site>,
    pub(crate) account: Option<Account>,
    pub(crate) other_account: Option<Account>,
    pub(crate) secrets: Vec<String>,
    pub(crate) fault_proxy: bool,
    /// The reach of the fault proxy beyond the site's own origin ([`SiteSpec::declare_origin`],
    /// [`SiteSpec::resolve`], [`SiteSpec::trust_root_pem`]).
    pub(crate) reach: Reach,
    /// What stops a site the suite started, run once when the runner's process ends.
    pub(crate) stop: Option<SiteStop>,
}

/// What a site spec declares about the origins its browsers reach, as given: checked when
/// a trial starts, so a wrong one is that trial's typed error.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reach {
    pub(crate) origins: Vec<String>,
    pub(crate) names: Vec<(String, std::net::IpAddr)>,
    pub(crate) roots_pem: Vec<String>,
}

/// The stop of a site the suite started ([`SiteSpec::stopped_by`]): its closure's type names
/// it, so the spec built anew for every trial registers one stop, not one per trial.
#[derive(Clone)]
pub(crate) struct SiteStop {
    kind: std::any::TypeId,
    run: crate::exit::ExitHook,
}

impl SiteStop {
    /// Registers the stop to run when the runner's process ends (once, whatever number of
    /// trials started the site).
    pub(crate) fn arm(&self) {
        crate::exit::at_exit(self.kind, self.run.clone());
    }
}

impl fmt::Debug for SiteStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<stop of the site>")
    }
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
            reach: Reach::default(),
            stop: None,
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
            reach: Reach::default(),
            stop: None,
        }
    }

    /// What stops the site once the runner is done with it: `stop` runs once, in the test
    /// process, when the runner of `main!` ends, after a SIGINT or SIGTERM too (after every
    /// worker and browser of the run has been stopped), and only if a trial reached the
    /// site (for [`SiteSpec::started`], only once `start` returned its origin). Keep it
    /// short: the exit waits for it at most 10 s. A SIGKILL runs nothing, and neither does
    /// an ordinary `#[test]` target, which libtest ends: for those, tie the site's life to
    /// the test process (a pipe it holds open, `PR_SET_PDEATHSIG`), as the Roundup suite's
    /// `serve.sh` does.
    pub fn stopped_by<F: Fn() + Send + Sync + 'static>(mut self, stop: F) -> Self {
        self.stop = Some(SiteStop {
            kind: std::any::TypeId::of::<F>(),
            run: Arc::new(stop),
        });
        self
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

    /// Lets the browsers reach `origin` (`scheme://host[:port]`) too, beside the site's own:
    /// a sign-in service, an API or an asset host the site's pages use. The fault proxy
    /// forwards to loopback and to the declared origins only (the site's own is always
    /// declared); a request anywhere else is answered `403` with a message naming it. An
    /// `https` origin, the site's own included, is intercepted: the proxy speaks TLS to the
    /// browser with a certificate of an authority it makes for the trial (Chromium trusts
    /// it by its key's hash; nothing is installed anywhere) and to the site with the
    /// site's own, so every network fault and the cookie expiry work as over `http`. A
    /// malformed origin fails each trial with [`SiteError::Spec`].
    pub fn declare_origin(mut self, origin: impl Into<String>) -> Self {
        self.reach.origins.push(origin.into());
        self
    }

    /// Has the fault proxy resolve `host` to `ip` instead of asking the system, as Chromium's
    /// `--host-resolver-rules` or curl's `--resolve` would: a site on loopback under its
    /// real name (`https://shop.example.test:8443` served on 127.0.0.1). The origin's port
    /// is used. Give the adapter's [`Http`] the same with [`Http::resolve`].
    pub fn resolve(mut self, host: impl Into<String>, ip: std::net::IpAddr) -> Self {
        self.reach
            .names
            .push((host.into().to_ascii_lowercase(), ip));
        self
    }

    /// Has the fault proxy trust the certificates of `pem` (`-----BEGIN CERTIFICATE-----`
    /// blocks) as roots beside the system's when it checks an `https` site's certificate:
    /// for a site whose certificate its own authority signed. Text without a certificate
    /// fails each trial with [`SiteError::Spec`]. Give the adapter's [`Http`] the same with
    /// [`Http::trust_root_pem`].
    pub fn trust_root_pem(mut self, pem: impl Into<String>) -> Self {
        self.reach.roots_pem.push(pem.into());
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

    /// Whether this is the bundled fixture site, with every knob.
    pub(crate) fn is_fixture(&self) -> bool {
        !self.is_shared()
    }

    /// Whether the fault proxy stands between the browsers and the site.
    pub(crate) fn has_fault_proxy(&self) -> bool {
        self.fault_proxy
    }

    /// Whether the spec names a second account for the account switches.
    pub(crate) fn has_other_account(&self) -> bool {
        self.other_account.is_some()
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
    use crate::plan::{Boundary, Hazard};
    use crate::scenario::{Scenario, ScenarioDef};
    use crate::worker::Secret;

    static EVERYTHING: Scenario = ScenarioDef {
        hazards: &Hazard::ALL,
        ..ScenarioDef::for_tests("s", &Boundary::ALL)
    }
    .into_scenario();

    fn account(id: &str) -> Account {
        Account {
            id: id.to_owned(),
            tenant: None,
            username: id.to_owned(),
            password: Secret::new("pw"),
        }
    }

    /// An adapter that can make every live change (and is never driven here).
    #[derive(Debug)]
    struct Changing;

    #[async_trait::async_trait]
    impl Site for Changing {
        async fn sign_in(
            &self,
            _: &crate::worker::Page,
            _: &Account,
        ) -> Result<(), crate::worker::TaskError> {
            Err(crate::worker::SafeStop::NotSignedIn.into())
        }
        async fn read_page(
            &self,
            _: &crate::worker::Page,
        ) -> Result<PageFacts, crate::worker::TaskError> {
            Ok(PageFacts::new(PageKind::SignIn))
        }
        async fn identity(
            &self,
            _: &crate::worker::Page,
        ) -> Result<Identity, crate::worker::TaskError> {
            Err(crate::worker::SafeStop::NotSignedIn.into())
        }
        async fn effect_status(
            &self,
            _: &crate::worker::Page,
            _: &crate::journal::RequestKey,
        ) -> Result<crate::worker::EffectStatus, crate::worker::TaskError> {
            Ok(crate::worker::EffectStatus::Absent)
        }
        async fn ledger(&self) -> Result<Vec<RemoteEffect>, SiteError> {
            Ok(Vec::new())
        }
        fn can_change(&self, _: SiteChange) -> bool {
            true
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
            trial.cannot_run_on(spec)
        };
        let fixture = fixture_site();
        assert!(trials.iter().all(|t| t.cannot_run_on(&fixture).is_none()));

        let user = SiteSpec::new("http://127.0.0.1:1/", Fixture::new(), account("alice"));
        for runs in [
            "after_click::landed",
            "after_click::live_request_lost",
            "after_click::late_landing",
            "hazard::expired_session",
            "hazard::browser_version_changed",
            "concurrent_profile::lock_removed",
            "stale_profile_restore::older_generation",
        ] {
            assert_eq!(reason(&user, runs), None, "{runs}");
        }
        assert!(
            reason(&user, "after_click::live_look_alike")
                .is_some_and(|r| r.contains("Site::can_change(SiteChange::LookAlike)"))
        );
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
        for live in [
            "after_login::live_account_switch",
            "after_login::live_tenant_switch",
            "after_login::live_object_swap",
        ] {
            assert!(
                reason(&user, live).is_some_and(|r| r.contains("Site::can_change")),
                "{live}"
            );
        }
        // An adapter that offers the changes runs them; the account switch still needs the
        // account to switch to.
        let changing = SiteSpec::new("http://127.0.0.1:1/", Changing, account("alice"));
        assert_eq!(reason(&changing, "after_login::live_tenant_switch"), None);
        assert_eq!(reason(&changing, "after_login::live_object_swap"), None);
        assert_eq!(reason(&changing, "after_click::live_look_alike"), None);
        assert!(
            reason(
                &changing.clone().without_fault_proxy(),
                "after_click::live_look_alike"
            )
            .is_some_and(|r| r.contains("proxy"))
        );
        assert!(
            reason(&changing, "after_login::live_account_switch")
                .is_some_and(|r| r.contains("SiteSpec::other_account"))
        );
        let changing = changing.other_account(account("bob"));
        assert_eq!(reason(&changing, "after_login::live_account_switch"), None);
        // The hazards a user's site shows through its adapter: each names its change where the
        // adapter cannot, and runs where it can.
        for (hazard, change) in [
            ("hazard::credential_rotated", "SiteChange::RotatePassword"),
            ("hazard::tenant_mismatch", "SiteChange::ApiForOtherTenant"),
            ("hazard::stale_tab", "SiteChange::StaleTab"),
        ] {
            assert!(
                reason(&user, hazard).is_some_and(|r| r.contains(change)),
                "{hazard}: {:?}",
                reason(&user, hazard)
            );
            assert_eq!(reason(&changing, hazard), None, "{hazard}");
        }
        // The interstitials: the fault proxy stands its own before a site that cannot show
        // the site's; without the proxy, the change is named.
        for (hazard, change) in [
            (
                "hazard::login_interstitial",
                "SiteChange::LoginInterstitial",
            ),
            (
                "hazard::consent_interstitial",
                "SiteChange::ConsentInterstitial",
            ),
        ] {
            assert_eq!(reason(&user, hazard), None, "{hazard}");
            assert_eq!(reason(&changing, hazard), None, "{hazard}");
            assert!(
                reason(&no_proxy, hazard).is_some_and(|r| r.contains(change)),
                "{hazard}: {:?}",
                reason(&no_proxy, hazard)
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
