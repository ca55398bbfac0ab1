//! The site's own conventions, through its adapter: what a page shows, sign-in, identity,
//! an effect's status.

use std::future::Future;

use super::Page;
use crate::journal::RequestKey;
use crate::plan::Boundary;
use crate::worker::adapter::{Identity, PageFacts, PageKind};
use crate::worker::{Account, EffectStatus, TaskError, strike};

/// Whether the page is the fault proxy's own interstitial (its marker, see the proxy's
/// `interstitial` module).
const PROXY_INTERSTITIAL_JS: &str = "return document.querySelector('meta[name=\"browser-fault\"][content=\"interstitial\"]') !== null;";

impl Page {
    /// What the page shows, as the site's adapter reads it ([`Site::read_page`]); the fault
    /// proxy's own interstitial (a hazard on a site that cannot show its own) reads as
    /// [`PageKind::Interstitial`] whatever the adapter makes of it.
    ///
    /// [`Site::read_page`]: crate::site::Site::read_page
    pub fn read(&self) -> impl Future<Output = Result<PageFacts, TaskError>> + Send + use<> {
        self.stepped("read_page", |this| async move {
            let site = this.shared.site.clone();
            let facts = site.read_page(&this).await?;
            // An adapter reads a page it does not know as signed out or as nobody's: only
            // then is the page asked whether it is the proxy's (no command on other pages).
            if (facts.kind == PageKind::SignIn || facts.account.is_none())
                && this.shows_proxy_interstitial().await?
            {
                return Ok(
                    PageFacts::new(PageKind::Interstitial).label("browser-fault-interstitial")
                );
            }
            Ok(facts)
        })
    }

    /// Whether the page is the fault proxy's own interstitial: one command, inside the
    /// caller's step.
    async fn shows_proxy_interstitial(&self) -> Result<bool, TaskError> {
        let ret = self
            .driver()?
            .execute(PROXY_INTERSTITIAL_JS, Vec::new())
            .await
            .map_err(crate::browser::BrowserError::from)?;
        Ok(ret.json().as_bool() == Some(true))
    }

    /// Whether the site shows its sign-in page.
    pub fn is_sign_in(&self) -> impl Future<Output = Result<bool, TaskError>> + Send + use<> {
        let read = self.read();
        async move { Ok(read.await?.kind == PageKind::SignIn) }
    }

    /// Signs in as `account` through the site's adapter ([`Site::sign_in`]), then crosses
    /// the `after_login` fault point. A refused sign-in is a safe stop
    /// ([`SafeStop::NotSignedIn`](crate::worker::SafeStop::NotSignedIn)).
    ///
    /// [`Site::sign_in`]: crate::site::Site::sign_in
    pub fn sign_in(
        &self,
        account: &Account,
    ) -> impl Future<Output = Result<(), TaskError>> + Send + use<> {
        let this = self.clone();
        let account = account.clone();
        async move {
            let site = this.shared.site.clone();
            site.sign_in(&this, &account).await?;
            this.shared.log.line("signed in");
            strike(&this.shared, this.token, Boundary::AfterLogin.into()).await;
            Ok(())
        }
    }

    /// Who the site says this session is ([`Site::identity`]). Not signed in is a safe stop.
    ///
    /// [`Site::identity`]: crate::site::Site::identity
    pub fn identity(&self) -> impl Future<Output = Result<Identity, TaskError>> + Send + use<> {
        let this = self.clone();
        async move {
            let site = this.shared.site.clone();
            site.identity(&this).await
        }
    }

    /// The read-only reconciliation of an effect through the site's adapter
    /// ([`Site::effect_status`]), usable as `.reconcile(|p, key| p.effect_status(key))`.
    ///
    /// [`Site::effect_status`]: crate::site::Site::effect_status
    pub fn effect_status(
        &self,
        key: RequestKey,
    ) -> impl Future<Output = Result<EffectStatus, TaskError>> + Send + use<> {
        let this = self.clone();
        async move {
            let site = this.shared.site.clone();
            site.effect_status(&this, &key).await
        }
    }
}
