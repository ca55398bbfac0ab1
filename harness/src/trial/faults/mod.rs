//! Fault units: everything one boundary's fault (in each of its variants), or one hazard,
//! does to a trial, in one place.
//!
//! A unit says what the trial means to do (in words that are snapshotted), where worker 1 is
//! armed, what happens when worker 1 gets there (crash it, or change the world under it and
//! let it go on), how the world changes while it is down, what the trial demands of a correct
//! agent, and which sites cannot run it. The engine (`engine.rs`) runs the same steps for every
//! trial and asks the unit at each; a unit sees the trial through a [`UnitCtx`] (`context.rs`),
//! never the engine, so units and engine do not import each other. Adding a variant to a boundary is one edit of that
//! boundary's file here: its [`Variant`] constant, its entry in `VARIANTS`, and its unit.

mod account_switch;
pub(super) mod after_click;
mod after_login;
mod after_target_verified;
mod browser_crash;
mod concurrent_profile;
mod hazard;
mod stale_profile_restore;
mod step;

use super::FaultPlan;
use super::context::{AtStrike, UnitCtx};
use super::drive::{Strike, Tracked};
use super::error::TrialError;
use crate::evidence::{WorkerEnd, WorkerEvidence};
use crate::plan::{Boundary, FaultPoint, Variant};
use crate::site::{SiteChange, SiteSpec};

/// One fault: a boundary in one of its variants, or a hazard.
#[async_trait::async_trait]
pub(super) trait FaultUnit: Send + Sync {
    /// What the trial means to do, in words (stable: it is snapshotted).
    fn planned(&self) -> String;

    /// The point worker 1 is armed at, or `None` when the site strikes (at the request).
    fn strike_point(&self) -> Option<FaultPoint>;

    /// The step after which worker 1 is crashed, for a step unit.
    fn strike_step(&self) -> Option<u32> {
        None
    }

    /// Whether a correct agent acts in this trial (reaches `ACTION_SUBMITTED`), rather than
    /// stopping safely before any action.
    fn expects_action(&self) -> bool {
        true
    }

    /// Why a correct agent must not act at all in this trial (what stands before the
    /// target), or `None`: an effect that lands all the same breaks `recover_or_stop_safely`.
    fn demands_stop(&self) -> Option<&'static str> {
        None
    }

    /// Why a site other than the bundled one cannot run this trial, or `None`.
    fn cannot_run(&self, site: &SiteSpec) -> Option<&'static str> {
        let _ = site;
        None
    }

    /// Why this trial cannot run with its browsers at `webdriver_url` (a remote WebDriver
    /// endpoint, a grid; `None`: a local chromedriver per worker), or `None`.
    fn cannot_run_at(&self, webdriver_url: Option<&str>) -> Option<&'static str> {
        let _ = webdriver_url;
        None
    }

    /// Whether worker 1's remote browser session is left live after its crash (on a grid
    /// nothing kills it). Otherwise the engine ends it at once, as a pool's reaper would, so
    /// the trial tests the crash it planned.
    fn keeps_orphan(&self) -> bool {
        false
    }

    /// Whether worker 1's own tampering is the fault (the trial did it, not the agent).
    fn tampers(&self) -> bool {
        false
    }

    /// Whether the site strikes, at the effect's request: the fault struck if the armed
    /// request was taken.
    fn struck_by_site(&self) -> bool {
        false
    }

    /// Whether a recovery worker runs after worker 1.
    fn recovers(&self) -> bool {
        true
    }

    /// Before any worker starts: backups, arming the site.
    async fn prepare(&self, e: &mut UnitCtx<'_, '_>) -> Result<(), TrialError> {
        let _ = e;
        Ok(())
    }

    /// A first phase of the unit's own, instead of the engine's (worker 1 up to its fault
    /// point, and on to its end unless it is crashed there). Returns whether it ran one; the
    /// workers it ran go in `e.crew.workers`, worker 1 first.
    async fn own_first_phase(&self, e: &mut UnitCtx<'_, '_>) -> Result<bool, TrialError> {
        let _ = e;
        Ok(false)
    }

    /// Worker 1 reached its armed point. Workers the unit spawns meanwhile go in `later`.
    async fn at_strike(
        &self,
        e: &mut UnitCtx<'_, '_>,
        first: &mut Tracked,
        strike: Strike,
        later: &mut Vec<Tracked>,
    ) -> Result<AtStrike, TrialError> {
        let _ = (e, first, strike, later);
        Ok(AtStrike::Crash)
    }

    /// Worker 1 was crashed and the fault struck: change the world before the recovery.
    /// An `Err` says why the fault did not strike after all.
    async fn while_down(&self, e: &mut UnitCtx<'_, '_>) -> Result<(), String> {
        let _ = e;
        Ok(())
    }

    /// The recovery ended, after a fault that struck: an `Err` says why the changed world
    /// never reached it after all (a gate it never met).
    async fn after_recovery(&self, e: &mut UnitCtx<'_, '_>) -> Result<(), String> {
        let _ = e;
        Ok(())
    }
}

/// A plain crash at a boundary: worker 1 is killed there, and nothing else changes.
struct Crash(Boundary);

impl FaultUnit for Crash {
    fn planned(&self) -> String {
        format!("crash at {}", self.0)
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        Some(self.0.into())
    }
}

static AFTER_PROFILE_CREATED: Crash = Crash(Boundary::AfterProfileCreated);
static AFTER_REMOTE_EFFECT: Crash = Crash(Boundary::AfterRemoteEffect);

/// The variants a boundary runs in, in a stable order (`None`: the plain fault).
pub(crate) fn variants(boundary: Boundary) -> &'static [Option<Variant>] {
    match boundary {
        Boundary::AfterLogin => after_login::VARIANTS,
        Boundary::AfterTargetVerified => after_target_verified::VARIANTS,
        Boundary::AfterClick => after_click::VARIANTS,
        Boundary::StaleProfileRestore => stale_profile_restore::VARIANTS,
        Boundary::ConcurrentProfile => concurrent_profile::VARIANTS,
        Boundary::AfterProfileCreated | Boundary::AfterRemoteEffect | Boundary::BrowserCrash => {
            &[None]
        }
    }
}

/// A fault unit: a static one, or one made for a plan's numbers (a step).
pub(super) enum UnitRef {
    Static(&'static dyn FaultUnit),
    Step(step::StepCrash),
}

impl std::ops::Deref for UnitRef {
    type Target = dyn FaultUnit;
    fn deref(&self) -> &(dyn FaultUnit + 'static) {
        match self {
            UnitRef::Static(unit) => *unit,
            UnitRef::Step(unit) => unit,
        }
    }
}

/// The unit that runs `plan`, or `None` when the plan pairs a boundary with a variant it
/// does not have.
pub(super) fn unit(plan: FaultPlan) -> Option<UnitRef> {
    match plan {
        FaultPlan::Step { step, label } => Some(UnitRef::Step(step::StepCrash { step, label })),
        FaultPlan::Clean => Some(UnitRef::Static(&step::CLEAN)),
        plan => unit_of(plan).map(UnitRef::Static),
    }
}

fn unit_of(plan: FaultPlan) -> Option<&'static dyn FaultUnit> {
    match plan {
        FaultPlan::Boundary { boundary, variant } => match boundary {
            Boundary::AfterProfileCreated => variant.is_none().then_some(&AFTER_PROFILE_CREATED),
            Boundary::AfterLogin => after_login::unit(variant),
            Boundary::AfterTargetVerified => after_target_verified::unit(variant),
            Boundary::AfterClick => after_click::unit(variant),
            Boundary::AfterRemoteEffect => variant.is_none().then_some(&AFTER_REMOTE_EFFECT),
            Boundary::BrowserCrash => variant.is_none().then_some(&browser_crash::UNIT),
            Boundary::StaleProfileRestore => stale_profile_restore::unit(variant),
            Boundary::ConcurrentProfile => concurrent_profile::unit(variant),
        },
        FaultPlan::Hazard { hazard } => Some(hazard::unit(hazard)),
        FaultPlan::Step { .. } | FaultPlan::Clean => None,
    }
}

/// The reason a site without the fault proxy cannot run a trial that needs it.
fn needs_fault_proxy(site: &SiteSpec) -> Option<&'static str> {
    (!site.has_fault_proxy()).then_some("needs the fault proxy (the site spec turned it off)")
}

/// The reason a site whose adapter cannot make `change` ([`Site::can_change`]) cannot run a
/// trial that needs it, naming the change.
///
/// [`Site::can_change`]: crate::site::Site::can_change
fn needs_change(site: &SiteSpec, change: SiteChange) -> Option<&'static str> {
    if site.adapter().can_change(change) {
        return None;
    }
    Some(match change {
        SiteChange::SessionToOtherAccount => {
            "moves the live session to another account: this site's adapter cannot (Site::can_change(SiteChange::SessionToOtherAccount))"
        }
        SiteChange::AccountToOtherTenant => {
            "moves the account to another tenant under a live session: this site's adapter cannot (Site::can_change(SiteChange::AccountToOtherTenant))"
        }
        SiteChange::SwapObject => {
            "swaps the object behind the scenario's route under a live session: this site's adapter cannot (Site::can_change(SiteChange::SwapObject))"
        }
        SiteChange::RotatePassword => {
            "rotates the account's password and signs its sessions out: this site's adapter cannot (Site::can_change(SiteChange::RotatePassword))"
        }
        SiteChange::LoginInterstitial => {
            "shows a sign-in interstitial before the target: this site's adapter cannot (Site::can_change(SiteChange::LoginInterstitial))"
        }
        SiteChange::ConsentInterstitial => {
            "shows a consent interstitial before the target: this site's adapter cannot (Site::can_change(SiteChange::ConsentInterstitial))"
        }
        SiteChange::ApiForOtherTenant => {
            "makes the site's API answer for another tenant than its pages: this site's adapter cannot (Site::can_change(SiteChange::ApiForOtherTenant))"
        }
        SiteChange::StaleTab => {
            "changes the object after each render of its page: this site's adapter cannot (Site::can_change(SiteChange::StaleTab))"
        }
        SiteChange::LookAlike => {
            "answers the lost effect with a look-alike success: this site's adapter cannot (Site::can_change(SiteChange::LookAlike), Site::look_alike)"
        }
    })
}

/// The reason a site without a second account cannot run a trial that needs one.
fn needs_other_account(site: &SiteSpec) -> Option<&'static str> {
    (!site.has_other_account())
        .then_some("needs a second account of the site (`SiteSpec::other_account`)")
}

/// What worker 1 did instead of reaching its armed fault point.
pub(super) fn missed(w: &WorkerEvidence, armed: Option<FaultPoint>, step: Option<u32>) -> String {
    let point = match (armed, step) {
        (_, Some(n)) => format!("step {n}"),
        (Some(b), None) => format!("`{b}`"),
        (None, None) => "its fault point".to_owned(),
    };
    let n = w.incarnation;
    let how = match w.end {
        WorkerEnd::Finished => format!(
            "worker {n} finished ({}) without crossing {point}",
            crate::oracle::result_name(w.result)
        ),
        WorkerEnd::TimedOut => format!("worker {n} timed out before reaching {point}"),
        WorkerEnd::Died | WorkerEnd::Crashed => format!("worker {n} died before reaching {point}"),
    };
    format!(
        "{how} (fault points sit in `Page::sign_in`, `side_effect(..).run()`, the worker's start, and wherever the agent calls `Worker::fault_point`)"
    )
}

/// Every variant of every boundary.
fn all_variants() -> impl Iterator<Item = Variant> {
    Boundary::ALL
        .into_iter()
        .flat_map(|b| variants(b).iter().flatten().copied())
}

/// A variant reads back from evidence by its name, if some boundary has it.
impl<'de> serde::Deserialize<'de> for Variant {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        all_variants()
            .find(|v| v.as_str() == name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown variant `{name}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_variant_has_a_unit_and_one_name() {
        let mut names = Vec::new();
        for b in Boundary::ALL {
            for &v in variants(b) {
                let plan = FaultPlan::Boundary {
                    boundary: b,
                    variant: v,
                };
                let unit = unit(plan).unwrap_or_else(|| panic!("no unit for {b} {v:?}"));
                assert!(!unit.planned().is_empty());
                if let Some(v) = v {
                    names.push(v.as_str());
                }
            }
        }
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "two variants share a name");
    }

    #[test]
    fn a_variant_of_another_boundary_has_no_unit() {
        let plan = FaultPlan::Boundary {
            boundary: Boundary::AfterRemoteEffect,
            variant: Some(Variant::LANDED),
        };
        assert!(unit(plan).is_none());
    }

    #[test]
    fn variants_read_back_by_name() {
        for v in all_variants() {
            let json = serde_json::to_string(&v).unwrap();
            let back: Variant = serde_json::from_str(&json).unwrap();
            assert_eq!(back, v);
        }
        assert!(serde_json::from_str::<Variant>("\"nonesuch\"").is_err());
    }
}
