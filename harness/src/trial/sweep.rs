//! The orphan sweep at the start of a run: trial roots left by earlier runs whose test
//! process died (a SIGKILLed `cargo test`, a power cut) are cleaned, conservatively.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::browser::process;
use crate::cleanup::CleanupCoordinator;
use crate::journal::Journal;
use crate::profile::ProfileStore;

/// What the sweep did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct SweepSummary {
    /// Trial roots removed whole: every profile in them was an owned, unleased profile of a
    /// dead run, and went first.
    pub removed_roots: usize,
    /// Profiles removed.
    pub removed_profiles: usize,
    /// What was kept, and why (a live run, a journal that is not ours, a leased profile…).
    pub kept: Vec<(PathBuf, String)>,
}

/// Sweeps every trial root under `base`. Keeps anything it cannot prove dead and ours.
pub fn sweep_stale_roots(base: &Path) -> SweepSummary {
    let mut summary = SweepSummary::default();
    let Ok(entries) = std::fs::read_dir(base) else {
        return summary;
    };
    for entry in entries.flatten() {
        let root = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(REMOVING_PREFIX) {
            // Retired by its owner after its proof, and cut short: finish the removal.
            if std::fs::remove_dir_all(&root).is_ok() {
                summary.removed_roots += 1;
            }
        } else if let Some(rest) = name.strip_prefix(MAKING_PREFIX) {
            if making_owner_alive(&root, rest) == Some(false) {
                // Made by a process that died before the root was in place: it holds at
                // most the owner marker.
                if std::fs::remove_dir_all(&root).is_ok() {
                    summary.removed_roots += 1;
                }
            }
        } else {
            sweep_root(&root, &mut summary);
        }
    }
    summary
}

/// A trial root being made: `.making-<pid>-<start ticks>-<name>`, renamed to `<name>` once
/// its owner marker is in it, so a root under its own name always has a whole marker.
const MAKING_PREFIX: &str = ".making-";

/// A trial root being removed: renamed to `.removing-<name>` once its owner has proven what
/// it had to (every profile cleaned), then removed; a removal cut short (a SIGKILL) leaves
/// it under that name, and the next sweep finishes it.
const REMOVING_PREFIX: &str = ".removing-";

/// Makes the trial root `root` with this process's owner marker in it, in one rename: a
/// process killed while making it leaves a `.making-` folder the sweep can judge by its
/// name, never a root without its marker.
pub(crate) fn make_root(root: &Path) -> std::io::Result<()> {
    let (Some(base), Some(name)) = (root.parent(), root.file_name()) else {
        return Err(std::io::Error::other(format!(
            "{} is not a folder inside a trial root base",
            root.display()
        )));
    };
    std::fs::create_dir_all(base)?;
    let pid = std::process::id();
    let ticks = crate::liveness::process_start_ticks(pid)
        .map_or_else(|| "unknown".to_owned(), |t| t.to_string());
    let staging = base.join(format!(
        "{MAKING_PREFIX}{pid}-{ticks}-{}",
        name.to_string_lossy()
    ));
    std::fs::create_dir(&staging)?;
    let made = write_root_owner(&staging).and_then(|()| rename_noreplace(&staging, root));
    if made.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    made
}

/// Removes the trial root `root` (its profiles already removed with proof): renamed to
/// `.removing-<name>` first, so a removal cut short is finished by the next sweep rather than
/// leaving a root that no longer proves whose it is. A root already gone is removed.
pub(crate) fn remove_root(root: &Path) -> std::io::Result<()> {
    let target = match (root.parent(), root.file_name()) {
        (Some(base), Some(name)) => {
            let retired = base.join(format!("{REMOVING_PREFIX}{}", name.to_string_lossy()));
            match rename_noreplace(root, &retired) {
                Ok(()) => retired,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                // Another retired folder of that name: remove this one in place.
                Err(_) => root.to_owned(),
            }
        }
        _ => root.to_owned(),
    };
    match std::fs::remove_dir_all(&target) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// `rename(2)` that never replaces what is at `to` (an empty folder would be, silently).
/// Where the file system cannot refuse atomically (`EINVAL`), a check before the rename.
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    match nix::fcntl::renameat2(
        nix::fcntl::AT_FDCWD,
        from,
        nix::fcntl::AT_FDCWD,
        to,
        nix::fcntl::RenameFlags::RENAME_NOREPLACE,
    ) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EINVAL) if to.symlink_metadata().is_ok() => Err(
            std::io::Error::new(std::io::ErrorKind::AlreadyExists, to.display().to_string()),
        ),
        Err(nix::errno::Errno::EINVAL) => std::fs::rename(from, to),
        Err(e) => Err(e.into()),
    }
}

/// Whether the maker of the `.making-` folder `dir` (named `<pid>-<ticks>-<name>` after the
/// prefix) is alive: by its owner marker where it got that far, else by its name.
fn making_owner_alive(dir: &Path, rest: &str) -> Option<bool> {
    if let Some(alive) = root_owner_alive(dir) {
        return Some(alive);
    }
    let mut parts = rest.splitn(3, '-');
    let pid: u32 = parts.next()?.parse().ok()?;
    let ticks = parts.next()?.parse().ok();
    Some(crate::liveness::owner_alive(pid, ticks))
}

/// The file in a trial root that names the process running the trial.
const ROOT_OWNER_FILE: &str = "owner.json";

/// Marks `root` as this process's, before anything else goes in: the sweep of another test
/// process (nextest runs one per trial) then leaves it alone without opening its journal.
pub(crate) fn write_root_owner(root: &Path) -> std::io::Result<()> {
    let pid = std::process::id();
    let owner = serde_json::json!({
        "pid": pid,
        "start_ticks": crate::liveness::process_start_ticks(pid),
        "host": crate::liveness::host_name(),
    });
    std::fs::write(root.join(ROOT_OWNER_FILE), owner.to_string())
}

/// Whether the root's owner process is alive (or may be: another host, unreadable file).
fn root_owner_alive(root: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(root.join(ROOT_OWNER_FILE)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    if v["host"].as_str() != Some(crate::liveness::host_name().as_str()) {
        return Some(true);
    }
    let pid = u32::try_from(v["pid"].as_u64()?).ok()?;
    Some(crate::liveness::owner_alive(pid, v["start_ticks"].as_u64()))
}

fn sweep_root(root: &Path, summary: &mut SweepSummary) {
    if root_owner_alive(root) == Some(true) {
        return; // a live trial: never even open its journal
    }
    let journal_path = root.join("journal.sqlite3");
    if !journal_path.exists() {
        // A root being set up right now has no journal yet; a foreign folder has none ever.
        // A root whose owner is proven dead and that holds nothing but the owner marker is
        // what a run that died (or failed) before its journal leaves: nothing else to prove.
        if root_owner_alive(root) == Some(false) && only_owner_marker(root) {
            if remove_root(root).is_ok() {
                summary.removed_roots += 1;
            }
            return;
        }
        summary.kept.push((root.to_owned(), "no journal".into()));
        return;
    }
    let journal = match Journal::open(&journal_path) {
        Ok(j) => j,
        Err(e) => {
            summary
                .kept
                .push((root.to_owned(), format!("journal refused: {}", e.kind())));
            return;
        }
    };
    let Ok(store) = ProfileStore::open(root.join("profiles")) else {
        summary
            .kept
            .push((root.to_owned(), "no profile store".into()));
        return;
    };
    let run_ids = run_ids(&store);
    if run_ids.is_empty() {
        // A root has no owned profile before its first one is made and after its last one
        // was removed with proof (a SIGKILL between that removal and the root's own). Its
        // owner marker says whether its maker lives (another test process: nextest runs one
        // per trial); one that died left only what the harness makes in a root, and the
        // processes it started that may have outlived it are killed before anything goes.
        if root_owner_alive(root) == Some(false) && holds_only_trial_leftovers(root) {
            drop(journal);
            remove_contained_root(root, summary);
            return;
        }
        summary
            .kept
            .push((root.to_owned(), "no owned profile".into()));
        return;
    }
    let runs_dead = run_ids.iter().all(|id| {
        journal
            .run(id)
            .ok()
            .flatten()
            .is_some_and(|r| r.owner_dead())
    });
    if !runs_dead {
        return; // a live run: not ours to touch, and not worth reporting
    }
    // The browsers of a dead run may have outlived it: they hold the profiles.
    for profile in store.profile_dirs() {
        process::kill_profile_processes(&profile);
    }
    let report = CleanupCoordinator::new(&journal, &store).sweep_orphans();
    summary.removed_profiles += report.removed.len();
    for kept in report.kept {
        summary.kept.push((kept.path, format!("{:?}", kept.reason)));
    }
    if store.profile_dirs().is_empty() {
        drop(journal);
        remove_contained_root(root, summary);
    }
}

/// Removes the dead run's `root` once no process names it any more (its leftovers killed
/// and seen dead); keeps it, saying so, while one lives on.
fn remove_contained_root(root: &Path, summary: &mut SweepSummary) {
    let alive = kill_processes_naming(root);
    if alive > 0 {
        summary.kept.push((
            root.to_owned(),
            format!("{alive} process(es) of its dead run would not die"),
        ));
    } else if remove_root(root).is_ok() {
        summary.removed_roots += 1;
    }
}

/// Whether `root` holds its owner marker and nothing else (no symlink, no folder).
fn only_owner_marker(root: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(root) else {
        return false;
    };
    let mut seen = false;
    for entry in entries {
        let Ok(entry) = entry else { return false };
        let is_marker =
            entry.file_name() == ROOT_OWNER_FILE && entry.file_type().is_ok_and(|t| t.is_file());
        if !is_marker {
            return false;
        }
        seen = true;
    }
    seen
}

/// Whether `root` holds only what the harness makes in a trial root, with no owned profile
/// in its store: its owner marker, its journals (with SQLite's side files), the workers'
/// sockets, its `network` marks, its `scratch` and `tmp-*` folders (the workers' `TMPDIR`)
/// and a profile store whose folders are empty or hold a marker still being written. No
/// symlink at the top, nothing else: a root holding more is kept.
fn holds_only_trial_leftovers(root: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(root) else {
        return false;
    };
    entries.into_iter().all(|entry| {
        let Ok(entry) = entry else { return false };
        let Ok(kind) = entry.file_type() else {
            return false;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if kind.is_file() {
            name == ROOT_OWNER_FILE || is_journal_file(&name)
        } else if kind.is_socket() {
            is_worker_socket(&name)
        } else if kind.is_dir() && name == "profiles" {
            profiles_hold_no_profile(&entry.path())
        } else if kind.is_dir() {
            name == "network" || name == "scratch" || name.starts_with("tmp-")
        } else {
            false
        }
    })
}

/// A journal of the trial (`journal.sqlite3`, a fault's `account-switch.sqlite3`) or one of
/// SQLite's side files of it.
fn is_journal_file(name: &str) -> bool {
    ["journal.sqlite3", "account-switch.sqlite3"]
        .iter()
        .any(|j| {
            name.strip_prefix(j)
                .is_some_and(|rest| ["", "-wal", "-shm", "-journal"].contains(&rest))
        })
}

/// A worker's control socket: `w<incarnation>.sock`.
fn is_worker_socket(name: &str) -> bool {
    name.strip_prefix('w')
        .and_then(|n| n.strip_suffix(".sock"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// SIGKILLs every live process whose environment or command line names `root` (a browser or
/// chromedriver of a dead run, with its `TMPDIR` there) and waits for them to die; returns
/// how many are still alive after the wait.
fn kill_processes_naming(root: &Path) -> usize {
    let needles = process::path_needles(root);
    let me = std::process::id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(1500);
    loop {
        let alive = process::processes_naming(&needles, &[], me);
        if alive.is_empty() || std::time::Instant::now() >= deadline {
            return alive.len();
        }
        for (pid, _) in alive {
            process::kill_pid(pid);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Whether a profile store holds nothing but folders without an owner marker, each empty or
/// holding the marker's temporary file ([`ProfileStore::create`] cut short), and the store's
/// own hidden folders: `.backups` (a removal cut short between a profile and its backups)
/// and `.restore-*` (a restore cut short).
fn profiles_hold_no_profile(store: &Path) -> bool {
    let tmp_prefix = format!("{}.tmp-", crate::profile::OWNER_MARKER_FILE);
    let Ok(entries) = std::fs::read_dir(store) else {
        return false;
    };
    entries.into_iter().all(|entry| {
        let Ok(entry) = entry else { return false };
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            return false;
        }
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name == crate::profile::BACKUPS_DIR || name.starts_with(".restore-") {
            return true;
        }
        let Ok(inner) = std::fs::read_dir(entry.path()) else {
            return false;
        };
        inner.into_iter().all(|file| {
            file.is_ok_and(|f| {
                f.file_type().is_ok_and(|t| t.is_file())
                    && f.file_name().to_string_lossy().starts_with(&tmp_prefix)
            })
        })
    })
}

/// The run ids named by the profiles' owner markers (the runs that matter for removal).
fn run_ids(store: &ProfileStore) -> Vec<String> {
    store
        .profile_dirs()
        .iter()
        .filter_map(|p| store.open_profile(p).ok())
        .filter_map(|p| store.marker(&p).ok())
        .map(|m| m.run_id)
        .collect()
}
