//! Two real processes race for one profile's lease: exactly one wins every round; a killed
//! holder is taken over with a bumped generation; a live holder is never displaced.
//!
//! Children are this test binary re-executed in the `lease_child_role` role. They block on
//! their stdin (the barrier); the parent writes `go` to both, then reads both answers.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use browser_fault::_internal::lease::{LeaseErrorKind, LeaseHolder, claim_lease, lease_row};
use browser_fault::journal::Journal;
use browser_fault::profile::{Profile, ProfileSpec, ProfileStore};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const ROLE_ENV: &str = "BROWSER_FAULT_TEST_LEASE_CHILD";
const ROUNDS: usize = 500;

/// The child role: `go` claims (answers `won <generation>` or `held`), `release` releases.
#[test]
fn lease_child_role() {
    let Ok(spec) = std::env::var(ROLE_ENV) else {
        return; // Only meaningful when re-executed by the tests below.
    };
    let (journal, root, profile) = {
        let mut parts = spec.split('\n');
        (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        )
    };
    let journal = Journal::open(journal.as_ref()).unwrap();
    let store = ProfileStore::open(root).unwrap();
    let profile = store.open_profile(profile.as_ref()).unwrap();
    let holder = LeaseHolder::this_process("race", 1);
    let mut out = std::io::stdout().lock();
    let mut held = None;
    for line in std::io::stdin().lines() {
        let answer = match line.unwrap().as_str() {
            "go" => match claim_lease(&journal, &profile, &holder, Duration::from_secs(60)) {
                Ok(lease) => {
                    let answer = format!("won {}", lease.generation());
                    held = Some(lease);
                    answer
                }
                Err(e) if matches!(e.kind(), LeaseErrorKind::Held { .. }) => "held".to_owned(),
                Err(e) => panic!("{e}"),
            },
            "release" => {
                held.take().unwrap().release().unwrap();
                "released".to_owned()
            }
            other => panic!("unknown command {other}"),
        };
        writeln!(out, "ACK {answer}").unwrap();
        out.flush().unwrap();
    }
}

struct Racer {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Racer {
    fn spawn(journal: &Journal, store: &ProfileStore, profile: &Profile) -> Racer {
        let spec = format!(
            "{}\n{}\n{}",
            journal.path().display(),
            store.root().display(),
            profile.path().display()
        );
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "lease_child_role",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE_ENV, spec)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        Racer {
            stdin: child.stdin.take().unwrap(),
            lines: BufReader::new(child.stdout.take().unwrap()).lines(),
            child,
        }
    }

    fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn answer(&mut self) -> String {
        loop {
            let line = self.lines.next().expect("child exited").unwrap();
            if let Some(at) = line.find("ACK ") {
                return line[at + 4..].to_owned();
            }
        }
    }

    fn kill(mut self) {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL).unwrap();
        self.child.wait().unwrap();
    }
}

/// Serializes the tests of this binary. A lock lives on its open file description, which a
/// child shares from fork until exec: while another test thread spawns a racer, a lease this
/// thread released can still look held to a third process. One test at a time makes every
/// answer deterministic.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

fn setup(dir: &std::path::Path) -> (Journal, ProfileStore, Profile) {
    let journal = Journal::open(&dir.join("journal.sqlite")).unwrap();
    let store = ProfileStore::open(dir.join("profiles")).unwrap();
    let profile = store
        .create(&ProfileSpec::new(
            "raced",
            "browser-fault",
            "lease race",
            "race",
            "131",
        ))
        .unwrap();
    (journal, store, profile)
}

#[test]
fn exactly_one_of_two_processes_wins_each_round() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (journal, store, profile) = setup(dir.path());
    let mut racers = [
        Racer::spawn(&journal, &store, &profile),
        Racer::spawn(&journal, &store, &profile),
    ];
    let mut wins = [0usize; 2];
    let mut last_generation = 0;
    for round in 0..ROUNDS {
        for racer in &mut racers {
            racer.send("go");
        }
        let answers = [racers[0].answer(), racers[1].answer()];
        let winners: Vec<usize> = (0..2).filter(|&i| answers[i].starts_with("won")).collect();
        assert_eq!(winners.len(), 1, "round {round}: {answers:?}");
        let winner = winners[0];
        assert_eq!(answers[1 - winner], "held", "round {round}");
        let generation: u64 = answers[winner][4..].parse().unwrap();
        assert!(
            generation > last_generation,
            "fencing generation must increase"
        );
        last_generation = generation;
        wins[winner] += 1;
        racers[winner].send("release");
        assert_eq!(racers[winner].answer(), "released");
    }
    assert_eq!(wins.iter().sum::<usize>(), ROUNDS);
    for racer in racers {
        racer.kill();
    }
}

#[test]
fn takeover_after_sigkill_bumps_the_generation() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (journal, store, profile) = setup(dir.path());
    let mut holder = Racer::spawn(&journal, &store, &profile);
    holder.send("go");
    assert_eq!(holder.answer(), "won 1");
    let me = LeaseHolder::this_process("race", 2);
    let refused = claim_lease(&journal, &profile, &me, Duration::from_secs(60)).unwrap_err();
    assert!(
        matches!(refused.kind(), LeaseErrorKind::Held { holder: Some(row) } if row.generation == 1)
    );
    holder.kill();
    let lease = claim_lease(&journal, &profile, &me, Duration::from_secs(60)).unwrap();
    assert_eq!(lease.generation(), 2);
    let row = lease_row(&journal, profile.path()).unwrap().unwrap();
    assert_eq!(
        (row.pid, row.incarnation, row.generation),
        (std::process::id(), 2, 2)
    );
    lease.release().unwrap();
}

#[test]
fn a_live_holder_is_never_displaced_even_when_expired() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (journal, store, profile) = setup(dir.path());
    // This process holds with a zero ttl: expired at once, but alive and locked.
    let first = LeaseHolder::this_process("race", 1);
    let lease = claim_lease(&journal, &profile, &first, Duration::ZERO).unwrap();
    let mut other = Racer::spawn(&journal, &store, &profile);
    for _ in 0..20 {
        other.send("go");
        assert_eq!(other.answer(), "held");
    }
    let row = lease_row(&journal, profile.path()).unwrap().unwrap();
    assert_eq!(
        (row.pid, row.generation, row.released),
        (std::process::id(), 1, false)
    );
    lease.release().unwrap();
    other.send("go");
    assert_eq!(other.answer(), "won 2");
    other.kill();
}

#[test]
fn a_fenced_off_lease_cannot_renew_or_release() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (journal, _store, profile) = setup(dir.path());
    let holder = LeaseHolder::this_process("race", 1);
    let lease = claim_lease(&journal, &profile, &holder, Duration::from_secs(60)).unwrap();
    lease.renew(Duration::from_secs(120)).unwrap();
    // A takeover elsewhere moved the generation on.
    let conn = rusqlite::Connection::open(journal.path()).unwrap();
    conn.execute("UPDATE leases SET generation = generation + 1", [])
        .unwrap();
    let err = lease.renew(Duration::from_secs(60)).unwrap_err();
    assert!(matches!(err.kind(), LeaseErrorKind::Lost { generation: 1 }));
    let err = lease.release().unwrap_err();
    assert!(matches!(err.kind(), LeaseErrorKind::Lost { generation: 1 }));
}
