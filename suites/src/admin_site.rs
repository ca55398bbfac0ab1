//! The bundled site reached as a site of the user's own (by its URL, through the fault
//! proxy), with a reset and the optional capabilities a user's adapter offers through its site's admin
//! API or test hooks ([`Site::can_change`], [`Site::change`]). Here the "admin API" is the
//! test process's handle on the shared site ([`crate::shared_fixture_site`]); a user's
//! adapter would call its site's own endpoints the same way.

use browser_fault::fixtures::SiteHazard;
use browser_fault::prelude::*;
use browser_fault::site::{ChangeOf, Fixture, PageFacts, RemoteEffect, SiteChange, SiteError};

/// The site's own pages that [`AdminFixture::change`] switches on, and its reset off.
const SHOWN: [SiteHazard; 4] = [
    SiteHazard::LoginInterstitial,
    SiteHazard::ConsentInterstitial,
    SiteHazard::TenantMismatch,
    SiteHazard::StaleTab,
];

/// The bundled site's adapter ([`Fixture`], its ledger read over HTTP), a reset that puts
/// the shared site's records back before each trial, and the live changes it is given
/// ([`AdminFixture::with_changes`]): every trial type that needs one of them runs on this
/// "user's" site. All the scenarios of a binary share the one site, so each of them resets
/// it, whichever changes it makes.
#[derive(Debug)]
pub struct AdminFixture {
    inner: Fixture,
    changes: &'static [SiteChange],
}

impl AdminFixture {
    /// The adapter of the shared site, with no live change.
    pub fn new() -> Self {
        AdminFixture {
            inner: Fixture::new().with_ledger_url(crate::shared_fixture_site().ledger_url()),
            changes: &[],
        }
    }

    /// The adapter of the shared site served over HTTPS by `front`: its ledger read there.
    pub fn over(front: &crate::https_front::HttpsFront) -> Self {
        AdminFixture {
            inner: Fixture::new()
                .with_http(front.http())
                .with_ledger_url(front.ledger_url()),
            changes: &[],
        }
    }

    /// The adapter able to make `changes` ([`Site::can_change`]).
    pub fn with_changes(mut self, changes: &'static [SiteChange]) -> Self {
        self.changes = changes;
        self
    }
}

impl Default for AdminFixture {
    fn default() -> Self {
        AdminFixture::new()
    }
}

#[browser_fault::async_trait]
impl Site for AdminFixture {
    async fn sign_in(&self, page: &Page, account: &Account) -> Result<(), TaskError> {
        self.inner.sign_in(page, account).await
    }

    async fn read_page(&self, page: &Page) -> Result<PageFacts, TaskError> {
        self.inner.read_page(page).await
    }

    async fn identity(&self, page: &Page) -> Result<Identity, TaskError> {
        self.inner.identity(page).await
    }

    async fn effect_status(
        &self,
        page: &Page,
        key: &RequestKey,
    ) -> Result<EffectStatus, TaskError> {
        self.inner.effect_status(page, key).await
    }

    async fn ledger(&self) -> Result<Vec<RemoteEffect>, SiteError> {
        self.inner.ledger().await
    }

    /// Undoes what [`AdminFixture::change`] and [`AdminFixture::look_alike`] made for good on
    /// the shared site (a tenant move, an object swap, a rotated password, a page it shows, a
    /// look-alike message), as a user's reset must: the next trial starts on the site as it
    /// was. A switched session needs no undoing: every trial signs in with a new profile.
    async fn reset(&self) -> Result<(), SiteError> {
        let site = crate::shared_fixture_site();
        for demo in browser_fault::fixtures::DEMO_ACCOUNTS {
            site.move_account(demo.id, demo.tenant);
            site.set_password(demo.id, None);
        }
        for hazard in SHOWN {
            site.set_hazard(hazard, false);
        }
        site.clear_look_alikes();
        for route in 0..=browser_fault::fixtures::THREADS {
            site.swap_object(route, route);
        }
        self.inner.reset().await
    }

    fn home(&self) -> String {
        self.inner.home()
    }

    fn is_effect_request(&self, method: &str, path: &str) -> bool {
        self.inner.is_effect_request(method, path)
    }

    fn is_sign_in_request(&self, method: &str, path: &str) -> bool {
        self.inner.is_sign_in_request(method, path)
    }

    fn can_change(&self, change: SiteChange) -> bool {
        self.changes.contains(&change)
    }

    async fn change(&self, change: SiteChange, of: &ChangeOf<'_>) -> Result<(), SiteError> {
        let site = crate::shared_fixture_site();
        match change {
            SiteChange::SessionToOtherAccount => {
                let other = of.other_account.ok_or(SiteError::Unsupported(
                    "switch to an account the spec lacks",
                ))?;
                site.switch_account(&of.account.id, &other.id);
            }
            SiteChange::AccountToOtherTenant => {
                let tenant = of.account.tenant.as_deref().unwrap_or("");
                site.move_account(
                    &of.account.id,
                    browser_fault::fixtures::other_tenant(tenant),
                );
            }
            SiteChange::SwapObject => {
                let route: u32 =
                    of.object
                        .and_then(|o| o.parse().ok())
                        .ok_or(SiteError::Unsupported(
                            "swap an object the scenario does not name",
                        ))?;
                let other = if route < browser_fault::fixtures::THREADS {
                    route + 1
                } else {
                    route - 1
                };
                site.swap_object(route, other);
            }
            SiteChange::RotatePassword => {
                let new = of.new_password.ok_or(SiteError::Unsupported(
                    "rotate a password without the new one",
                ))?;
                site.set_password(&of.account.id, Some(new.expose()));
            }
            SiteChange::LoginInterstitial => site.set_hazard(SiteHazard::LoginInterstitial, true),
            SiteChange::ConsentInterstitial => {
                site.set_hazard(SiteHazard::ConsentInterstitial, true)
            }
            SiteChange::ApiForOtherTenant => site.set_hazard(SiteHazard::TenantMismatch, true),
            SiteChange::StaleTab => site.set_hazard(SiteHazard::StaleTab, true),
            _ => return Err(SiteError::Unsupported("make a change it does not know")),
        }
        Ok(())
    }

    /// Shows, through the site's admin API, a message like the agent's (its account, the
    /// scenario's thread, the body every agent of these suites sends) under the look-alike's
    /// key, and names the thread's page as a send's success names it.
    async fn look_alike(&self, of: &ChangeOf<'_>) -> Result<String, SiteError> {
        let key = of
            .look_alike_key
            .ok_or(SiteError::Unsupported("a look-alike without its key"))?;
        let thread: u32 = of
            .object
            .and_then(|o| o.parse().ok())
            .ok_or(SiteError::Unsupported(
                "a look-alike on a thread the scenario does not name",
            ))?;
        Ok(crate::shared_fixture_site().show_look_alike(&of.account.id, thread, "hello", key))
    }
}
