//! The checkpoint state machine, request keys and argument hashes.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::JournalError;

/// The durable state of one side effect.
///
/// The graph (DESIGN.md): `IntentRecorded → TargetVerified → ActionSubmitted →
/// RemoteConfirmed`; any non-terminal state → `Unknown`; `TargetVerified →
/// TargetVerified`, because a recovery worker verifies again (a stale verification is never
/// trusted) and journals the re-verification as a self-transition; and `ActionSubmitted →
/// ActionSubmitted`, the *resend*: a recovery worker that read the site, found the effect
/// absent, and sends it again under the same request key journals that it did, so the
/// history names the worker that made the send the site may have accepted.
/// `RemoteConfirmed` and `Unknown` are terminal. Every other pair is illegal.
///
/// ```
/// use browser_fault::journal::Checkpoint;
/// assert!(Checkpoint::ActionSubmitted.can_transition_to(Checkpoint::Unknown));
/// assert!(!Checkpoint::RemoteConfirmed.can_transition_to(Checkpoint::Unknown));
/// assert_eq!(Checkpoint::TargetVerified.as_str(), "TARGET_VERIFIED");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Checkpoint {
    /// The intent and its request key are durable; nothing was done yet.
    IntentRecorded,
    /// The target (account, route, object) was verified in the live browser.
    TargetVerified,
    /// The action was dispatched; whether the site accepted it is not known yet.
    ActionSubmitted,
    /// The site's acceptance was observed or reconciled. Terminal.
    RemoteConfirmed,
    /// The worker lost knowledge of the outcome; visible, never silently retried. Terminal.
    Unknown,
}

impl Checkpoint {
    /// Every checkpoint, in graph order.
    pub const ALL: [Checkpoint; 5] = [
        Checkpoint::IntentRecorded,
        Checkpoint::TargetVerified,
        Checkpoint::ActionSubmitted,
        Checkpoint::RemoteConfirmed,
        Checkpoint::Unknown,
    ];

    /// The stable name stored in the journal and shown in evidence (`"INTENT_RECORDED"`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            Checkpoint::IntentRecorded => "INTENT_RECORDED",
            Checkpoint::TargetVerified => "TARGET_VERIFIED",
            Checkpoint::ActionSubmitted => "ACTION_SUBMITTED",
            Checkpoint::RemoteConfirmed => "REMOTE_CONFIRMED",
            Checkpoint::Unknown => "UNKNOWN",
        }
    }

    /// Parses a name produced by [`Checkpoint::as_str`].
    pub fn from_name(name: &str) -> Option<Checkpoint> {
        Checkpoint::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// Whether no transition leaves this state (`RemoteConfirmed`, `Unknown`).
    pub fn is_terminal(self) -> bool {
        matches!(self, Checkpoint::RemoteConfirmed | Checkpoint::Unknown)
    }

    /// Whether `self → to` is an edge of the checkpoint graph.
    pub fn can_transition_to(self, to: Checkpoint) -> bool {
        use Checkpoint::*;
        match (self, to) {
            (IntentRecorded, TargetVerified)
            | (TargetVerified, TargetVerified)
            | (TargetVerified, ActionSubmitted)
            | (ActionSubmitted, ActionSubmitted)
            | (ActionSubmitted, RemoteConfirmed) => true,
            (from, Unknown) => !from.is_terminal(),
            _ => false,
        }
    }
}

impl fmt::Display for Checkpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The idempotency key of one side effect, derived from its run and effect name, so that a
/// recovery worker derives the same key as the worker that crashed.
///
/// ```
/// use browser_fault::journal::RequestKey;
/// let a = RequestKey::derive("run-1", "send-hello");
/// assert_eq!(a, RequestKey::derive("run-1", "send-hello"));
/// assert_ne!(a, RequestKey::derive("run-2", "send-hello"));
/// assert!(a.as_str().starts_with("bf-"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestKey(String);

impl RequestKey {
    /// `"bf-"` followed by the first 24 hex digits of `sha256(run_id ‖ 0x00 ‖ effect)`.
    pub fn derive(run_id: &str, effect: &str) -> RequestKey {
        let mut hasher = Sha256::new();
        hasher.update(run_id.as_bytes());
        hasher.update([0u8]);
        hasher.update(effect.as_bytes());
        let hex = hex(&hasher.finalize());
        RequestKey(format!("bf-{}", &hex[..24]))
    }

    /// An agent's own request key, declared to the journal with
    /// [`Journal::record_intent_with_key`](super::Journal::record_intent_with_key) (an agent
    /// that already sends its own idempotency key keeps it).
    ///
    /// 1 to 128 characters of ASCII letters, digits and `-_.:~`: a key travels in form fields,
    /// URLs and evidence, and must read the same in each.
    ///
    /// ```
    /// use browser_fault::journal::RequestKey;
    /// assert_eq!(RequestKey::own("order-7f3a:1")?.as_str(), "order-7f3a:1");
    /// assert!(RequestKey::own("").is_err());
    /// assert!(RequestKey::own("has space").is_err());
    /// # Ok::<(), browser_fault::journal::InvalidRequestKey>(())
    /// ```
    pub fn own(key: impl Into<String>) -> Result<RequestKey, InvalidRequestKey> {
        let key = key.into();
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.:~".contains(c);
        if key.is_empty() || key.len() > MAX_OWN_KEY_LEN {
            return Err(InvalidRequestKey {
                reason: format!("{} characters, not 1 to {MAX_OWN_KEY_LEN}", key.len()),
            });
        }
        if let Some(bad) = key.chars().find(|c| !allowed(*c)) {
            return Err(InvalidRequestKey {
                reason: format!("{bad:?} is not an ASCII letter, digit or one of -_.:~"),
            });
        }
        Ok(RequestKey(key))
    }

    /// The key as text (what the site's ledger stores).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A key read back from the journal, trusted as stored.
    pub(crate) fn from_stored(key: String) -> RequestKey {
        RequestKey(key)
    }
}

impl fmt::Display for RequestKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for RequestKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The longest own request key ([`RequestKey::own`]).
const MAX_OWN_KEY_LEN: usize = 128;

/// An own request key that [`RequestKey::own`] refused. Its message never repeats the key
/// (an agent's key may be derived from something it should not log).
#[derive(Debug, thiserror::Error)]
#[error("invalid request key: {reason}")]
pub struct InvalidRequestKey {
    reason: String,
}

/// The sha256 hex digest of a side effect's normalized arguments.
///
/// A recovery worker recomputes it; a different hash for the same run and effect means the
/// arguments changed across the crash, which the journal refuses.
pub fn args_hash(normalized_args: &str) -> String {
    hex(&Sha256::digest(normalized_args.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Why a checkpoint transition was not applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransitionError {
    /// The pair is not an edge of the checkpoint graph; the journal was not touched.
    #[error("failed to transition checkpoint: {from} → {to} is not in the checkpoint graph")]
    Illegal {
        /// The requested from-state.
        from: Checkpoint,
        /// The requested to-state.
        to: Checkpoint,
    },
    /// The compare-and-set failed: another writer moved the side effect first.
    #[error(
        "failed to transition checkpoint of {key}: expected {expected}, found {actual} (lost a race)"
    )]
    LostRace {
        /// The side effect's request key.
        key: RequestKey,
        /// The from-state the caller expected.
        expected: Checkpoint,
        /// The state the journal holds.
        actual: Checkpoint,
    },
    /// The journal itself failed (including an unknown request key).
    #[error(transparent)]
    Journal(#[from] JournalError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use Checkpoint::*;

    #[test]
    fn allows_exactly_the_edges_of_the_design_graph() {
        let legal = [
            (IntentRecorded, TargetVerified),
            (IntentRecorded, Unknown),
            (TargetVerified, TargetVerified),
            (TargetVerified, ActionSubmitted),
            (TargetVerified, Unknown),
            (ActionSubmitted, ActionSubmitted),
            (ActionSubmitted, RemoteConfirmed),
            (ActionSubmitted, Unknown),
        ];
        for from in Checkpoint::ALL {
            for to in Checkpoint::ALL {
                assert_eq!(
                    from.can_transition_to(to),
                    legal.contains(&(from, to)),
                    "{from} → {to}"
                );
            }
        }
    }

    #[test]
    fn rejects_transition_from_confirmed_to_unknown() {
        assert!(!RemoteConfirmed.can_transition_to(Unknown));
        assert!(!Unknown.can_transition_to(Unknown));
    }

    #[test]
    fn treats_only_confirmed_and_unknown_as_terminal() {
        let terminal: Vec<_> = Checkpoint::ALL
            .into_iter()
            .filter(|c| c.is_terminal())
            .collect();
        assert_eq!(terminal, [RemoteConfirmed, Unknown]);
    }

    #[test]
    fn round_trips_names_and_serde() {
        for c in Checkpoint::ALL {
            assert_eq!(Checkpoint::from_name(c.as_str()), Some(c));
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<Checkpoint>(&json).unwrap(), c);
        }
        assert_eq!(Checkpoint::from_name("intent_recorded"), None);
    }

    #[test]
    fn derives_a_stable_key_that_separates_run_from_effect() {
        let key = RequestKey::derive("run", "effect");
        assert_eq!(key.as_str().len(), 3 + 24);
        assert_ne!(key, RequestKey::derive("ru", "neffect"));
        assert_eq!(
            args_hash(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
