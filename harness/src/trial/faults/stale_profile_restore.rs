//! `stale_profile_restore`: worker 1 is crashed after it verified its target, and the
//! profile is replaced by an older backup (taken before worker 1 ran) while it is down.

use super::FaultUnit;
use crate::plan::{FaultPoint, Variant};
use crate::site::SiteSpec;
use crate::trial::context::UnitCtx;
use crate::trial::error::{SetupError, TrialError};

impl Variant {
    /// `stale_profile_restore`: the restored backup is signed in as another account.
    pub const OTHER_ACCOUNT: Variant = Variant::named("other_account");
    /// `stale_profile_restore`: the restored backup is the same account, older generation.
    pub const OLDER_GENERATION: Variant = Variant::named("older_generation");
}

pub(super) const VARIANTS: &[Option<Variant>] = &[
    Some(Variant::OTHER_ACCOUNT),
    Some(Variant::OLDER_GENERATION),
];

pub(super) fn unit(variant: Option<Variant>) -> Option<&'static dyn FaultUnit> {
    match variant? {
        Variant::OTHER_ACCOUNT => Some(&OTHER_ACCOUNT),
        Variant::OLDER_GENERATION => Some(&OLDER_GENERATION),
        _ => None,
    }
}

static OTHER_ACCOUNT: StaleRestore = StaleRestore {
    other_account: true,
};
static OLDER_GENERATION: StaleRestore = StaleRestore {
    other_account: false,
};

struct StaleRestore {
    /// The restored copy is then signed in as the site's other account.
    other_account: bool,
}

#[async_trait::async_trait]
impl FaultUnit for StaleRestore {
    fn planned(&self) -> String {
        "older profile restored after a crash at after_target_verified".to_owned()
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        Some(FaultPoint::AfterTargetVerified)
    }

    fn expects_action(&self) -> bool {
        false
    }

    fn cannot_run(&self, site: &SiteSpec) -> Option<&'static str> {
        if self.other_account {
            super::needs_other_account(site)
        } else {
            None
        }
    }

    async fn prepare(&self, e: &mut UnitCtx<'_, '_>) -> Result<(), TrialError> {
        let backup = e
            .store
            .backup(&e.profile, "older")
            .map_err(|err| TrialError::Setup(SetupError::Profile(err)))?;
        *e.backup = Some(backup);
        Ok(())
    }

    async fn while_down(&self, e: &mut UnitCtx<'_, '_>) -> Result<(), String> {
        let restored = match e.backup.as_ref() {
            Some(backup) => e
                .store
                .restore(&e.profile, backup)
                .map_err(|e| e.to_string()),
            None => Err("no backup was taken".to_owned()),
        };
        if let Err(why) = restored {
            return Err(format!(
                "the older backup could not be restored ({})",
                why.chars().take(200).collect::<String>()
            ));
        }
        if self.other_account {
            super::account_switch::switch_profile_account(e).await?;
        }
        Ok(())
    }
}
