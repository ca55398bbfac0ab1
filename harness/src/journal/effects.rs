//! Side effects, checkpoint transitions and their append-only history.

use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::{
    Checkpoint, Journal, JournalError, JournalErrorKind, RequestKey, TransitionError, now_unix_ms,
};

/// One side effect of a run: its request key, argument hash and current checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SideEffectRecord {
    /// The run.
    pub run_id: String,
    /// The effect's name within the run.
    pub effect: String,
    /// The key derived from run and effect ([`RequestKey::derive`]).
    pub request_key: RequestKey,
    /// The sha256 of the normalized arguments ([`super::args_hash`]).
    pub args_hash: String,
    /// The current checkpoint.
    pub state: Checkpoint,
    /// The incarnation of the last writer.
    pub incarnation: u32,
}

/// One row of the append-only checkpoint history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CheckpointTransition {
    /// Position in the journal-wide history (increasing).
    pub seq: u64,
    /// The run.
    pub run_id: String,
    /// The side effect's key.
    pub request_key: RequestKey,
    /// The side effect's name.
    pub effect: String,
    /// The state before; `None` for the creation of the intent.
    pub from: Option<Checkpoint>,
    /// The state after.
    pub to: Checkpoint,
    /// The worker incarnation that wrote it.
    pub incarnation: u32,
    /// When it was committed.
    pub at_unix_ms: u64,
}

impl Journal {
    /// Records the intent of a side effect at `IntentRecorded`, with its derived request key.
    ///
    /// Idempotent: when the (run, effect) row exists, it is returned unchanged, so a recovery
    /// worker can call it again. The same (run, effect) with a different `args_hash` is refused
    /// with [`JournalErrorKind::ArgumentsChanged`]. The run must exist.
    pub fn record_intent(
        &self,
        run_id: &str,
        effect: &str,
        args_hash: &str,
        incarnation: u32,
    ) -> Result<SideEffectRecord, JournalError> {
        let key = RequestKey::derive(run_id, effect);
        self.record_intent_with_key(run_id, effect, args_hash, &key, incarnation)
    }

    /// [`Journal::record_intent`] under the agent's own request key ([`RequestKey::own`]),
    /// for an agent that sends its own idempotency key to the site: the ledger's effect and
    /// the journal's side effect then carry the same key, and the oracle matches them.
    ///
    /// Idempotent like `record_intent`. The same (run, effect) under another key is refused
    /// with [`JournalErrorKind::KeyChanged`] (a recovery that lost its key must not mint a
    /// new one); a key another side effect holds, with [`JournalErrorKind::KeyTaken`].
    pub fn record_intent_with_key(
        &self,
        run_id: &str,
        effect: &str,
        args_hash: &str,
        key: &RequestKey,
        incarnation: u32,
    ) -> Result<SideEffectRecord, JournalError> {
        self.with_conn(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| self.sql(e))?;
            if let Some(existing) = select_effect(&tx, run_id, effect).map_err(|e| self.sql(e))? {
                let existing = self.decode_effect(existing)?;
                if existing.args_hash != args_hash {
                    return Err(self.error(JournalErrorKind::ArgumentsChanged {
                        run_id: run_id.to_owned(),
                        effect: effect.to_owned(),
                        recorded: existing.args_hash,
                        given: args_hash.to_owned(),
                    }));
                }
                if existing.request_key != *key {
                    return Err(self.error(JournalErrorKind::KeyChanged {
                        run_id: run_id.to_owned(),
                        effect: effect.to_owned(),
                        recorded: existing.request_key,
                    }));
                }
                return Ok(existing);
            }
            let key_taken = tx
                .query_row(
                    "SELECT 1 FROM side_effects WHERE request_key = ?1",
                    [key.as_str()],
                    |_| Ok(()),
                )
                .optional()
                .map_err(|e| self.sql(e))?;
            if key_taken.is_some() {
                return Err(self.error(JournalErrorKind::KeyTaken {
                    run_id: run_id.to_owned(),
                    effect: effect.to_owned(),
                }));
            }
            let run_known = tx
                .query_row("SELECT 1 FROM runs WHERE run_id = ?1", [run_id], |_| Ok(()))
                .optional()
                .map_err(|e| self.sql(e))?;
            if run_known.is_none() {
                return Err(self.error(JournalErrorKind::UnknownRun {
                    run_id: run_id.to_owned(),
                }));
            }
            let state = Checkpoint::IntentRecorded;
            tx.execute(
                "INSERT INTO side_effects (run_id, effect, request_key, args_hash, state, incarnation)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![run_id, effect, key.as_str(), args_hash, state.as_str(), incarnation],
            )
            .map_err(|e| self.sql(e))?;
            append_history(&tx, run_id, key, effect, None, state, incarnation)
                .map_err(|e| self.sql(e))?;
            tx.commit().map_err(|e| self.sql(e))?;
            Ok(SideEffectRecord {
                run_id: run_id.to_owned(),
                effect: effect.to_owned(),
                request_key: key.clone(),
                args_hash: args_hash.to_owned(),
                state,
                incarnation,
            })
        })
    }

    /// The side effect (run, effect), if recorded.
    pub fn side_effect(
        &self,
        run_id: &str,
        effect: &str,
    ) -> Result<Option<SideEffectRecord>, JournalError> {
        self.with_conn(|conn| {
            select_effect(conn, run_id, effect)
                .map_err(|e| self.sql(e))?
                .map(|raw| self.decode_effect(raw))
                .transpose()
        })
    }

    /// The run's side effects, ordered by effect name.
    pub fn side_effects(&self, run_id: &str) -> Result<Vec<SideEffectRecord>, JournalError> {
        self.with_conn(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT run_id, effect, request_key, args_hash, state, incarnation
                     FROM side_effects WHERE run_id = ?1 ORDER BY effect",
                )
                .map_err(|e| self.sql(e))?;
            let raws = stmt
                .query_map([run_id], raw_effect)
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(|e| self.sql(e))?;
            raws.into_iter()
                .map(|raw| self.decode_effect(raw))
                .collect()
        })
    }

    /// Moves the side effect `key` from `from` to `to`, durably.
    ///
    /// One SQLite transaction: a compare-and-set on the current state plus an appended history
    /// row. A pair outside the graph is [`TransitionError::Illegal`] and touches nothing; a
    /// current state other than `from` is [`TransitionError::LostRace`].
    pub fn transition(
        &self,
        key: &RequestKey,
        from: Checkpoint,
        to: Checkpoint,
        incarnation: u32,
    ) -> Result<(), TransitionError> {
        if !from.can_transition_to(to) {
            return Err(TransitionError::Illegal { from, to });
        }
        self.with_conn(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| self.sql(e))?;
            let current = {
                let mut stmt = tx
                    .prepare_cached(
                        "SELECT run_id, effect, state FROM side_effects WHERE request_key = ?1",
                    )
                    .map_err(|e| self.sql(e))?;
                stmt.query_row([key.as_str()], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                })
                .optional()
                .map_err(|e| self.sql(e))?
            };
            let Some((run_id, effect, state)) = current else {
                return Err(self
                    .error(JournalErrorKind::UnknownRequestKey {
                        request_key: key.clone(),
                    })
                    .into());
            };
            let actual = self.decode_checkpoint(&state)?;
            if actual != from {
                return Err(TransitionError::LostRace {
                    key: key.clone(),
                    expected: from,
                    actual,
                });
            }
            tx.prepare_cached(
                "UPDATE side_effects SET state = ?3, incarnation = ?4
                 WHERE request_key = ?1 AND state = ?2",
            )
            .and_then(|mut s| {
                s.execute(params![
                    key.as_str(),
                    from.as_str(),
                    to.as_str(),
                    incarnation
                ])
            })
            .map_err(|e| self.sql(e))?;
            append_history(&tx, &run_id, key, &effect, Some(from), to, incarnation)
                .map_err(|e| self.sql(e))?;
            tx.commit().map_err(|e| self.sql(e))?;
            Ok(())
        })
    }

    /// The run's checkpoint history, ordered by `seq`.
    pub fn history(&self, run_id: &str) -> Result<Vec<CheckpointTransition>, JournalError> {
        self.with_conn(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT seq, run_id, request_key, effect, from_state, to_state, incarnation,
                        at_unix_ms FROM checkpoint_history WHERE run_id = ?1 ORDER BY seq",
                )
                .map_err(|e| self.sql(e))?;
            let raws = stmt
                .query_map([run_id], raw_history)
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(|e| self.sql(e))?;
            raws.into_iter()
                .map(|(mut t, from, to)| {
                    t.from = from.map(|s| self.decode_checkpoint(&s)).transpose()?;
                    t.to = self.decode_checkpoint(&to)?;
                    Ok(t)
                })
                .collect()
        })
    }

    fn decode_effect(
        &self,
        (mut rec, state): (SideEffectRecord, String),
    ) -> Result<SideEffectRecord, JournalError> {
        rec.state = self.decode_checkpoint(&state)?;
        Ok(rec)
    }
}

fn select_effect(
    conn: &rusqlite::Connection,
    run_id: &str,
    effect: &str,
) -> rusqlite::Result<Option<(SideEffectRecord, String)>> {
    conn.prepare_cached(
        "SELECT run_id, effect, request_key, args_hash, state, incarnation
         FROM side_effects WHERE run_id = ?1 AND effect = ?2",
    )?
    .query_row([run_id, effect], raw_effect)
    .optional()
}

fn raw_effect(r: &Row<'_>) -> rusqlite::Result<(SideEffectRecord, String)> {
    Ok((
        SideEffectRecord {
            run_id: r.get(0)?,
            effect: r.get(1)?,
            request_key: RequestKey::from_stored(r.get(2)?),
            args_hash: r.get(3)?,
            state: Checkpoint::IntentRecorded,
            incarnation: r.get(5)?,
        },
        r.get(4)?,
    ))
}

type RawHistory = (CheckpointTransition, Option<String>, String);

fn raw_history(r: &Row<'_>) -> rusqlite::Result<RawHistory> {
    Ok((
        CheckpointTransition {
            seq: r.get(0)?,
            run_id: r.get(1)?,
            request_key: RequestKey::from_stored(r.get(2)?),
            effect: r.get(3)?,
            from: None,
            to: Checkpoint::IntentRecorded,
            incarnation: r.get(6)?,
            at_unix_ms: r.get(7)?,
        },
        r.get(4)?,
        r.get(5)?,
    ))
}

fn append_history(
    conn: &rusqlite::Connection,
    run_id: &str,
    key: &RequestKey,
    effect: &str,
    from: Option<Checkpoint>,
    to: Checkpoint,
    incarnation: u32,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO checkpoint_history (run_id, request_key, effect, from_state, to_state,
            incarnation, at_unix_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        run_id,
        key.as_str(),
        effect,
        from.map(Checkpoint::as_str),
        to.as_str(),
        incarnation,
        now_unix_ms()
    ])?;
    Ok(())
}
