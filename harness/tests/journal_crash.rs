//! A committed checkpoint transition survives SIGKILL of its writer.
//!
//! The parent re-executes this test binary in a writer role (`journal_crash_child_role`),
//! reads one acknowledgement per committed call over the child's stdout (written only after
//! the call returned), and SIGKILLs the child after a random number of them, 200 times.
//! Each new child resumes the effects its predecessor left unfinished. At the end the journal
//! is reopened: every acknowledged transition is in the history, every row's state is the end
//! of a legal path through the graph, and `PRAGMA integrity_check` says ok.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use browser_fault::journal::{Checkpoint, Journal, NewRun, TransitionError, args_hash};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rand::Rng;

const ROLE_ENV: &str = "BROWSER_FAULT_TEST_JOURNAL_WRITER";
const RUN: &str = "crash-run";
const ROUNDS: u32 = 200;

/// The child role: writes transitions forever, acknowledging each after it returned.
#[test]
fn journal_crash_child_role() {
    let Ok(path) = std::env::var(ROLE_ENV) else {
        return; // Only meaningful when re-executed by `committed_transitions_survive_sigkill`.
    };
    let incarnation: u32 = std::env::var("BF_INCARNATION").unwrap().parse().unwrap();
    let journal = Journal::open(path.as_ref()).unwrap();
    let mut out = std::io::stdout().lock();
    let mut ack = |line: String| {
        writeln!(out, "ACK {line}").unwrap();
        out.flush().unwrap();
    };
    // Resume what the previous incarnation left unfinished, then start new effects.
    let pending: Vec<_> = journal
        .side_effects(RUN)
        .unwrap()
        .into_iter()
        .filter(|e| !e.state.is_terminal())
        .collect();
    let mut work: Vec<(String, Checkpoint)> =
        pending.into_iter().map(|e| (e.effect, e.state)).collect();
    for n in 0.. {
        if work.is_empty() {
            work.push((
                format!("effect-{incarnation}-{n}"),
                Checkpoint::IntentRecorded,
            ));
            let effect = &work[0].0;
            let rec = journal
                .record_intent(RUN, effect, &args_hash(effect), incarnation)
                .unwrap();
            ack(format!("intent {} {}", rec.request_key, incarnation));
        }
        let (effect, state) = work.remove(0);
        let key = browser_fault::journal::RequestKey::derive(RUN, &effect);
        let mut state = state;
        while !state.is_terminal() {
            let next = match (state, n % 3) {
                (Checkpoint::IntentRecorded, _) => Checkpoint::TargetVerified,
                (Checkpoint::TargetVerified, 0) => Checkpoint::TargetVerified,
                (Checkpoint::TargetVerified, 1) => Checkpoint::Unknown,
                (Checkpoint::TargetVerified, _) => Checkpoint::ActionSubmitted,
                (_, 0) => Checkpoint::Unknown,
                _ => Checkpoint::RemoteConfirmed,
            };
            // A self-transition is done once per resumption, then the path moves on.
            let next = if next == state && state == Checkpoint::TargetVerified && n % 3 == 0 {
                journal.transition(&key, state, next, incarnation).unwrap();
                ack(format!(
                    "move {key} {} {} {incarnation}",
                    state.as_str(),
                    next.as_str()
                ));
                Checkpoint::ActionSubmitted
            } else {
                next
            };
            match journal.transition(&key, state, next, incarnation) {
                Ok(()) => ack(format!(
                    "move {key} {} {} {incarnation}",
                    state.as_str(),
                    next.as_str()
                )),
                Err(e @ TransitionError::LostRace { .. }) => {
                    panic!("single writer lost a race: {e}")
                }
                Err(e) => panic!("{e}"),
            }
            state = next;
        }
    }
}

#[test]
fn committed_transitions_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    Journal::open(&path)
        .unwrap()
        .create_run(&NewRun::new(RUN, "crash", "journal_crash"))
        .unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = rand::rng();
    // Per request key: the acknowledged (from, to, incarnation) moves, in order.
    let mut acked: HashMap<String, Vec<(Option<String>, String, u32)>> = HashMap::new();
    let mut acked_total = 0usize;
    for incarnation in 1..=ROUNDS {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "journal_crash_child_role",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE_ENV, &path)
            .env("BF_INCARNATION", incarnation.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let kill_after = rng.random_range(1..=12);
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut seen = 0;
        let mut line = String::new();
        let record = |line: &str, acked: &mut HashMap<_, Vec<_>>| {
            // libtest may print "test … ... " on the same line before the first acknowledgement.
            let Some(at) = line.find("ACK ") else {
                return false;
            };
            let f: Vec<&str> = line[at + 4..].split_whitespace().collect();
            match f.as_slice() {
                ["intent", key, inc] => acked.entry(key.to_string()).or_default().push((
                    None,
                    "INTENT_RECORDED".to_owned(),
                    inc.parse().unwrap(),
                )),
                ["move", key, from, to, inc] => acked.entry(key.to_string()).or_default().push((
                    Some(from.to_string()),
                    to.to_string(),
                    inc.parse().unwrap(),
                )),
                // libtest's own chatter ("running 1 test", …) is not an acknowledgement.
                _ => return false,
            }
            true
        };
        while seen < kill_after {
            line.clear();
            assert_ne!(
                reader.read_line(&mut line).unwrap(),
                0,
                "writer exited early"
            );
            if record(line.trim(), &mut acked) {
                seen += 1;
            }
        }
        kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
        // Acknowledgements already in the pipe were committed too.
        for l in reader.lines() {
            if record(l.unwrap().trim(), &mut acked) {
                seen += 1;
            }
        }
        child.wait().unwrap();
        acked_total += seen;
    }

    let journal = Journal::open(&path).unwrap();
    let history = journal.history(RUN).unwrap();
    let effects = journal.side_effects(RUN).unwrap();
    let mut per_key: HashMap<String, Vec<_>> = HashMap::new();
    for t in &history {
        per_key
            .entry(t.request_key.to_string())
            .or_default()
            .push(t);
    }
    // Every acknowledged move is in the history, in order. It is a subsequence, not a
    // prefix: a move committed just before a kill is in the history but was never
    // acknowledged, and the next incarnation carries on from it.
    for (key, moves) in &acked {
        let rows = &per_key[key];
        let mut rows_iter = rows.iter();
        for (from, to, inc) in moves {
            let found = rows_iter.any(|row| {
                row.from.map(|c| c.as_str().to_owned()) == *from
                    && row.to.as_str() == to
                    && row.incarnation == *inc
            });
            assert!(
                found,
                "{key}: lost the committed move {from:?} -> {to} of incarnation {inc}"
            );
        }
    }
    assert!(history.len() >= acked_total);
    assert!(
        history.len() - acked_total <= ROUNDS as usize,
        "{} rows, {acked_total} acknowledged",
        history.len()
    );
    // Every row's state is the end of a legal path from its creation.
    assert_eq!(effects.len(), per_key.len());
    for effect in &effects {
        let rows = &per_key[effect.request_key.as_str()];
        assert_eq!(rows[0].from, None);
        assert_eq!(rows[0].to, Checkpoint::IntentRecorded);
        for pair in rows.windows(2) {
            assert_eq!(pair[1].from, Some(pair[0].to));
            assert!(pair[0].to.can_transition_to(pair[1].to));
        }
        assert_eq!(effect.state, rows.last().unwrap().to);
    }
    let integrity: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    assert!(acked_total >= ROUNDS as usize);
}
