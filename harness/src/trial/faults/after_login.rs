//! `after_login`: a crash once signed in, before the identity probe; and the live variants,
//! where the world changes under the running worker before its verify step.

use super::{Crash, FaultUnit};
use crate::fault::Resume;
use crate::plan::{Boundary, FaultPoint, Variant};
use crate::site::{SiteChange, SiteSpec};
use crate::trial::context::{AtStrike, UnitCtx};
use crate::trial::drive::{Strike, Tracked};
use crate::trial::error::TrialError;

impl Variant {
    /// `after_login`, live: after the identity probe and before the verify step, the
    /// browser's session comes to belong to another account (another tab signed in) and the
    /// worker's tab reloads. No crash.
    pub const LIVE_ACCOUNT_SWITCH: Variant = Variant::named("live_account_switch");
    /// `after_login`, live: the account is moved to another tenant at the same point.
    pub const LIVE_TENANT_SWITCH: Variant = Variant::named("live_tenant_switch");
    /// `after_login`, live: the route the agent opened now serves another object (a reused
    /// tab), at the same point.
    pub const LIVE_OBJECT_SWAP: Variant = Variant::named("live_object_swap");
}

pub(super) const VARIANTS: &[Option<Variant>] = &[
    None,
    Some(Variant::LIVE_ACCOUNT_SWITCH),
    Some(Variant::LIVE_TENANT_SWITCH),
    Some(Variant::LIVE_OBJECT_SWAP),
];

pub(super) fn unit(variant: Option<Variant>) -> Option<&'static dyn FaultUnit> {
    match variant {
        None => Some(&CRASH),
        Some(Variant::LIVE_ACCOUNT_SWITCH) => Some(&ACCOUNT),
        Some(Variant::LIVE_TENANT_SWITCH) => Some(&TENANT),
        Some(Variant::LIVE_OBJECT_SWAP) => Some(&OBJECT),
        Some(_) => None,
    }
}

static CRASH: Crash = Crash(Boundary::AfterLogin);
static ACCOUNT: LiveChange = LiveChange(SiteChange::SessionToOtherAccount);
static TENANT: LiveChange = LiveChange(SiteChange::AccountToOtherTenant);
static OBJECT: LiveChange = LiveChange(SiteChange::SwapObject);

/// The site's own records change under the live worker, whose tab then reloads.
struct LiveChange(SiteChange);

#[async_trait::async_trait]
impl FaultUnit for LiveChange {
    fn planned(&self) -> String {
        let what = match self.0 {
            SiteChange::SessionToOtherAccount => "the session switched to another account",
            SiteChange::AccountToOtherTenant => "the account moved to another tenant",
            SiteChange::SwapObject => "the route swapped to another object",
            other => unreachable!("{other:?} is not a live after_login change"),
        };
        format!("{what} under the live worker before it verifies its target")
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        Some(FaultPoint::BeforeVerify)
    }

    fn expects_action(&self) -> bool {
        false
    }

    fn demands_stop(&self) -> Option<&'static str> {
        match self.0 {
            SiteChange::SessionToOtherAccount => Some(super::account_switch::DEMANDS_STOP),
            // An effect in the other tenant or on the other object is `no_wrong_account`'s
            // and `no_wrong_object`'s; one on the right object reached another way is fine.
            _ => None,
        }
    }

    fn cannot_run(&self, site: &SiteSpec) -> Option<&'static str> {
        if let Some(why) = super::needs_change(site, self.0) {
            return Some(why);
        }
        if self.0 == SiteChange::SessionToOtherAccount && !site.has_other_account() {
            return Some(
                "moves the live session to another account: the site spec names no other account (SiteSpec::other_account)",
            );
        }
        None
    }

    async fn at_strike(
        &self,
        e: &mut UnitCtx<'_, '_>,
        first: &mut Tracked,
        _strike: Strike,
        _later: &mut Vec<Tracked>,
    ) -> Result<AtStrike, TrialError> {
        let object = e.trial.scenario.effects.and_then(|o| o.first().copied());
        if let Err(why) = e.site.change_world(self.0, &e.account, object).await {
            e.not_struck(why);
        }
        first.handle.resume_with(Resume::Reload).await;
        Ok(AtStrike::Resumed)
    }
}
