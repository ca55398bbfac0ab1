//! The lower-level journal API, for agents that write their own checkpoint protocol.

use super::{TaskError, Worker};
use crate::journal::{Checkpoint, RequestKey, SideEffectRecord, TransitionError};

/// The lower-level journal API of a worker, bound to its run and incarnation.
#[derive(Debug)]
pub struct JournalHandle<'w> {
    pub(super) worker: &'w Worker,
}

impl JournalHandle<'_> {
    /// Records the intent of side effect `effect` (idempotent: a recovery worker gets the
    /// same row and the same request key).
    pub fn record_intent(
        &self,
        effect: &str,
        normalized_args: &str,
    ) -> Result<SideEffectRecord, TaskError> {
        let shared = &self.worker.shared;
        if shared.fault.halted() {
            return Err(crate::journal::JournalError::halted().into());
        }
        let spec = &shared.spec;
        let hash = crate::journal::args_hash(normalized_args);
        let record = shared
            .journal
            .record_intent(&spec.run_id, effect, &hash, spec.incarnation)?;
        shared.fault.journal_step("journal_intent_recorded");
        Ok(record)
    }

    /// The current record of side effect `effect`.
    pub fn side_effect(&self, effect: &str) -> Result<Option<SideEffectRecord>, TaskError> {
        Ok(self
            .worker
            .shared
            .journal
            .side_effect(&self.worker.shared.spec.run_id, effect)?)
    }

    /// A compare-and-set transition of a checkpoint.
    ///
    /// A transition to `TARGET_VERIFIED` also records what the agent checked since its last
    /// one: the checks of [`Page::expect_target`](super::Page::expect_target), and those it
    /// reported itself with [`Worker::record_checks`]. When that is nothing, the trial's
    /// evidence warns: a verification that checked nothing is a claim only.
    pub fn transition(
        &self,
        key: &RequestKey,
        from: Checkpoint,
        to: Checkpoint,
    ) -> Result<(), TransitionError> {
        let shared = &self.worker.shared;
        if shared.fault.halted() {
            return Err(TransitionError::Journal(
                crate::journal::JournalError::halted(),
            ));
        }
        shared
            .journal
            .transition(key, from, to, shared.spec.incarnation)?;
        if to == Checkpoint::TargetVerified {
            self.report_verification(key);
        }
        shared
            .fault
            .journal_step(&format!("journal_{}", to.as_str().to_ascii_lowercase()));
        Ok(())
    }

    /// Reports what was checked before `key`'s `TARGET_VERIFIED`.
    fn report_verification(&self, key: &RequestKey) {
        let shared = &self.worker.shared;
        let effect = shared
            .journal
            .side_effects(&shared.spec.run_id)
            .ok()
            .and_then(|all| all.into_iter().find(|r| r.request_key == *key))
            .map(|r| r.effect)
            .unwrap_or_default();
        let checked = shared.take_checks();
        if checked.is_empty() {
            shared.log.line(&format!(
                "{effect}: the verify step checked nothing (no `expect_target`, no `record_checks`); TARGET_VERIFIED is a claim only"
            ));
        }
        shared
            .fault
            .report_now(crate::fault::WorkerEvent::Verified {
                effect,
                checked: checked.iter().map(|c| (*c).to_owned()).collect(),
            });
    }
}
