//! The orphan sweep removes the trial roots of dead runs and keeps everything else.

use std::path::Path;
use std::process::Command;

use browser_fault::journal::{Journal, NewRun};
use browser_fault::profile::{ProfileSpec, ProfileStore};
use browser_fault::trial::sweep_stale_roots;

const CHILD_ENV: &str = "BF_SWEEP_TEST_ROOT";

/// A trial root with a run and one profile, owned by the calling process.
fn make_root(root: &Path, run_id: &str) {
    std::fs::create_dir_all(root).unwrap();
    let journal = Journal::open(&root.join("journal.sqlite3")).unwrap();
    journal.create_run(&NewRun::new(run_id, "s", "t")).unwrap();
    let store = ProfileStore::open(root.join("profiles")).unwrap();
    store
        .create(&ProfileSpec::new(
            format!("p-{run_id}"),
            "browser-fault",
            "t",
            run_id,
            "156",
        ))
        .unwrap();
}

#[test]
fn sweep_child_role() {
    // Not a test on its own: the body of the child process that owns a run and then dies.
    if let Ok(root) = std::env::var(CHILD_ENV) {
        make_root(Path::new(&root), "dead-run");
    }
}

#[test]
fn removes_roots_of_dead_runs_and_keeps_live_and_foreign_ones() {
    let base = tempfile::tempdir().unwrap();
    let dead = base.path().join("dead0001");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sweep_child_role", "--nocapture"])
        .env(CHILD_ENV, &dead)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(dead.join("profiles/p-dead-run").is_dir());

    let live = base.path().join("live0001");
    make_root(&live, "live-run");

    let foreign = base.path().join("foreign1");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("decoy.txt"), b"keep me").unwrap();

    let summary = sweep_stale_roots(base.path());

    assert!(!dead.exists(), "the dead run's root is gone");
    assert_eq!(summary.removed_roots, 1);
    assert_eq!(summary.removed_profiles, 1);
    assert!(
        live.join("profiles/p-live-run").is_dir(),
        "a live run is never touched"
    );
    assert!(
        foreign.join("decoy.txt").exists(),
        "a folder without our journal is kept"
    );
    assert!(
        summary
            .kept
            .iter()
            .any(|(p, why)| p == &foreign && why == "no journal")
    );
}

#[test]
fn keeps_a_root_whose_journal_has_no_owned_profile_yet() {
    // Another test process (nextest runs one per trial) between opening its journal and
    // creating its first profile: nothing proves its run dead.
    let base = tempfile::tempdir().unwrap();
    let setting_up = base.path().join("setup001");
    std::fs::create_dir_all(&setting_up).unwrap();
    let journal = Journal::open(&setting_up.join("journal.sqlite3")).unwrap();
    journal
        .create_run(&NewRun::new("live-run", "s", "t"))
        .unwrap();
    ProfileStore::open(setting_up.join("profiles")).unwrap();

    let summary = sweep_stale_roots(base.path());

    assert!(
        setting_up.join("journal.sqlite3").exists(),
        "the root is kept"
    );
    assert_eq!(summary.removed_roots, 0);
}

#[test]
fn a_root_whose_owner_process_lives_is_left_alone_without_opening_its_journal() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("owned001");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sweep_child_role", "--nocapture"])
        .env(CHILD_ENV, &root)
        .status()
        .unwrap();
    assert!(status.success());
    // The run's owner is dead, but the root says a live process (this one) runs its trial.
    let pid = std::process::id();
    std::fs::write(
        root.join("owner.json"),
        serde_json::json!({
            "pid": pid,
            "start_ticks": browser_fault::_internal::liveness::process_start_ticks(pid),
            "host": browser_fault::_internal::liveness::host_name(),
        })
        .to_string(),
    )
    .unwrap();
    let summary = sweep_stale_roots(base.path());
    assert_eq!(summary.removed_roots, 0);
    assert!(root.join("profiles/p-dead-run").is_dir());
    assert!(
        summary.kept.is_empty(),
        "a live trial is not even reported: {:?}",
        summary.kept
    );
}

const OWNER_CHILD_ENV: &str = "BF_SWEEP_TEST_OWNER";

/// The owner marker of this process, as a trial root carries it.
fn owner_marker() -> String {
    let pid = std::process::id();
    serde_json::json!({
        "pid": pid,
        "start_ticks": browser_fault::_internal::liveness::process_start_ticks(pid),
        "host": browser_fault::_internal::liveness::host_name(),
    })
    .to_string()
}

#[test]
fn owner_child_role() {
    // Not a test on its own: a child that marks roots as its own, then dies.
    if let Ok(roots) = std::env::var(OWNER_CHILD_ENV) {
        for root in roots.split(':').filter(|r| !r.is_empty()) {
            std::fs::create_dir_all(root).unwrap();
            std::fs::write(Path::new(root).join("owner.json"), owner_marker()).unwrap();
        }
    }
}

#[test]
fn a_root_without_a_journal_goes_once_its_owner_is_proven_dead_and_it_holds_nothing_else() {
    // What a run that died (or whose site failed) before its journal leaves behind.
    let base = tempfile::tempdir().unwrap();
    let bare = base.path().join("bare0001");
    let cluttered = base.path().join("clutter1");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "owner_child_role", "--nocapture"])
        .env(
            OWNER_CHILD_ENV,
            format!("{}:{}", bare.display(), cluttered.display()),
        )
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(cluttered.join("notes.txt"), b"not ours to judge").unwrap();
    let alive = base.path().join("alive001");
    std::fs::create_dir_all(&alive).unwrap();
    std::fs::write(alive.join("owner.json"), owner_marker()).unwrap();

    let summary = sweep_stale_roots(base.path());

    assert!(!bare.exists(), "the dead owner's bare root is removed");
    assert_eq!(summary.removed_roots, 1);
    assert!(
        cluttered.join("notes.txt").exists(),
        "a root holding anything else is kept"
    );
    assert!(
        summary
            .kept
            .iter()
            .any(|(p, why)| p == &cluttered && why == "no journal")
    );
    assert!(
        alive.join("owner.json").exists(),
        "a live owner's root stays"
    );
}

/// Marks `roots` as owned by a child process that then exits: their owner is proven dead.
fn owned_by_a_dead_process(roots: &[&Path]) -> u32 {
    let joined: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "owner_child_role", "--nocapture"])
        .env(OWNER_CHILD_ENV, joined.join(":"))
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    pid
}

#[test]
fn a_root_whose_owner_died_before_its_first_profile_was_owned_goes_and_one_with_more_stays() {
    // A SIGKILL between the journal and the profile's owner marker: the journal, the store
    // and a profile folder whose marker was still being written.
    let base = tempfile::tempdir().unwrap();
    let cut = base.path().join("cutshort");
    let cluttered = base.path().join("cluttrd2");
    owned_by_a_dead_process(&[&cut, &cluttered]);
    for root in [&cut, &cluttered] {
        let journal = Journal::open(&root.join("journal.sqlite3")).unwrap();
        journal
            .create_run(&NewRun::new("dead-run", "s", "t"))
            .unwrap();
        ProfileStore::open(root.join("profiles")).unwrap();
        let half = root.join("profiles/p-dead-run");
        std::fs::create_dir(&half).unwrap();
        std::fs::write(
            half.join(format!(
                "{}.tmp-4242",
                browser_fault::profile::OWNER_MARKER_FILE
            )),
            b"{\"form",
        )
        .unwrap();
    }
    // Something a browser or a user put there: not what a setup leaves.
    std::fs::write(cluttered.join("profiles/p-dead-run/Cookies"), b"keep").unwrap();

    let summary = sweep_stale_roots(base.path());

    assert!(!cut.exists(), "the cut-short setup is removed");
    assert_eq!(summary.removed_roots, 1);
    assert!(
        cluttered.join("profiles/p-dead-run/Cookies").exists(),
        "a root holding more than a setup makes is kept"
    );
    assert!(
        summary
            .kept
            .iter()
            .any(|(p, why)| p == &cluttered && why == "no owned profile")
    );
    assert!(
        !base
            .path()
            .read_dir()
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with('.')),
        "no retired folder is left"
    );
}

#[test]
fn a_removal_cut_short_and_a_making_cut_short_are_finished_and_a_live_making_stays() {
    let base = tempfile::tempdir().unwrap();
    // A removal cut short: what was left of a retired root, whatever it still holds.
    let retired = base.path().join(".removing-0badc0de");
    std::fs::create_dir_all(retired.join("scratch")).unwrap();
    std::fs::write(retired.join("journal.sqlite3"), b"half").unwrap();
    // A root being made by a process that died, and one being made by this live process.
    let dead_pid = owned_by_a_dead_process(&[]);
    let dead_making = base
        .path()
        .join(format!(".making-{dead_pid}-unknown-feedf00d"));
    std::fs::create_dir(&dead_making).unwrap();
    let pid = std::process::id();
    let ticks = browser_fault::_internal::liveness::process_start_ticks(pid).unwrap();
    let live_making = base.path().join(format!(".making-{pid}-{ticks}-cafef00d"));
    std::fs::create_dir(&live_making).unwrap();

    let summary = sweep_stale_roots(base.path());

    assert!(!retired.exists(), "the cut-short removal is finished");
    assert!(
        !dead_making.exists(),
        "a dead process's half-made root goes"
    );
    assert!(
        live_making.exists(),
        "a live process's root being made stays"
    );
    assert_eq!(summary.removed_roots, 2);
    assert!(summary.kept.is_empty(), "{:?}", summary.kept);
}

#[test]
fn a_root_whose_owner_died_after_its_profiles_were_removed_goes_with_its_strays_killed() {
    // A SIGKILL of the runner between the cleanup's proven profile removal and the root's
    // own: the journal, an empty store, the proxy's marks, the workers' TMPDIRs (one with a
    // Chromium temp folder), a worker's socket and the scratch folder. A process of the
    // dead run that still names the root (its TMPDIR there) is killed before the removal.
    let base = tempfile::tempdir().unwrap();
    let left = base.path().join("ac0d7f1d");
    let cluttered = base.path().join("cluttrd3");
    owned_by_a_dead_process(&[&left, &cluttered]);
    for root in [&left, &cluttered] {
        let journal = Journal::open(&root.join("journal.sqlite3")).unwrap();
        journal
            .create_run(&NewRun::new("dead-run", "s", "t"))
            .unwrap();
        ProfileStore::open(root.join("profiles")).unwrap();
        std::fs::create_dir_all(root.join("network")).unwrap();
        std::fs::write(root.join("network/effect_sent"), b"").unwrap();
        std::fs::create_dir_all(root.join("tmp-w1/org.chromium.Chromium.aBcDeF")).unwrap();
        std::fs::create_dir_all(root.join("tmp-w2")).unwrap();
        std::fs::create_dir_all(root.join("scratch")).unwrap();
        drop(std::os::unix::net::UnixListener::bind(root.join("w1.sock")).unwrap());
        // The cleanup cut short between the profile's removal and its backups'.
        std::fs::create_dir_all(root.join("profiles/.backups/p-dead-run/before")).unwrap();
        std::fs::write(
            root.join("profiles/.backups/p-dead-run/before/Cookies"),
            b"a copy",
        )
        .unwrap();
    }
    std::fs::write(cluttered.join("notes.txt"), b"not ours to judge").unwrap();
    let mut stray = Command::new("sleep")
        .arg("600")
        .env("TMPDIR", left.join("tmp-w1"))
        .spawn()
        .unwrap();

    let summary = sweep_stale_roots(base.path());

    assert!(!left.exists(), "the dead run's leftovers are removed");
    assert_eq!(summary.removed_roots, 1, "{:?}", summary.kept);
    let status = stray.try_wait().unwrap();
    let status = status.unwrap_or_else(|| stray.wait().unwrap());
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "the stray naming the root was SIGKILLed"
    );
    assert!(
        cluttered.join("notes.txt").exists(),
        "a root holding anything the harness does not make is kept"
    );
    assert!(
        summary
            .kept
            .iter()
            .any(|(p, why)| p == &cluttered && why == "no owned profile")
    );
}
