//! `concurrent_profile`: two workers on one profile. Plain: both let go at once from a start
//! gate. `mid_task`: a second worker arrives once the first verified its target.
//! `lock_removed`: the same, after the first worker's lock files were removed.

use super::FaultUnit;
use crate::evidence::WorkerEnd;
use crate::fault::WorkerEvent;
use crate::plan::{FaultPoint, Variant};
use crate::trial::context::{AtStrike, UnitCtx};
use crate::trial::drive::{Strike, Tracked};
use crate::trial::error::TrialError;

impl Variant {
    /// `concurrent_profile`: a second worker arrives on the profile after the first has
    /// verified its target, mid-task.
    pub const MID_TASK: Variant = Variant::named("mid_task");
    /// `concurrent_profile`: mid-task, the first worker's lease lock file and Chromium's
    /// `SingletonLock` are removed, then a second worker arrives: the live holder must still
    /// be recognised, and the second refused.
    pub const LOCK_REMOVED: Variant = Variant::named("lock_removed");
}

pub(super) const VARIANTS: &[Option<Variant>] =
    &[None, Some(Variant::MID_TASK), Some(Variant::LOCK_REMOVED)];

pub(super) fn unit(variant: Option<Variant>) -> Option<&'static dyn FaultUnit> {
    match variant {
        None => Some(&AtOnce),
        Some(Variant::MID_TASK) => Some(&MID_TASK),
        Some(Variant::LOCK_REMOVED) => Some(&LOCK_REMOVED),
        Some(_) => None,
    }
}

/// Two workers let go at once: exactly one may hold the lease.
struct AtOnce;

#[async_trait::async_trait]
impl FaultUnit for AtOnce {
    fn planned(&self) -> String {
        "two workers let go at once on one profile".to_owned()
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        None
    }

    fn recovers(&self) -> bool {
        false
    }

    async fn own_first_phase(&self, e: &mut UnitCtx<'_, '_>) -> Result<bool, TrialError> {
        let gated = |e: &UnitCtx<'_, '_>, incarnation| {
            let mut spec = e.spec_for(incarnation, None);
            spec.start_gate = true;
            // No worker comes after these two: the profile is removed next.
            spec.discard_profile_after = true;
            spec
        };
        let a = e.spawn_spec(gated(e, 1)).await?;
        let b = e.spawn_spec(gated(e, 2)).await?;
        let mut workers = vec![a, b];
        // Both up and waiting at the gate, then both let go at once.
        let mut missing = Vec::new();
        for w in workers.iter_mut() {
            let ready = tokio::time::timeout(e.timeout, w.handle.next_event()).await;
            if !matches!(ready, Ok(Some(WorkerEvent::Ready))) {
                w.evidence.end = WorkerEnd::Died;
                missing.push(w.evidence.incarnation);
            }
        }
        for w in workers.iter_mut() {
            w.handle.resume().await;
        }
        if missing.is_empty() {
            e.fault.struck = true;
            e.fault.at_ms = Some(e.elapsed_ms());
        } else {
            e.fault.instead = Some(format!(
                "worker(s) {missing:?} never reached the start gate, so nothing raced"
            ));
        }
        for mut w in workers {
            e.drive_to_end(&mut w).await;
            e.judge_worker(&w);
            e.crew.workers.push(w);
        }
        Ok(true)
    }
}

static MID_TASK: Claimant = Claimant {
    remove_locks: false,
};
static LOCK_REMOVED: Claimant = Claimant { remove_locks: true };

/// A second claimant arrives while the first is mid-task: it must be refused, and the first
/// goes on.
struct Claimant {
    /// Tampering first: the live holder's lock files are removed.
    remove_locks: bool,
}

#[async_trait::async_trait]
impl FaultUnit for Claimant {
    fn planned(&self) -> String {
        if self.remove_locks {
            "the first worker's lock files removed, then a second worker arrives".to_owned()
        } else {
            "a second worker arrives after the first verified its target".to_owned()
        }
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        Some(FaultPoint::AfterTargetVerified)
    }

    fn tampers(&self) -> bool {
        self.remove_locks
    }

    fn recovers(&self) -> bool {
        // Worker 1 lives on and finishes its task: no recovery follows.
        false
    }

    async fn at_strike(
        &self,
        e: &mut UnitCtx<'_, '_>,
        first: &mut Tracked,
        _strike: Strike,
        later: &mut Vec<Tracked>,
    ) -> Result<AtStrike, TrialError> {
        if self.remove_locks {
            // Tampering: the live holder's lock files are removed, so the second claimant
            // finds no lock to respect on disk. Without the lease's lock file gone, nothing
            // was tampered with.
            let lease_lock = e.profile.path().join(crate::profile::LOCK_FILE);
            if let Err(err) = std::fs::remove_file(lease_lock) {
                e.not_struck(format!("the lease's lock file was not there ({err})"));
            }
            let _ = std::fs::remove_file(e.profile.path().join("SingletonLock"));
        }
        let mut second = e.spawn(2, None).await?;
        e.drive_to_end(&mut second).await;
        e.judge_worker(&second);
        later.push(second);
        first.handle.resume().await;
        Ok(AtStrike::Resumed)
    }
}
