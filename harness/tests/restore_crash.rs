//! A restore SIGKILLed at any point leaves the profile whole: the old one or the restored
//! one, never a mix, and nothing outside the store touched. Each round kills a child
//! process restoring a profile after a different delay.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use browser_fault::profile::{LOCK_FILE, ProfileSpec, ProfileStore};

const CHILD_ENV: &str = "BF_RESTORE_CHILD";
const FILES: usize = 40;

#[test]
fn restore_child_role() {
    // Not a test on its own: the child that restores (and is killed doing it).
    if let Ok(root) = std::env::var(CHILD_ENV) {
        let store = ProfileStore::open(&root).unwrap();
        let profile = store.open_profile(&Path::new(&root).join("w1")).unwrap();
        let backup = store.open_backup(&profile, "older").unwrap();
        // Ready; the restore begins on the parent's word, so its kill falls inside it.
        println!("ready");
        let mut go = String::new();
        std::io::stdin().read_line(&mut go).unwrap();
        store.restore(&profile, &backup).unwrap();
    }
}

/// Fills the profile with `FILES` files saying `which`, in a few folders.
fn fill(dir: &Path, which: &str) {
    for i in 0..FILES {
        let sub = dir.join(format!("Default/d{}", i % 4));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i}")), which.repeat(512)).unwrap();
    }
}

/// What the profile holds: "old", "new", or a description of a mix.
fn contents(dir: &Path) -> String {
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..FILES {
        let file = dir.join(format!("Default/d{}/f{i}", i % 4));
        match std::fs::read_to_string(&file) {
            Ok(text) => seen.insert(text.chars().take(3).collect::<String>()),
            Err(_) => seen.insert(format!("missing f{i}")),
        };
    }
    if seen.len() == 1 {
        seen.into_iter().next().unwrap_or_default()
    } else {
        format!("mixed: {seen:?}")
    }
}

#[test]
fn a_restore_killed_at_any_point_leaves_the_old_profile_or_the_restored_one() {
    let base = tempfile::tempdir().unwrap();
    let outside = base.path().join("outside.txt");
    std::fs::write(&outside, b"untouched").unwrap();
    let (mut restored, mut untouched) = (0, 0);
    let mut full = Duration::ZERO;
    let started = Instant::now();
    for round in 0..100u64 {
        let root = base.path().join(format!("root{round}"));
        let store = ProfileStore::open(&root).unwrap();
        let profile = store
            .create(&ProfileSpec::new("w1", "browser-fault", "t", "run", "156"))
            .unwrap();
        std::fs::write(profile.path().join(LOCK_FILE), b"").unwrap();
        let lock_inode = std::os::unix::fs::MetadataExt::ino(
            &std::fs::metadata(profile.path().join(LOCK_FILE)).unwrap(),
        );
        fill(profile.path(), "new");
        // The backup holds the "old" contents: made from a twin, then labelled for w1.
        let twin = store
            .create(&ProfileSpec::new(
                "w1-twin",
                "browser-fault",
                "t",
                "run",
                "156",
            ))
            .unwrap();
        fill(twin.path(), "old");
        let taken = store.backup(&twin, "older").unwrap();
        let dest = store.backups_of("w1");
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::rename(&taken.path, dest.join("older")).unwrap();
        std::fs::remove_dir_all(twin.path()).unwrap();

        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "restore_child_role",
                "--nocapture",
                "--test-threads=1",
                "-q",
            ])
            .env(CHILD_ENV, &root)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("ready") {
            line.clear();
            assert!(
                std::io::BufRead::read_line(&mut stdout, &mut line).unwrap() > 0,
                "round {round}: the child ended before it was ready"
            );
        }
        let mut stdin = child.stdin.take().unwrap();
        match round % 20 {
            // Never killed: the restore completes, and its length sets the kills' spread.
            0 => {
                let went = Instant::now();
                std::io::Write::write_all(&mut stdin, b"go\n").unwrap();
                let _ = child.wait();
                full = went.elapsed();
            }
            // Killed before the word: the restore never began.
            1 => {}
            // Killed a little later each round, across the whole restore.
            step => {
                std::io::Write::write_all(&mut stdin, b"go\n").unwrap();
                std::thread::sleep(full * u32::try_from(step).unwrap_or(0) / 20);
            }
        }
        let _ = child.kill();
        let _ = child.wait();

        // "new": the profile as it was (killed before the exchange); "old": the backup's
        // contents (the restore happened).
        match contents(profile.path()).as_str() {
            "old" => restored += 1,
            "new" => untouched += 1,
            mixed => panic!("round {round}: the profile is {mixed}"),
        }
        let lock = std::fs::metadata(profile.path().join(LOCK_FILE)).unwrap();
        assert_eq!(
            std::os::unix::fs::MetadataExt::ino(&lock),
            lock_inode,
            "round {round}: the lease's lock file is the same file"
        );
        assert_eq!(
            store.profile_dirs(),
            [profile.path().to_owned()],
            "round {round}"
        );
    }
    assert_eq!(std::fs::read(&outside).unwrap(), b"untouched");
    eprintln!(
        "100 rounds in {:?}: {restored} restored, {untouched} untouched",
        started.elapsed()
    );
    assert!(
        restored > 0 && untouched > 0,
        "the kills fell before and after the exchange: {restored} restored, {untouched} untouched"
    );
}
