//! A site started for one trial: the fixture's knobs, or a user's site behind the fault
//! proxy; its ledger read with retries.

use std::sync::Arc;
use std::time::Duration;

use super::{ChangeOf, RemoteEffect, Site, SiteChange, SiteError, SiteKind, SiteSpec};
use crate::network_marks::{self, Mark};
use crate::plan::Hazard;
use crate::proxy::{
    DeclaredOrigin, EffectFault, EffectMatcher, Exchange, FaultProxy, Interstitial, SecretKind,
    Upstreams,
};
use crate::worker::{Account, Secret};

/// A mutex's value, whatever a panicking holder left (every value here is whole at each
/// step).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the site does to the next effect request (the `after_click` variants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EffectArm {
    /// Committed, the response held until the worker is gone.
    Landed,
    /// Held, then dropped: never committed.
    Lost,
    /// Never committed; answered `502` at once.
    RequestDropped,
    /// Committed; its response replaced by a `502`.
    ResponseDropped,
    /// Committed; answered slowly.
    Slow,
    /// Held uncommitted past its client's death, committed once the recovery has ended.
    LateLanding,
    /// Never committed; answered as a success that names a look-alike: the bundled site's
    /// own, or on a user's site the page of the one [`RunningSite::make_look_alike`] made.
    LookAlike,
}

/// A site started for one trial.
#[derive(Debug)]
pub(crate) struct RunningSite {
    spec: SiteSpec,
    kind: Running,
    /// Effects up to this sequence number were there before the trial.
    since_seq: u64,
    /// The first failed ledger read of the trial, for its verdicts.
    failure: std::sync::Mutex<Option<String>>,
    /// The proxy the fixture's browsers go through: it faults nothing (the fixture does),
    /// it reads what they send for secrets and keeps them on loopback.
    reader: Option<FaultProxy>,
    /// The password a user's site rotated the account's to in this trial
    /// ([`SiteChange::RotatePassword`]): the account source's answer from then on.
    rotated: std::sync::Mutex<Option<Secret>>,
    /// The look-alike a user's site made for this trial ([`Site::look_alike`]).
    look_alike: std::sync::Mutex<Option<LookAlike>>,
}

/// A success a user's site made that is not the agent's.
#[derive(Debug, Clone)]
struct LookAlike {
    /// The key it was made under: left out of the trial's ledger.
    key: String,
    /// The page that shows it, which the lost effect request is answered with.
    location: String,
}

#[derive(Debug)]
enum Running {
    /// The fixture site, in-process.
    #[cfg(feature = "fixture-site")]
    Fixture(browser_fault_fixtures::FixtureSite),
    /// A site the user runs, behind the fault proxy unless the spec turned it off.
    External {
        origin: String,
        proxy: Option<FaultProxy>,
    },
}

/// How long the proxy holds the response of a `live_slow_response` effect: as long as the
/// bundled site does.
const SLOW_RESPONSE: Duration = Duration::from_millis(1500);

/// The fixture's switch for a hazard the site itself shows; `None` for the harness's own.
#[cfg(feature = "fixture-site")]
fn fixture_hazard(h: Hazard) -> Option<browser_fault_fixtures::SiteHazard> {
    use Hazard as P;
    use browser_fault_fixtures::SiteHazard as F;
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

/// What the fault proxy of a user's site at `origin` may reach: the site's own origin and
/// the spec's declared ones, resolved and trusted as the spec says.
fn upstreams(reach: &super::Reach, origin: &str) -> Result<Upstreams, SiteError> {
    let mut upstreams = Upstreams::default();
    for origin in std::iter::once(origin).chain(reach.origins.iter().map(String::as_str)) {
        upstreams = upstreams.declare(DeclaredOrigin::parse(origin).map_err(SiteError::Spec)?);
    }
    for (host, ip) in &reach.names {
        upstreams = upstreams.resolve(host, *ip);
    }
    for pem in &reach.roots_pem {
        let certs = crate::tls::certificates_from_pem(pem)
            .map_err(|why| SiteError::Spec(format!("a root given to trust_root_pem is {why}")))?;
        for cert in certs {
            upstreams = upstreams.trust_root(cert);
        }
    }
    Ok(upstreams)
}

/// How often, and after what pauses, a failed ledger read is tried again.
const LEDGER_RETRIES: [Duration; 3] = [
    Duration::from_millis(100),
    Duration::from_millis(300),
    Duration::from_millis(1000),
];

impl RunningSite {
    /// Starts the fixture site, or resets a user's site and notes where its ledger stands.
    pub(crate) async fn start(spec: SiteSpec) -> Result<RunningSite, SiteError> {
        let kind = match &spec.kind {
            #[cfg(feature = "fixture-site")]
            SiteKind::Fixture(config) => Running::Fixture(
                browser_fault_fixtures::FixtureSite::start(config.clone())
                    .await
                    .map_err(|e| SiteError::Unreachable {
                        url: "the bundled fixture site".to_owned(),
                        source: Box::new(e),
                    })?,
            ),
            SiteKind::External { origin } => {
                let origin = origin.resolve()?;
                // Reached: its stop runs when the runner ends.
                if let Some(stop) = &spec.stop {
                    stop.arm();
                }
                let proxy = if spec.fault_proxy {
                    let upstreams = upstreams(&spec.reach, &origin)?;
                    Some(
                        FaultProxy::start_with(upstreams).map_err(|e| SiteError::Unreachable {
                            url: "the fault proxy on 127.0.0.1".to_owned(),
                            source: Box::new(e),
                        })?,
                    )
                } else {
                    None
                };
                Running::External { origin, proxy }
            }
        };
        #[cfg(feature = "fixture-site")]
        let reader = match &kind {
            Running::Fixture(_) => {
                Some(FaultProxy::start().map_err(|e| SiteError::Unreachable {
                    url: "the proxy on 127.0.0.1".to_owned(),
                    source: Box::new(e),
                })?)
            }
            Running::External { .. } => None,
        };
        #[cfg(not(feature = "fixture-site"))]
        let reader = None;
        let mut site = RunningSite {
            spec,
            kind,
            since_seq: 0,
            failure: std::sync::Mutex::new(None),
            reader,
            rotated: std::sync::Mutex::new(None),
            look_alike: std::sync::Mutex::new(None),
        };
        site.watch_secrets();
        if let Running::External { .. } = site.kind {
            site.spec.site.reset().await?;
            site.since_seq = site
                .read_ledger()
                .await?
                .iter()
                .map(|e| e.seq)
                .max()
                .unwrap_or(0);
        }
        Ok(site)
    }

    /// The site's adapter.
    pub(crate) fn adapter(&self) -> Arc<dyn Site> {
        self.spec.site.clone()
    }

    pub(crate) fn origin(&self) -> String {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => site.base_url(),
            Running::External { origin, .. } => origin.clone(),
        }
    }

    /// The proxy the browsers must go through, if the site has one.
    pub(crate) fn proxy_url(&self) -> Option<String> {
        self.watching_proxy().map(FaultProxy::proxy_url)
    }

    /// What the browsers must be told to trust of the proxy's own certificates
    /// (`--ignore-certificate-errors-spki-list`), if it intercepts an HTTPS origin.
    pub(crate) fn proxy_trust(&self) -> Option<String> {
        self.watching_proxy()
            .and_then(FaultProxy::trusted_spki)
            .map(str::to_owned)
    }

    /// Whether a browser reaches the site only through its proxy: the proxy intercepts its
    /// HTTPS or resolves its host name, which a browser of its own could not do alike.
    pub(crate) fn reached_only_through_proxy(&self) -> bool {
        self.proxy_trust().is_some() || !self.spec.reach.names.is_empty()
    }

    /// The proxy between the browsers and the site: the fixture's reader, or the fault
    /// proxy of a user's site (none when the spec turned it off).
    fn watching_proxy(&self) -> Option<&FaultProxy> {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(_) => self.reader.as_ref(),
            Running::External { proxy, .. } => proxy.as_ref(),
        }
    }

    /// Has the proxy read every request for the site's passwords and the suite's secrets.
    fn watch_secrets(&self) {
        let Some(proxy) = self.watching_proxy() else {
            return;
        };
        let adapter = self.adapter();
        proxy.watch_secrets(
            &self.origin(),
            Arc::new(move |method: &str, path: &str| adapter.is_sign_in_request(method, path)),
        );
        #[cfg(feature = "fixture-site")]
        if let Running::Fixture(_) = &self.kind {
            for account in browser_fault_fixtures::DEMO_ACCOUNTS {
                proxy.add_secret(SecretKind::Password, account.password);
            }
        }
        let passwords: Vec<&str> = [&self.spec.account, &self.spec.other_account]
            .into_iter()
            .flatten()
            .map(|a| a.password.expose())
            .collect();
        for secret in &self.spec.secrets {
            let kind = if passwords.contains(&secret.as_str()) {
                SecretKind::Password
            } else {
                SecretKind::Named
            };
            proxy.add_secret(kind, secret);
        }
    }

    /// Has the proxy between the browsers and the site note, in `dir`, each sign-in the site
    /// answered and each effect request it was sent and answered ([`Mark`]): the boundaries
    /// a worker's endpoints read from the network. Nothing is noted without a proxy (a
    /// site whose spec turned it off).
    pub(crate) fn note_network_in(&self, dir: &std::path::Path) {
        let Some(proxy) = self.watching_proxy() else {
            return;
        };
        let adapter = self.adapter();
        let dir = dir.to_owned();
        proxy.observe(Arc::new(move |exchange| match exchange {
            Exchange::Answer {
                method,
                path,
                status,
            } if status < 400 => {
                if adapter.is_sign_in_request(method, path) {
                    network_marks::note(&dir, Mark::SignInAnswered);
                } else if adapter.is_effect_request(method, path) {
                    network_marks::note(&dir, Mark::EffectAnswered);
                }
            }
            Exchange::Request { method, path }
                if adapter.is_effect_request(method, path)
                    && !adapter.is_sign_in_request(method, path) =>
            {
                network_marks::note(&dir, Mark::EffectSent);
            }
            _ => {}
        }));
    }

    /// Where the browsers sent a secret that must not be, by kind and place, the payloads
    /// the site stored for the trial's effects (`ledger`) read too: `None` when no proxy
    /// read what they sent.
    pub(crate) fn secrets_sent(&self, ledger: &[RemoteEffect]) -> Option<Vec<String>> {
        let proxy = self.watching_proxy()?;
        for e in ledger {
            if let Some(payload) = &e.payload {
                let place = format!("the payload the site stored for effect {}", e.seq);
                proxy.scan_stored(&place, payload);
            }
        }
        proxy.secrets_sent()
    }

    /// The account to act as: `id`, or the site's default.
    pub(crate) fn account(&self, id: Option<&str>) -> Option<Account> {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => {
                let demo =
                    browser_fault_fixtures::account_by_id(id.unwrap_or(super::DEFAULT_ACCOUNT))?;
                // The account source: the password as it is now, after any rotation.
                let password = site.password_of(demo.id)?;
                Some(Account {
                    id: demo.id.to_owned(),
                    tenant: Some(demo.tenant.to_owned()),
                    username: demo.username.to_owned(),
                    password: crate::worker::Secret::new(password),
                })
            }
            Running::External { .. } => {
                let account = self.spec.account.as_ref()?;
                if id.is_some_and(|id| id != account.id) {
                    return None;
                }
                let mut account = account.clone();
                if let Some(rotated) = lock(&self.rotated).as_ref() {
                    account.password = rotated.clone();
                }
                Some(account)
            }
        }
    }

    /// Arms the next effect as an `after_click` variant demands: held after landing, held
    /// and lost, lost at once, landed with its response lost, slow, landing late, or lost
    /// under a look-alike answer.
    ///
    /// Behind the fault proxy, the effect request is the first one the adapter names
    /// ([`Site::is_effect_request`]) while `submitted()` holds (the worker journaled
    /// `ACTION_SUBMITTED`).
    pub(crate) fn arm(
        &self,
        arm: EffectArm,
        submitted: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Option<()> {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => {
                // The fixture arms its own effect route: nothing else can take the arm.
                let _ = submitted;
                use browser_fault_fixtures::ArmedEffect as A;
                site.arm_next_effect(match arm {
                    EffectArm::Landed => A::Landed,
                    EffectArm::Lost => A::Lost,
                    EffectArm::RequestDropped => A::Dropped,
                    EffectArm::ResponseDropped => A::ResponseDropped,
                    EffectArm::Slow => A::Slow,
                    EffectArm::LateLanding => A::LateLanding,
                    EffectArm::LookAlike => A::LookAlike,
                });
                Some(())
            }
            Running::External { proxy, .. } => {
                let fault = match arm {
                    EffectArm::Landed => EffectFault::Landed,
                    EffectArm::Lost => EffectFault::Lost,
                    EffectArm::RequestDropped => EffectFault::Dropped,
                    EffectArm::ResponseDropped => EffectFault::ResponseDropped,
                    EffectArm::Slow => EffectFault::Slow(SLOW_RESPONSE),
                    EffectArm::LateLanding => EffectFault::LateLanding,
                    EffectArm::LookAlike => {
                        EffectFault::LookAlike(lock(&self.look_alike).as_ref()?.location.clone())
                    }
                };
                let site = self.spec.site.clone();
                let matcher = EffectMatcher::unsafe_methods()
                    .when(move |method, path| site.is_effect_request(method, path) && submitted());
                proxy.as_ref()?.arm(fault, matcher);
                Some(())
            }
        }
    }

    /// Changes the world under a live worker, as a live `after_login` variant demands:
    /// the account's sessions now belong to another account, the account moved to another
    /// tenant, or the route of the scenario's object serves another object. The bundled site
    /// makes it itself; a user's site through its adapter ([`Site::change`]), when it can.
    ///
    /// [`Site::change`]: crate::site::Site::change
    pub(crate) async fn change_world(
        &self,
        change: SiteChange,
        account: &Account,
        object: Option<&str>,
    ) -> Result<(), String> {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => {
                match change {
                    SiteChange::SessionToOtherAccount => site.switch_account(
                        &account.id,
                        browser_fault_fixtures::switched_account(&account.id),
                    ),
                    SiteChange::AccountToOtherTenant => site.move_account(
                        &account.id,
                        browser_fault_fixtures::other_tenant(
                            account.tenant.as_deref().unwrap_or(""),
                        ),
                    ),
                    SiteChange::SwapObject => {
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
                    SiteChange::RotatePassword => {
                        self.rotate_password(account).await?;
                    }
                    SiteChange::LookAlike => {
                        return Err(
                            "the bundled site shows its look-alike when its effect is armed".into(),
                        );
                    }
                    SiteChange::LoginInterstitial
                    | SiteChange::ConsentInterstitial
                    | SiteChange::ApiForOtherTenant
                    | SiteChange::StaleTab => {
                        use browser_fault_fixtures::SiteHazard as F;
                        site.set_hazard(
                            match change {
                                SiteChange::LoginInterstitial => F::LoginInterstitial,
                                SiteChange::ConsentInterstitial => F::ConsentInterstitial,
                                SiteChange::ApiForOtherTenant => F::TenantMismatch,
                                _ => F::StaleTab,
                            },
                            true,
                        );
                    }
                }
                Ok(())
            }
            Running::External { .. } if change == SiteChange::RotatePassword => {
                self.rotate_password(account).await
            }
            Running::External { .. } => {
                let adapter = &self.spec.site;
                if !adapter.can_change(change) {
                    return Err(format!(
                        "this site's adapter cannot make the change {change:?}"
                    ));
                }
                let of = ChangeOf::new(account, self.spec.other_account.as_ref(), object);
                adapter.change(change, &of).await.map_err(|e| {
                    format!(
                        "the site's adapter failed to make the change {change:?}: {}",
                        crate::error::error_chain(&e)
                    )
                })
            }
        }
    }

    pub(crate) async fn wait_armed_reached(&self, limit: Duration) {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => {
                let _ = tokio::time::timeout(limit, site.wait_armed_reached()).await;
            }
            Running::External { proxy, .. } => {
                if let Some(proxy) = proxy {
                    let _ = tokio::time::timeout(limit, proxy.wait_reached()).await;
                }
            }
        }
    }

    /// Takes back an arm that no request took (the worker never sent it). Returns whether
    /// one was still pending.
    pub(crate) fn disarm(&self) -> bool {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => site.disarm_next_effect(),
            Running::External { proxy, .. } => proxy.as_ref().is_some_and(FaultProxy::disarm),
        }
    }

    /// Rotates `account`'s password (signing its sessions out): the bundled site makes a new
    /// one itself, a user's site is given one the harness made, through its adapter
    /// ([`Site::change`] with [`SiteChange::RotatePassword`]). Either way the new password is
    /// scanned for from before it exists anywhere, and [`RunningSite::account`] answers with
    /// it from then on, as an account source would.
    ///
    /// [`Site::change`]: crate::site::Site::change
    pub(crate) async fn rotate_password(&self, account: &Account) -> Result<(), String> {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => {
                site.rotate_password(&account.id);
                if let (Some(proxy), Some(new)) = (&self.reader, site.password_of(&account.id)) {
                    proxy.add_secret(SecretKind::Password, &new);
                }
                Ok(())
            }
            Running::External { proxy, .. } => {
                let adapter = &self.spec.site;
                if !adapter.can_change(SiteChange::RotatePassword) {
                    return Err(
                        "this site's adapter cannot make the change RotatePassword".to_owned()
                    );
                }
                let new = Secret::new(format!("bf-rotated-{:032x}", rand::random::<u128>()));
                if let Some(proxy) = proxy {
                    proxy.add_secret(SecretKind::Password, new.expose());
                }
                *lock(&self.rotated) = Some(new.clone());
                let of = ChangeOf::new(account, self.spec.other_account.as_ref(), None)
                    .with_new_password(&new);
                adapter
                    .change(SiteChange::RotatePassword, &of)
                    .await
                    .map_err(|e| {
                        format!(
                            "the site's adapter failed to make the change RotatePassword: {}",
                            crate::error::error_chain(&e)
                        )
                    })
            }
        }
    }

    /// Lets a held late landing commit, and resolves once it has (at once when none is
    /// held, and on a site that cannot hold one).
    pub(crate) async fn release_late(&self) {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => site.release_late().await,
            Running::External { proxy, .. } => {
                if let Some(proxy) = proxy {
                    proxy.release_late().await;
                }
            }
        }
    }

    pub(crate) fn release_held(&self) {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => site.release_held(),
            Running::External { proxy, .. } => {
                if let Some(proxy) = proxy {
                    proxy.release_held();
                }
            }
        }
    }

    /// Switches a hazard the site shows on or off. `Err`: this site cannot show it.
    pub(crate) fn set_hazard(&self, hazard: Hazard, on: bool) -> Result<(), &'static str> {
        match &self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => {
                if hazard == Hazard::ExpiredSession && on {
                    site.expire_sessions();
                }
                if let Some(h) = fixture_hazard(hazard) {
                    site.set_hazard(h, on);
                }
                Ok(())
            }
            Running::External { proxy, .. } => match (hazard, proxy) {
                // The session ends at the site for every cookie the browsers held so far.
                (Hazard::ExpiredSession, Some(proxy)) if on => {
                    proxy.expire_cookies();
                    Ok(())
                }
                _ => Err("this site cannot show the hazard"),
            },
        }
    }

    /// Stands the fault proxy's own `kind` of interstitial before every page of a user's site
    /// ([`FaultProxy::show_interstitial`]). `Err`: the site has no fault proxy.
    pub(crate) fn show_interstitial(&self, kind: Interstitial) -> Result<(), &'static str> {
        match &self.kind {
            Running::External {
                proxy: Some(proxy), ..
            } => {
                proxy.show_interstitial(kind);
                Ok(())
            }
            _ => Err("only the fault proxy of a user's site shows its own interstitials"),
        }
    }

    /// How many times the fault proxy's interstitial was shown ([`FaultProxy::interstitials_shown`]).
    pub(crate) fn interstitials_shown(&self) -> u64 {
        match &self.kind {
            Running::External {
                proxy: Some(proxy), ..
            } => proxy.interstitials_shown(),
            _ => 0,
        }
    }

    /// Whether this is the bundled fixture site, which switches a profile's account with a
    /// knob of its own rather than through a browser.
    pub(crate) fn is_fixture(&self) -> bool {
        #[cfg(feature = "fixture-site")]
        if let Running::Fixture(_) = self.kind {
            return true;
        }
        false
    }

    /// The spec the site was started from.
    pub(crate) fn spec(&self) -> &SiteSpec {
        &self.spec
    }

    /// The ledger's effects of this trial, in sequence order; a failed read is tried again
    /// briefly before its error is returned.
    /// Has a user's site make a success that is not the agent's, under a key of the trial's
    /// own derived from `run_id` ([`Site::look_alike`]), for [`EffectArm::LookAlike`] to
    /// answer the lost effect with; the look-alike is left out of the trial's ledger. A
    /// no-op on the bundled site, which shows its own.
    pub(crate) async fn make_look_alike(
        &self,
        run_id: &str,
        account: &Account,
        object: Option<&str>,
    ) -> Result<(), String> {
        if self.is_fixture() {
            return Ok(());
        }
        let key = crate::journal::RequestKey::derive(run_id, "browser-fault look-alike");
        let of = ChangeOf::new(account, self.spec.other_account.as_ref(), object)
            .with_look_alike_key(key.as_str());
        let location = self.spec.site.look_alike(&of).await.map_err(|e| {
            format!(
                "the site's adapter failed to make a look-alike success: {}",
                crate::error::error_chain(&e)
            )
        })?;
        *lock(&self.look_alike) = Some(LookAlike {
            key: key.as_str().to_owned(),
            location,
        });
        Ok(())
    }

    pub(crate) async fn ledger(&self) -> Result<Vec<RemoteEffect>, SiteError> {
        let look_alike = lock(&self.look_alike).as_ref().map(|l| l.key.clone());
        match self.read_ledger().await {
            Ok(effects) => Ok(effects
                .into_iter()
                .filter(|e| e.seq > self.since_seq)
                .filter(|e| look_alike.as_deref() != Some(e.request_key.as_str()))
                .collect()),
            Err(e) => {
                self.note_failure(&e);
                Err(e)
            }
        }
    }

    /// The ledger's highest sequence number now (0 when empty, or when it cannot be read:
    /// that failure is kept for the trial's verdicts, see [`RunningSite::ledger_failure`]).
    pub(crate) async fn ledger_seq(&self) -> u64 {
        match self.read_ledger().await {
            Ok(effects) => effects.iter().map(|e| e.seq).max().unwrap_or(0),
            Err(e) => {
                self.note_failure(&e);
                0
            }
        }
    }

    /// Why a ledger read of this trial failed, if one did.
    pub(crate) fn ledger_failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn note_failure(&self, e: &SiteError) {
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        if failure.is_none() {
            *failure = Some(crate::error::error_chain(e));
        }
    }

    async fn read_ledger(&self) -> Result<Vec<RemoteEffect>, SiteError> {
        #[cfg(feature = "fixture-site")]
        if let Running::Fixture(site) = &self.kind {
            return Ok(site.ledger().into_iter().map(RemoteEffect::from).collect());
        }
        let mut pauses = LEDGER_RETRIES.iter();
        loop {
            match self.spec.site.ledger().await {
                Ok(effects) => return Ok(effects),
                Err(e) if e.is_transient() => match pauses.next() {
                    Some(pause) => tokio::time::sleep(*pause).await,
                    None => return Err(e),
                },
                Err(e) => return Err(e),
            }
        }
    }

    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut secrets = self.spec.secrets.clone();
        secrets.extend(lock(&self.rotated).as_ref().map(|s| s.expose().to_owned()));
        #[cfg(feature = "fixture-site")]
        if let Running::Fixture(site) = &self.kind {
            secrets.extend(site.secrets());
        }
        secrets
    }

    pub(crate) async fn shutdown(self) {
        match self.kind {
            #[cfg(feature = "fixture-site")]
            Running::Fixture(site) => {
                site.shutdown().await;
                if let Some(reader) = self.reader {
                    reader.shutdown().await;
                }
            }
            Running::External { proxy, .. } => {
                if let Some(proxy) = proxy {
                    proxy.shutdown().await;
                }
            }
        }
    }
}
