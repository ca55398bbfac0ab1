//! `after_target_verified`: a crash once `TARGET_VERIFIED` is durable, before the click; and
//! `account_switched`, where the profile's login comes to belong to another account while
//! worker 1 is down.

use super::{Crash, FaultUnit};
use crate::plan::{Boundary, Variant};
use crate::site::SiteSpec;
use crate::trial::engine::Engine;

impl Variant {
    /// `after_target_verified`: during the crash the profile's login came to belong to
    /// another account, so trusting the old verification is caught.
    pub const ACCOUNT_SWITCHED: Variant = Variant::named("account_switched");
}

pub(super) const VARIANTS: &[Option<Variant>] = &[None, Some(Variant::ACCOUNT_SWITCHED)];

pub(super) fn unit(variant: Option<Variant>) -> Option<&'static dyn FaultUnit> {
    match variant {
        None => Some(&CRASH),
        Some(Variant::ACCOUNT_SWITCHED) => Some(&AccountSwitched),
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

    fn strike_point(&self) -> Option<Boundary> {
        Some(Boundary::AfterTargetVerified)
    }

    fn expects_action(&self) -> bool {
        false
    }

    fn cannot_run(&self, site: &SiteSpec) -> Option<&'static str> {
        super::needs_other_account(site)
    }

    async fn while_down(&self, e: &mut Engine<'_>) -> Result<(), String> {
        e.switch_profile_account().await
    }
}
