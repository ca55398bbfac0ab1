//! The cleanup coordinator refuses every unsafe removal (a decoy outside the root survives),
//! treats a missing profile as cleaned, lets only one of two concurrent callers delete, and
//! the orphan sweep removes only owned, unleased profiles of dead runs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Barrier;
use std::time::Duration;

use browser_fault::_internal::cleanup::{
    CleanupCoordinator, CleanupOutcome, CleanupReason, KeepReason,
};
use browser_fault::_internal::lease::{LeaseHolder, claim_lease};
use browser_fault::journal::{Journal, NewRun};
use browser_fault::profile::{ProfileSpec, ProfileStore};

struct World {
    _dir: tempfile::TempDir,
    journal: Journal,
    store: ProfileStore,
    decoy: PathBuf,
    outside: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(&dir.path().join("journal.sqlite")).unwrap();
    journal.create_run(&NewRun::new("live", "s", "t")).unwrap();
    let store = ProfileStore::open(dir.path().join("root")).unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let decoy = outside.join("decoy.txt");
    std::fs::write(&decoy, "must survive").unwrap();
    World {
        _dir: dir,
        journal,
        store,
        decoy,
        outside,
    }
}

fn spec(name: &str, run: &str) -> ProfileSpec {
    ProfileSpec::new(name, "browser-fault", "cleanup test", run, "131")
}

fn assert_refused(w: &World, path: &Path, reason: impl Fn(&CleanupReason) -> bool) {
    let report = CleanupCoordinator::new(&w.journal, &w.store).remove_profile(path);
    assert_eq!(report.outcome, CleanupOutcome::FailedUnsafe, "{report:?}");
    assert!(reason(report.reason.as_ref().unwrap()), "{report:?}");
    assert!(w.decoy.exists(), "the decoy outside the root was touched");
    assert_eq!(std::fs::read_to_string(&w.decoy).unwrap(), "must survive");
}

#[test]
fn refuses_a_path_outside_the_root() {
    let w = world();
    // Even one that carries our marker.
    std::fs::copy(
        w.store
            .create(&spec("p", "live"))
            .unwrap()
            .path()
            .join(".browser-fault-owner.json"),
        w.outside.join(".browser-fault-owner.json"),
    )
    .unwrap();
    assert_refused(&w, &w.outside, |r| *r == CleanupReason::OutsideRoot);
    assert_refused(&w, &w.store.root().join("../outside"), |r| {
        *r == CleanupReason::ParentComponent
    });
}

#[test]
fn refuses_the_root_itself() {
    let w = world();
    w.store.create(&spec("p", "live")).unwrap();
    assert_refused(&w, w.store.root(), |r| *r == CleanupReason::IsRoot);
    assert!(w.store.root().join("p").exists());
}

#[test]
fn refuses_a_symlink_escape() {
    let w = world();
    std::fs::copy(
        w.store
            .create(&spec("p", "live"))
            .unwrap()
            .path()
            .join(".browser-fault-owner.json"),
        w.outside.join(".browser-fault-owner.json"),
    )
    .unwrap();
    let link = w.store.root().join("link");
    std::os::unix::fs::symlink(&w.outside, &link).unwrap();
    assert_refused(&w, &link, |r| {
        matches!(r, CleanupReason::SymlinkEscape { .. })
    });
    // Through a symlinked ancestor below the root.
    assert_refused(&w, &link.join("inner"), |r| {
        matches!(r, CleanupReason::SymlinkEscape { .. })
    });
    assert!(w.outside.join(".browser-fault-owner.json").exists());
}

#[test]
fn refuses_a_directory_without_our_marker() {
    let w = world();
    let foreign = w.store.root().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("data"), "x").unwrap();
    assert_refused(&w, &foreign, |r| *r == CleanupReason::MissingMarker);
    assert!(foreign.join("data").exists());
}

#[test]
fn removes_links_inside_a_profile_not_their_targets() {
    let w = world();
    let profile = w.store.create(&spec("p", "live")).unwrap();
    std::os::unix::fs::symlink(&w.outside, profile.path().join("escape-dir")).unwrap();
    std::os::unix::fs::symlink(&w.decoy, profile.path().join("escape-file")).unwrap();
    w.store.backup(&profile, "b1").unwrap();
    let report = CleanupCoordinator::new(&w.journal, &w.store).remove_profile(profile.path());
    assert_eq!(
        (report.outcome, report.already_missing),
        (CleanupOutcome::Cleaned, false)
    );
    assert!(!profile.path().exists());
    assert!(
        !w.store.backups_of("p").exists(),
        "backups go with the profile"
    );
    assert!(w.decoy.exists());
    // Already missing counts as cleaned.
    let again = CleanupCoordinator::new(&w.journal, &w.store).remove_profile(profile.path());
    assert_eq!(
        (again.outcome, again.already_missing),
        (CleanupOutcome::Cleaned, true)
    );
}

#[test]
fn refuses_a_profile_under_a_live_lease() {
    let w = world();
    let profile = w.store.create(&spec("p", "live")).unwrap();
    let lease = claim_lease(
        &w.journal,
        &profile,
        &LeaseHolder::this_process("live", 1),
        Duration::from_secs(60),
    )
    .unwrap();
    let other = Journal::open(w.journal.path()).unwrap();
    let report = CleanupCoordinator::new(&other, &w.store).remove_profile(profile.path());
    assert_eq!(report.outcome, CleanupOutcome::FailedUnsafe);
    assert!(matches!(
        report.reason,
        Some(CleanupReason::LeaseHeld { .. })
    ));
    lease.release().unwrap();
    let report = CleanupCoordinator::new(&other, &w.store).remove_profile(profile.path());
    assert_eq!(report.outcome, CleanupOutcome::Cleaned);
}

#[test]
fn two_concurrent_callers_never_both_delete() {
    let w = world();
    for round in 0..50 {
        let name = format!("p{round}");
        let profile = w.store.create(&spec(&name, "live")).unwrap();
        for i in 0..20 {
            std::fs::write(profile.path().join(format!("f{i}")), "x").unwrap();
        }
        let barrier = Barrier::new(2);
        let reports: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        // Each caller has its own connection, as separate workers would.
                        let journal = Journal::open(w.journal.path()).unwrap();
                        barrier.wait();
                        CleanupCoordinator::new(&journal, &w.store).remove_profile(profile.path())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let deleted = reports
            .iter()
            .filter(|r| r.outcome == CleanupOutcome::Cleaned && !r.already_missing)
            .count();
        assert_eq!(deleted, 1, "round {round}: {reports:?}");
        for r in &reports {
            let ok = (r.outcome == CleanupOutcome::Cleaned)
                || matches!(r.reason, Some(CleanupReason::ClaimHeldByOther { .. }));
            assert!(ok, "{r:?}");
        }
        assert!(!profile.path().exists());
    }
}

#[test]
fn sweep_removes_only_owned_unleased_profiles_of_dead_runs() {
    let w = world();
    // A run whose owner is dead: created by a child process that has exited.
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "cleanup_child_role",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BROWSER_FAULT_TEST_CLEANUP_RUN", w.journal.path())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(w.journal.run("dead").unwrap().unwrap().owner_dead());
    let orphan = w.store.create(&spec("orphan", "dead")).unwrap();
    let leased = w.store.create(&spec("leased", "dead")).unwrap();
    let lease = claim_lease(
        &w.journal,
        &leased,
        &LeaseHolder::this_process("live", 1),
        Duration::from_secs(60),
    )
    .unwrap();
    let alive = w.store.create(&spec("alive", "live")).unwrap();
    let unknown = w.store.create(&spec("unknown", "never-recorded")).unwrap();
    let foreign = w.store.root().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::os::unix::fs::symlink(&w.outside, w.store.root().join("link")).unwrap();

    let sweep = CleanupCoordinator::new(&w.journal, &w.store).sweep_orphans();
    let removed: Vec<_> = sweep.removed.iter().map(|r| r.path.clone()).collect();
    assert_eq!(removed, [orphan.path().to_owned()]);
    assert!(!orphan.path().exists());
    let kept = |p: &Path| {
        sweep
            .kept
            .iter()
            .find(|k| k.path == p)
            .map(|k| k.reason.clone())
    };
    assert_eq!(kept(leased.path()), Some(KeepReason::Leased));
    assert_eq!(
        kept(alive.path()),
        Some(KeepReason::RunAlive {
            run_id: "live".into()
        })
    );
    assert_eq!(
        kept(unknown.path()),
        Some(KeepReason::UnknownRun {
            run_id: "never-recorded".into()
        })
    );
    assert_eq!(kept(&foreign), Some(KeepReason::NotOwned));
    assert_eq!(
        kept(&w.store.root().join("link")),
        Some(KeepReason::NotAProfile)
    );
    for p in [leased.path(), alive.path(), unknown.path(), &foreign] {
        assert!(p.exists());
    }
    assert!(w.decoy.exists());
    drop(lease);
}

/// The child role of the sweep test: creates run `dead` and exits.
#[test]
fn cleanup_child_role() {
    let Ok(path) = std::env::var("BROWSER_FAULT_TEST_CLEANUP_RUN") else {
        return; // Only meaningful when re-executed by the sweep test.
    };
    Journal::open(path.as_ref())
        .unwrap()
        .create_run(&NewRun::new("dead", "s", "t"))
        .unwrap();
}
