//! The orphan sweep at the start of a run: trial roots left by earlier runs whose test
//! process died (a SIGKILLed `cargo test`, a power cut) are cleaned, conservatively.

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
        sweep_root(&root, &mut summary);
    }
    summary
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
            if std::fs::remove_dir_all(root).is_ok() {
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
        // A root being set up right now (another test process: nextest runs one per trial)
        // has its journal before its first owned profile; no owner, no proof it is dead.
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
        if std::fs::remove_dir_all(root).is_ok() {
            summary.removed_roots += 1;
        }
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
