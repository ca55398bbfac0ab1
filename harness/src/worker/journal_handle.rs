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
        shared
            .fault
            .journal_step(&format!("journal_{}", to.as_str().to_ascii_lowercase()));
        Ok(())
    }
}
