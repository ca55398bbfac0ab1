//! Profiles on a real file system: mode 0700, owner marker, names, backup and restore, policy.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use browser_fault::profile::{
    LOCK_FILE, OWNER_MARKER_FILE, PolicyFinding, ProfileErrorKind, ProfilePolicy, ProfileSpec,
    ProfileStore,
};

fn spec(name: &str) -> ProfileSpec {
    ProfileSpec::new(
        name,
        "browser-fault",
        "send_message::after_click",
        "run-7",
        "131.0.6778",
    )
}

#[test]
fn creates_private_profiles_with_an_owner_marker() {
    let dir = tempfile::tempdir().unwrap();
    let store = ProfileStore::open(dir.path().join("root")).unwrap();
    assert_eq!(
        std::fs::metadata(store.root())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let profile = store.create(&spec("w1")).unwrap();
    assert_eq!(
        std::fs::metadata(profile.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let raw: serde_json::Value =
        serde_json::from_slice(&std::fs::read(profile.path().join(OWNER_MARKER_FILE)).unwrap())
            .unwrap();
    assert_eq!(raw["owner"], "browser-fault");
    assert_eq!(raw["purpose"], "send_message::after_click");
    assert_eq!(raw["run_id"], "run-7");
    assert_eq!(raw["generation"], 1);
    assert_eq!(raw["browser_version"], "131.0.6778");
    assert!(raw["created_unix_ms"].as_u64().unwrap() > 0);
    let err = store.create(&spec("w1")).unwrap_err();
    assert_eq!(err.kind(), &ProfileErrorKind::AlreadyExists);
    assert_eq!(store.open_profile(profile.path()).unwrap(), profile);
    assert_eq!(store.bump_generation(&profile).unwrap(), 2);
}

#[test]
fn rejects_unsafe_names_and_foreign_paths() {
    let dir = tempfile::tempdir().unwrap();
    let store = ProfileStore::open(dir.path().join("root")).unwrap();
    for bad in ["", "..", "a/b", "../escape", ".backups"] {
        let err = store.create(&spec(bad)).unwrap_err();
        assert!(
            matches!(err.kind(), ProfileErrorKind::InvalidName { .. }),
            "{bad:?}"
        );
    }
    assert!(!dir.path().join("escape").exists());
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    assert_eq!(
        store.open_profile(&outside).unwrap_err().kind(),
        &ProfileErrorKind::OutsideRoot
    );
    std::fs::create_dir(store.root().join("unmarked")).unwrap();
    assert!(matches!(
        store
            .open_profile(&store.root().join("unmarked"))
            .unwrap_err()
            .kind(),
        ProfileErrorKind::Marker { .. }
    ));
}

#[test]
fn backs_up_without_singletons_or_the_lock_and_restore_rolls_the_generation_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = ProfileStore::open(dir.path().join("root")).unwrap();
    let profile = store.create(&spec("w1")).unwrap();
    let p = profile.path();
    std::fs::create_dir(p.join("Default")).unwrap();
    std::fs::write(p.join("Default/Cookies"), "old cookies").unwrap();
    std::fs::write(p.join(LOCK_FILE), "").unwrap();
    std::os::unix::fs::symlink("host-123", p.join("SingletonLock")).unwrap();
    std::os::unix::fs::symlink("/tmp/nowhere/socket", p.join("SingletonSocket")).unwrap();
    std::os::unix::fs::symlink("1234", p.join("SingletonCookie")).unwrap();
    let backup = store.backup(&profile, "before").unwrap();
    assert_eq!(backup.generation, 1);
    assert!(backup.path.starts_with(store.root()));
    assert_eq!(
        std::fs::read(backup.path.join("Default/Cookies")).unwrap(),
        b"old cookies"
    );
    for skipped in [
        "SingletonLock",
        "SingletonSocket",
        "SingletonCookie",
        LOCK_FILE,
    ] {
        assert!(
            std::fs::symlink_metadata(backup.path.join(skipped)).is_err(),
            "{skipped}"
        );
    }
    std::fs::write(p.join("Default/Cookies"), "new cookies").unwrap();
    std::fs::write(p.join("Default/Extra"), "x").unwrap();
    assert_eq!(store.bump_generation(&profile).unwrap(), 2);
    store.restore(&profile, &backup).unwrap();
    assert_eq!(
        std::fs::read(p.join("Default/Cookies")).unwrap(),
        b"old cookies"
    );
    assert!(!p.join("Default/Extra").exists());
    assert!(p.join(LOCK_FILE).exists(), "the lease lock stays");
    assert_eq!(store.marker(&profile).unwrap().generation, 1);
    let policy = ProfilePolicy {
        expected_generation: Some(2),
        ..ProfilePolicy::default()
    };
    assert_eq!(
        store.check_policy(&profile, &policy).unwrap(),
        [PolicyFinding::GenerationRolledBack {
            expected: 2,
            found: 1
        }]
    );
}

#[test]
fn reports_each_policy_finding() {
    let dir = tempfile::tempdir().unwrap();
    let store = ProfileStore::open(dir.path().join("root")).unwrap();
    let profile = store.create(&spec("w1")).unwrap();
    store.bump_generation(&profile).unwrap();
    store.bump_generation(&profile).unwrap();
    assert!(
        store
            .check_policy(&profile, &ProfilePolicy::default())
            .unwrap()
            .is_empty()
    );
    let policy = ProfilePolicy {
        max_age: None,
        max_generation: Some(2),
        expected_browser_version: Some("132.0.1".into()),
        expected_generation: Some(1),
    };
    let findings = store.check_policy(&profile, &policy).unwrap();
    assert!(findings.contains(&PolicyFinding::GenerationTooHigh {
        generation: 3,
        max_generation: 2
    }));
    assert!(findings.contains(&PolicyFinding::BrowserVersionChanged {
        recorded: "131.0.6778".into(),
        current: "132.0.1".into()
    }));
    assert!(findings.contains(&PolicyFinding::GenerationAdvanced {
        expected: 1,
        found: 3
    }));
    assert_eq!(findings.len(), 3);
    let old = ProfilePolicy {
        max_age: Some(Duration::ZERO),
        ..ProfilePolicy::default()
    };
    // Make the profile measurably old by rewriting its creation time.
    let marker_path = profile.path().join(OWNER_MARKER_FILE);
    let mut raw: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&marker_path).unwrap()).unwrap();
    raw["created_unix_ms"] = 1_000.into();
    std::fs::write(&marker_path, serde_json::to_vec(&raw).unwrap()).unwrap();
    assert!(matches!(
        store.check_policy(&profile, &old).unwrap().as_slice(),
        [PolicyFinding::TooOld { .. }]
    ));
}
