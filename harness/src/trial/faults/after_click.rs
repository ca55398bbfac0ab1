//! `after_click`: the click is dispatched and its response not observed. The site makes the
//! request land or get lost before worker 1 is crashed (`landed`, `lost`); in the live
//! variants the network loses the request or its response, or answers slowly, or the site
//! loses the request and answers with a look-alike success, under a worker that lives on.

use super::FaultUnit;
use crate::journal::{Checkpoint, Journal};
use crate::plan::{FaultPoint, Variant};
use crate::site::{EffectArm, SiteChange, SiteSpec};
use crate::trial::context::{AtStrike, UnitCtx, World};
use crate::trial::drive::{Strike, Tracked};
use crate::trial::error::TrialError;

impl Variant {
    /// `after_click`: the request landed (committed, response held) before the crash.
    pub const LANDED: Variant = Variant::named("landed");
    /// `after_click`: the request was lost (never committed) before the crash.
    pub const LOST: Variant = Variant::named("lost");
    /// `after_click`, live: the site loses the request (nothing committed, a 502 at once).
    /// No crash.
    pub const LIVE_REQUEST_LOST: Variant = Variant::named("live_request_lost");
    /// `after_click`, live: the site accepts the request and its response is lost (a 502
    /// at once). No crash.
    pub const LIVE_RESPONSE_LOST: Variant = Variant::named("live_response_lost");
    /// `after_click`, live: the site accepts the request and answers slowly. No crash.
    pub const LIVE_SLOW_RESPONSE: Variant = Variant::named("live_slow_response");
    /// `after_click`: the request is held uncommitted and worker 1 crashed; the recovery
    /// finds it absent; once the recovery has ended, the request lands after all (under its
    /// key: a resend under the same key is not repeated, one under a new key is).
    pub const LATE_LANDING: Variant = Variant::named("late_landing");
    /// `after_click`, live: the site loses the request (nothing committed) and answers as a
    /// success would, with a look-alike: the same account's message with the same body under
    /// another key. No crash: a confirm step that accepts any success marker claims an
    /// effect the site never accepted.
    pub const LIVE_LOOK_ALIKE: Variant = Variant::named("live_look_alike");
}

pub(super) const VARIANTS: &[Option<Variant>] = &[
    Some(Variant::LANDED),
    Some(Variant::LOST),
    Some(Variant::LIVE_REQUEST_LOST),
    Some(Variant::LIVE_RESPONSE_LOST),
    Some(Variant::LIVE_SLOW_RESPONSE),
    Some(Variant::LATE_LANDING),
    Some(Variant::LIVE_LOOK_ALIKE),
];

pub(super) fn unit(variant: Option<Variant>) -> Option<&'static dyn FaultUnit> {
    match variant? {
        Variant::LANDED => Some(&LANDED),
        Variant::LOST => Some(&LOST),
        Variant::LIVE_REQUEST_LOST => Some(&REQUEST_LOST),
        Variant::LIVE_RESPONSE_LOST => Some(&RESPONSE_LOST),
        Variant::LIVE_SLOW_RESPONSE => Some(&SLOW),
        Variant::LATE_LANDING => Some(&LATE),
        Variant::LIVE_LOOK_ALIKE => Some(&LOOK_ALIKE),
        _ => None,
    }
}

static LANDED: Click = Click {
    arm: EffectArm::Landed,
    live: false,
};
static LOST: Click = Click {
    arm: EffectArm::Lost,
    live: false,
};
static REQUEST_LOST: Click = Click {
    arm: EffectArm::RequestDropped,
    live: true,
};
static RESPONSE_LOST: Click = Click {
    arm: EffectArm::ResponseDropped,
    live: true,
};
static SLOW: Click = Click {
    arm: EffectArm::Slow,
    live: true,
};
static LATE: Click = Click {
    arm: EffectArm::LateLanding,
    live: false,
};
static LOOK_ALIKE: Click = Click {
    arm: EffectArm::LookAlike,
    live: true,
};

/// The site arms the effect's request; worker 1 is crashed once it has landed or been lost,
/// or (live) lives on and faces what the network did.
struct Click {
    arm: EffectArm,
    live: bool,
}

#[async_trait::async_trait]
impl FaultUnit for Click {
    fn planned(&self) -> String {
        let what = match self.arm {
            EffectArm::RequestDropped => "the request lost on the wire",
            EffectArm::ResponseDropped => "the request landed and its response lost",
            EffectArm::Slow => "the request landed and its response slow",
            EffectArm::LookAlike => "the request lost and a look-alike success shown",
            EffectArm::Landed | EffectArm::Lost => return "crash at after_click".to_owned(),
            EffectArm::LateLanding => {
                return "crash at after_click, the request landing after the recovery".to_owned();
            }
        };
        format!("{what} under the live worker")
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        (!self.live).then_some(FaultPoint::AfterClick)
    }

    fn cannot_run(&self, site: &SiteSpec) -> Option<&'static str> {
        let proxy = super::needs_fault_proxy(site);
        if self.arm == EffectArm::LookAlike {
            // The proxy knows neither the site's answer page nor where the key goes in it:
            // the adapter makes the look-alike and names its page.
            return proxy.or_else(|| super::needs_change(site, SiteChange::LookAlike));
        }
        proxy
    }

    fn struck_by_site(&self) -> bool {
        self.live
    }

    async fn prepare(&self, e: &mut UnitCtx<'_, '_>) -> Result<(), TrialError> {
        if self.arm == EffectArm::LookAlike {
            let object = e.trial.scenario.effects.and_then(|o| o.first().copied());
            if let Err(why) = e.site.make_look_alike(&e.run_id, &e.account, object).await {
                // Unstruck: the effect is never armed, and `fault_struck` says why.
                e.not_struck(why);
                return Ok(());
            }
        }
        arm_effect(e.world, self.arm)
    }

    async fn at_strike(
        &self,
        e: &mut UnitCtx<'_, '_>,
        _first: &mut Tracked,
        _strike: Strike,
        _later: &mut Vec<Tracked>,
    ) -> Result<AtStrike, TrialError> {
        // Deterministic: the request has landed (or been lost) at the site.
        e.site.wait_armed_reached(e.timeout).await;
        Ok(AtStrike::Crash)
    }
}

/// Arms the site for the effect's request. On a site behind the fault proxy, the effect is
/// the first request the site adapter names that a worker sends once ACTION_SUBMITTED is
/// journaled: never its sign-in, whatever the adapter's matcher says.
pub(in crate::trial) fn arm_effect(e: &World<'_>, arm: EffectArm) -> Result<(), TrialError> {
    let watch = Journal::open(e.journal.path()).map_err(|err| TrialError::Setup(err.into()))?;
    let watch = std::sync::Mutex::new(watch);
    let run = e.run_id.clone();
    let submitted = move || {
        let journal = watch.lock().unwrap_or_else(|p| p.into_inner());
        journal.side_effects(&run).is_ok_and(|effects| {
            effects
                .iter()
                .any(|e| e.state == Checkpoint::ActionSubmitted)
        })
    };
    e.site
        .arm(arm, submitted)
        .ok_or(TrialError::Unsupported("arm-next-effect"))
}
