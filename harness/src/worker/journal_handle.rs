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
        let key = RequestKey::derive(&self.worker.shared.spec.run_id, effect);
        self.intent(effect, normalized_args, &key)
    }

    /// [`record_intent`](Self::record_intent) under the agent's own request key, for an
    /// agent that already sends its own idempotency key to the site and keeps it: the
    /// journal's side effect then carries the key the ledger sees, and the verdicts match the
    /// two. The key must satisfy [`RequestKey::own`]; a recovery passes the same key (the one
    /// its own state kept) and gets the same row; a different key for the same effect is
    /// refused, never silently re-keyed.
    pub fn record_intent_with_key(
        &self,
        effect: &str,
        normalized_args: &str,
        own_key: &str,
    ) -> Result<SideEffectRecord, TaskError> {
        let key = RequestKey::own(own_key).map_err(TaskError::scenario)?;
        self.intent(effect, normalized_args, &key)
    }

    fn intent(
        &self,
        effect: &str,
        normalized_args: &str,
        key: &RequestKey,
    ) -> Result<SideEffectRecord, TaskError> {
        let shared = &self.worker.shared;
        if shared.fault.halted() {
            return Err(crate::journal::JournalError::halted().into());
        }
        let spec = &shared.spec;
        let hash = crate::journal::args_hash(normalized_args);
        let record = shared.journal.record_intent_with_key(
            &spec.run_id,
            effect,
            &hash,
            key,
            spec.incarnation,
        )?;
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
    /// `ACTION_SUBMITTED → ACTION_SUBMITTED` is the *resend*: a recovery worker that found
    /// `ACTION_SUBMITTED`, read the site, saw the effect absent and sends it again under the
    /// same key journals this before it sends, so the history (and `claims_match_facts`)
    /// attributes the send to the worker that made it. Resend only under the same key, to a
    /// site that deduplicates by it; a new key for an effect that may have landed is the
    /// duplicate the oracle exists to catch.
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
