//! `after_target_verified`: a crash once `TARGET_VERIFIED` is durable, before the click; and
//! `account_switched`, where the profile's login comes to belong to another account while
//! worker 1 is down; and `orphaned_session`, on a remote endpoint (a grid), where worker 1's
//! browser session outlives it.

use super::{Crash, FaultUnit};
use crate::plan::{Boundary, FaultPoint, Variant};
use crate::site::SiteSpec;
use crate::trial::context::UnitCtx;

impl Variant {
    /// `after_target_verified`: during the crash the profile's login came to belong to
    /// another account, so trusting the old verification is caught.
    pub const ACCOUNT_SWITCHED: Variant = Variant::named("account_switched");
    /// `after_target_verified`, on a remote endpoint (a grid): the killed worker's browser
    /// session lives on, signed in and holding the profile, when the recovery starts. The
    /// recovery must stop safely, or take over only once the old session is proven gone.
    pub const ORPHANED_SESSION: Variant = Variant::named("orphaned_session");
}

pub(super) const VARIANTS: &[Option<Variant>] = &[
    None,
    Some(Variant::ACCOUNT_SWITCHED),
    Some(Variant::ORPHANED_SESSION),
];

pub(super) fn unit(variant: Option<Variant>) -> Option<&'static dyn FaultUnit> {
    match variant {
        None => Some(&CRASH),
        Some(Variant::ACCOUNT_SWITCHED) => Some(&AccountSwitched),
        Some(Variant::ORPHANED_SESSION) => Some(&OrphanedSession),
        Some(_) => None,
    }
}

static CRASH: Crash = Crash(Boundary::AfterTargetVerified);

struct AccountSwitched;

#[async_trait::async_trait]
impl FaultUnit for AccountSwitched {
    fn planned(&self) -> String {
        "account switched after a crash at after_target_verified".to_owned()
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        Some(FaultPoint::AfterTargetVerified)
    }

    fn expects_action(&self) -> bool {
        false
    }

    fn demands_stop(&self) -> Option<&'static str> {
        Some(super::account_switch::DEMANDS_STOP)
    }

    fn cannot_run(&self, site: &SiteSpec) -> Option<&'static str> {
        super::needs_other_account(site)
    }

    async fn while_down(&self, e: &mut UnitCtx<'_, '_>) -> Result<(), String> {
        super::account_switch::switch_profile_account(e).await
    }
}

struct OrphanedSession;

#[async_trait::async_trait]
impl FaultUnit for OrphanedSession {
    fn planned(&self) -> String {
        "the remote browser session left live (orphaned) after a crash at after_target_verified"
            .to_owned()
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        Some(FaultPoint::AfterTargetVerified)
    }

    fn cannot_run_at(&self, webdriver_url: Option<&str>) -> Option<&'static str> {
        webdriver_url.is_none().then_some(
            "needs a remote WebDriver endpoint (BROWSER_FAULT_WEBDRIVER_URL, a grid): a local browser dies with its worker's process group, so nothing is orphaned",
        )
    }

    fn keeps_orphan(&self) -> bool {
        true
    }

    async fn while_down(&self, e: &mut UnitCtx<'_, '_>) -> Result<(), String> {
        let open = crate::trial::remote::open_sessions(&e.journal, &e.run_id).await;
        if open.contains(&1) {
            Ok(())
        } else {
            Err("worker 1's remote session did not outlive it".to_owned())
        }
    }
}
