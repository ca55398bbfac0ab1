//! Files that are not our journal are refused with typed errors and left byte-for-byte
//! unchanged; the checkpoint graph is enforced with illegal and lost-race kept distinct.

use std::path::Path;

use browser_fault::journal::{
    BrowserSessionRecord, Checkpoint, Journal, JournalErrorKind, NewRun, RequestKey,
    TransitionError, args_hash,
};

fn refused(path: &Path) -> JournalErrorKind {
    let before = std::fs::read(path).unwrap();
    let err = Journal::open(path).unwrap_err();
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "a refused file was modified"
    );
    err.kind().clone()
}

#[test]
fn refuses_a_file_that_is_not_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    std::fs::write(
        &path,
        "this is somebody's notes, not a database\n".repeat(10),
    )
    .unwrap();
    assert!(matches!(refused(&path), JournalErrorKind::Corrupt { .. }));
}

#[test]
fn refuses_an_sqlite_database_that_is_not_ours() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE precious (x); INSERT INTO precious VALUES (42);")
        .unwrap();
    drop(conn);
    assert!(matches!(refused(&path), JournalErrorKind::NotOurs { .. }));
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA application_id = 7;").unwrap();
    drop(conn);
    assert!(matches!(refused(&path), JournalErrorKind::NotOurs { .. }));
}

#[test]
fn refuses_a_truncated_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    {
        let journal = Journal::open(&path).unwrap();
        journal.create_run(&NewRun::new("r", "s", "t")).unwrap();
        for i in 0..200 {
            journal
                .record_intent("r", &format!("e{i}"), &args_hash("x"), 1)
                .unwrap();
        }
    }
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 8192);
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(refused(&path), JournalErrorKind::Corrupt { .. }));
    std::fs::write(&path, &bytes[..50]).unwrap();
    assert!(matches!(refused(&path), JournalErrorKind::Corrupt { .. }));
}

#[test]
fn refuses_a_journal_with_a_corrupted_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    {
        let journal = Journal::open(&path).unwrap();
        journal.create_run(&NewRun::new("r", "s", "t")).unwrap();
        for i in 0..200 {
            journal
                .record_intent("r", &format!("e{i}"), &args_hash("x"), 1)
                .unwrap();
        }
    }
    let mut bytes = std::fs::read(&path).unwrap();
    let page = 4096;
    for b in &mut bytes[page * 2..page * 3] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(refused(&path), JournalErrorKind::Corrupt { .. }));
}

#[test]
fn reopens_its_own_journal_and_creates_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    let journal = Journal::open(&path).unwrap();
    journal.create_run(&NewRun::new("r", "s", "t")).unwrap();
    let again = Journal::open(&path).unwrap();
    assert_eq!(
        again.run("r").unwrap().unwrap().owner_pid,
        std::process::id()
    );
    assert!(matches!(
        again
            .create_run(&NewRun::new("r", "s", "t"))
            .unwrap_err()
            .kind(),
        JournalErrorKind::RunExists { .. }
    ));
}

fn journal_with_effect(dir: &Path) -> (Journal, RequestKey) {
    let journal = Journal::open(&dir.join("journal.sqlite")).unwrap();
    journal.create_run(&NewRun::new("r", "s", "t")).unwrap();
    let rec = journal
        .record_intent("r", "send", &args_hash("a"), 1)
        .unwrap();
    (journal, rec.request_key)
}

/// Drives a fresh side effect to `state` along the graph.
fn at_state(journal: &Journal, effect: &str, state: Checkpoint) -> RequestKey {
    use Checkpoint::*;
    let key = journal
        .record_intent("r", effect, &args_hash(effect), 1)
        .unwrap()
        .request_key;
    let path: &[Checkpoint] = match state {
        IntentRecorded => &[],
        TargetVerified => &[TargetVerified],
        ActionSubmitted => &[TargetVerified, ActionSubmitted],
        RemoteConfirmed => &[TargetVerified, ActionSubmitted, RemoteConfirmed],
        Unknown => &[Unknown],
    };
    let mut from = IntentRecorded;
    for &to in path {
        journal.transition(&key, from, to, 1).unwrap();
        from = to;
    }
    key
}

#[test]
fn enforces_every_pair_of_the_checkpoint_graph() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, _) = journal_with_effect(dir.path());
    for from in Checkpoint::ALL {
        for to in Checkpoint::ALL {
            let effect = format!("{from}-{to}");
            let key = at_state(&journal, &effect, from);
            let before = journal.history("r").unwrap().len();
            let result = journal.transition(&key, from, to, 2);
            if from.can_transition_to(to) {
                result.unwrap();
                let rec = journal.side_effect("r", &effect).unwrap().unwrap();
                assert_eq!((rec.state, rec.incarnation), (to, 2));
                let last = journal.history("r").unwrap().pop().unwrap();
                assert_eq!((last.from, last.to, last.incarnation), (Some(from), to, 2));
            } else {
                assert!(
                    matches!(result, Err(TransitionError::Illegal { from: f, to: t }) if f == from && t == to),
                    "{from} → {to}"
                );
                assert_eq!(journal.history("r").unwrap().len(), before);
                assert_eq!(
                    journal.side_effect("r", &effect).unwrap().unwrap().state,
                    from
                );
            }
        }
    }
}

#[test]
fn tells_a_lost_race_from_an_illegal_transition() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, key) = journal_with_effect(dir.path());
    let other = Journal::open(journal.path()).unwrap();
    other
        .transition(
            &key,
            Checkpoint::IntentRecorded,
            Checkpoint::TargetVerified,
            2,
        )
        .unwrap();
    let lost = journal
        .transition(
            &key,
            Checkpoint::IntentRecorded,
            Checkpoint::TargetVerified,
            1,
        )
        .unwrap_err();
    assert!(matches!(
        lost,
        TransitionError::LostRace {
            expected: Checkpoint::IntentRecorded,
            actual: Checkpoint::TargetVerified,
            ..
        }
    ));
    let illegal = journal
        .transition(&key, Checkpoint::RemoteConfirmed, Checkpoint::Unknown, 1)
        .unwrap_err();
    assert!(matches!(illegal, TransitionError::Illegal { .. }));
    let unknown_key = RequestKey::derive("r", "never-recorded");
    let missing = journal
        .transition(
            &unknown_key,
            Checkpoint::IntentRecorded,
            Checkpoint::Unknown,
            1,
        )
        .unwrap_err();
    assert!(matches!(
        missing,
        TransitionError::Journal(ref e) if matches!(e.kind(), JournalErrorKind::UnknownRequestKey { .. })
    ));
}

#[test]
fn records_intents_idempotently_and_refuses_changed_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, key) = journal_with_effect(dir.path());
    journal
        .transition(
            &key,
            Checkpoint::IntentRecorded,
            Checkpoint::TargetVerified,
            1,
        )
        .unwrap();
    let again = journal
        .record_intent("r", "send", &args_hash("a"), 2)
        .unwrap();
    assert_eq!(
        (again.request_key, again.state, again.incarnation),
        (key, Checkpoint::TargetVerified, 1)
    );
    let changed = journal
        .record_intent("r", "send", &args_hash("b"), 2)
        .unwrap_err();
    assert!(matches!(
        changed.kind(),
        JournalErrorKind::ArgumentsChanged { .. }
    ));
    let history = journal.history("r").unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(
        (history[0].from, history[0].to),
        (None, Checkpoint::IntentRecorded)
    );
}

#[test]
fn keeps_browser_session_records_and_their_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, _) = journal_with_effect(dir.path());
    let rec = BrowserSessionRecord::new("r", "bs-1", "/p/x", "http://127.0.0.1:1", "acct-42", 3, 1);
    journal.record_browser_session(&rec).unwrap();
    assert!(matches!(
        journal.record_browser_session(&rec).unwrap_err().kind(),
        JournalErrorKind::SessionExists { .. }
    ));
    journal
        .set_session_checkpoint("bs-1", Checkpoint::TargetVerified)
        .unwrap();
    let stored = journal.browser_sessions("r").unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].last_checkpoint, Some(Checkpoint::TargetVerified));
    assert_eq!(stored[0].profile_generation, 3);
    let orphan = BrowserSessionRecord::new("nope", "bs-2", "/p/y", "o", "m", 1, 1);
    assert!(matches!(
        journal.record_browser_session(&orphan).unwrap_err().kind(),
        JournalErrorKind::UnknownRun { .. }
    ));
}

#[test]
fn keeps_an_agents_own_key_and_refuses_another_for_the_same_effect() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, derived) = journal_with_effect(dir.path());
    let own = RequestKey::own("order-17:a").unwrap();
    let rec = journal
        .record_intent_with_key("r", "pay", &args_hash("x"), &own, 1)
        .unwrap();
    assert_eq!(rec.request_key, own);
    // A recovery gets the same row back; a new key for the same effect is refused.
    let again = journal
        .record_intent_with_key("r", "pay", &args_hash("x"), &own, 2)
        .unwrap();
    assert_eq!((again.request_key, again.incarnation), (own.clone(), 1));
    let minted = RequestKey::own("order-17:b").unwrap();
    let changed = journal
        .record_intent_with_key("r", "pay", &args_hash("x"), &minted, 2)
        .unwrap_err();
    assert!(
        matches!(changed.kind(), JournalErrorKind::KeyChanged { recorded, .. } if *recorded == own)
    );
    // Another effect cannot take a key that is already the journal's.
    let taken = journal
        .record_intent_with_key("r", "refund", &args_hash("x"), &derived, 1)
        .unwrap_err();
    assert!(matches!(taken.kind(), JournalErrorKind::KeyTaken { .. }));
    assert!(journal.side_effect("r", "refund").unwrap().is_none());
    journal
        .transition(
            &own,
            Checkpoint::IntentRecorded,
            Checkpoint::TargetVerified,
            1,
        )
        .unwrap();
    assert_eq!(
        journal.side_effect("r", "pay").unwrap().unwrap().state,
        Checkpoint::TargetVerified
    );
}

#[test]
fn journals_a_resend_under_the_same_key_as_the_resending_worker() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, key) = journal_with_effect(dir.path());
    journal
        .transition(
            &key,
            Checkpoint::IntentRecorded,
            Checkpoint::TargetVerified,
            1,
        )
        .unwrap();
    journal
        .transition(
            &key,
            Checkpoint::TargetVerified,
            Checkpoint::ActionSubmitted,
            1,
        )
        .unwrap();
    // Worker 2 read the site, found the effect absent, and sends again under the same key.
    journal
        .transition(
            &key,
            Checkpoint::ActionSubmitted,
            Checkpoint::ActionSubmitted,
            2,
        )
        .unwrap();
    journal
        .transition(
            &key,
            Checkpoint::ActionSubmitted,
            Checkpoint::RemoteConfirmed,
            2,
        )
        .unwrap();
    let submitters: Vec<u32> = journal
        .history("r")
        .unwrap()
        .iter()
        .filter(|t| t.to == Checkpoint::ActionSubmitted)
        .map(|t| t.incarnation)
        .collect();
    assert_eq!(submitters, [1, 2]);
    // A confirmed effect is never resent.
    assert!(matches!(
        journal.transition(
            &key,
            Checkpoint::RemoteConfirmed,
            Checkpoint::ActionSubmitted,
            3
        ),
        Err(TransitionError::Illegal { .. })
    ));
}
