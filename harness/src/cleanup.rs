//! The cleanup coordinator: the one way profiles are removed.
//!
//! A removal is claimed by compare-and-set in the journal (`pending → cleaning → cleaned |
//! failed_unsafe | failed_operational`), so two callers never both delete; a claim left in
//! `cleaning` by a dead caller is taken over. Containment is proven before anything is
//! deleted: the path is under the canonical profile root and is not the root, neither it nor
//! any ancestor below the root is a symlink, it carries our owner marker, and no live lease
//! holds it. Deletion never follows symlinks (links are removed, not their targets), and the
//! owner marker goes last, so a removal interrupted by a crash is resumed, not refused.
//! A path already missing counts as cleaned.

use std::fs;
use std::path::{Component, Path, PathBuf};

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::journal::{Journal, JournalError, now_unix_ms};
use crate::lease::{self, lease_row};
use crate::liveness;
use crate::profile::{BACKUPS_DIR, OWNER_MARKER_FILE, ProfileStore, read_marker};

/// Removes profiles of one store, coordinated through one journal.
#[derive(Debug, Clone, Copy)]
pub struct CleanupCoordinator<'a> {
    journal: &'a Journal,
    store: &'a ProfileStore,
}

/// How a removal ended (the journal's claim state and the evidence's `cleanup outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CleanupOutcome {
    /// The profile is gone (or was already).
    Cleaned,
    /// Removing it could not be proven safe; nothing was deleted.
    FailedUnsafe,
    /// It was safe, but the removal failed or another caller holds the claim.
    FailedOperational,
}

impl CleanupOutcome {
    /// The claim state stored in the journal.
    pub const fn as_str(self) -> &'static str {
        match self {
            CleanupOutcome::Cleaned => "cleaned",
            CleanupOutcome::FailedUnsafe => "failed_unsafe",
            CleanupOutcome::FailedOperational => "failed_operational",
        }
    }
}

/// Why a removal did not simply clean.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum CleanupReason {
    /// The path is not under the profile root.
    OutsideRoot,
    /// The path is the profile root itself.
    IsRoot,
    /// The path has a `..` component.
    ParentComponent,
    /// The path, or an ancestor below the root, is a symlink.
    SymlinkEscape {
        /// The symlink found.
        at: PathBuf,
    },
    /// The path is not a directory.
    NotADirectory,
    /// The directory has no owner marker of ours.
    MissingMarker,
    /// A live lease holds the profile.
    LeaseHeld {
        /// The holder's pid, when the journal names one.
        pid: Option<u32>,
    },
    /// Another caller holds the cleanup claim.
    ClaimHeldByOther {
        /// That caller's pid.
        pid: u32,
    },
    /// The journal failed.
    Journal {
        /// The error, rendered.
        error: String,
    },
    /// A file-system operation failed.
    Io {
        /// What was being done.
        operation: &'static str,
        /// The error kind.
        error: String,
    },
}

/// The result of [`CleanupCoordinator::remove_profile`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CleanupReport {
    /// The profile path (canonical form under the root when it could be located).
    pub path: PathBuf,
    /// How it ended.
    pub outcome: CleanupOutcome,
    /// Why, unless it simply cleaned.
    pub reason: Option<CleanupReason>,
    /// Whether the path was already missing (crash-idempotent cleanup).
    pub already_missing: bool,
}

/// Why the orphan sweep kept an entry of the profile root.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum KeepReason {
    /// A symlink or a file, not a profile directory.
    NotAProfile,
    /// No owner marker of ours.
    NotOwned,
    /// The marker names a run this journal does not know.
    UnknownRun {
        /// The run id.
        run_id: String,
    },
    /// The run's owner process is alive (or on another host).
    RunAlive {
        /// The run id.
        run_id: String,
    },
    /// A live lease holds the profile.
    Leased,
    /// Removal was attempted and did not clean.
    RemovalFailed(CleanupReason),
}

/// An entry the sweep kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct KeptProfile {
    /// The entry's path.
    pub path: PathBuf,
    /// Why it was kept.
    pub reason: KeepReason,
}

/// The result of [`CleanupCoordinator::sweep_orphans`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SweepReport {
    /// Profiles removed.
    pub removed: Vec<CleanupReport>,
    /// Entries kept, with reasons.
    pub kept: Vec<KeptProfile>,
    /// Listing the root failed, if it did.
    pub error: Option<CleanupReason>,
}

enum Claim {
    Ours(String),
    HeldBy(u32),
}

impl<'a> CleanupCoordinator<'a> {
    /// A coordinator over `store`, claiming through `journal`.
    pub fn new(journal: &'a Journal, store: &'a ProfileStore) -> CleanupCoordinator<'a> {
        CleanupCoordinator { journal, store }
    }

    /// Removes the profile at `path`, proving containment first. See the module docs.
    pub fn remove_profile(&self, path: &Path) -> CleanupReport {
        let key = match self.locate(path) {
            Ok(key) => key,
            Err(reason) => return report(path, CleanupOutcome::FailedUnsafe, Some(reason)),
        };
        let token = match self.claim(&key) {
            Ok(Claim::Ours(token)) => token,
            Ok(Claim::HeldBy(pid)) => {
                return report(
                    &key,
                    CleanupOutcome::FailedOperational,
                    Some(CleanupReason::ClaimHeldByOther { pid }),
                );
            }
            Err(e) => {
                return report(
                    &key,
                    CleanupOutcome::FailedOperational,
                    Some(journal_reason(&e)),
                );
            }
        };
        let mut result = self.remove_claimed(&key);
        if let Err(e) = self.finish(&key, &token, &result) {
            result = report(
                &key,
                CleanupOutcome::FailedOperational,
                Some(journal_reason(&e)),
            );
        }
        result
    }

    /// Removes owned, unleased profiles of dead runs; keeps and reports everything else.
    pub fn sweep_orphans(&self) -> SweepReport {
        let mut sweep = SweepReport::default();
        let entries = match fs::read_dir(self.store.root()) {
            Ok(entries) => entries,
            Err(e) => {
                sweep.error = Some(io_reason("list profile root", &e));
                return sweep;
            }
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
            .map(|e| e.path())
            .collect();
        paths.sort();
        for path in paths {
            match self.orphan_status(&path) {
                Ok(()) => {
                    let removed = self.remove_profile(&path);
                    if removed.outcome == CleanupOutcome::Cleaned {
                        sweep.removed.push(removed);
                    } else {
                        let reason = removed.reason.unwrap_or(CleanupReason::MissingMarker);
                        sweep.kept.push(KeptProfile {
                            path,
                            reason: KeepReason::RemovalFailed(reason),
                        });
                    }
                }
                Err(reason) => sweep.kept.push(KeptProfile { path, reason }),
            }
        }
        sweep
    }

    /// `Ok` when the entry is an owned, unleased profile of a dead run.
    fn orphan_status(&self, path: &Path) -> Result<(), KeepReason> {
        let meta = fs::symlink_metadata(path).map_err(|_| KeepReason::NotAProfile)?;
        if !meta.is_dir() {
            return Err(KeepReason::NotAProfile);
        }
        let marker = read_marker(path).map_err(|_| KeepReason::NotOwned)?;
        let journal_err = |e: JournalError| KeepReason::RemovalFailed(journal_reason(&e));
        let run = self
            .journal
            .run(&marker.run_id)
            .map_err(journal_err)?
            .ok_or_else(|| KeepReason::UnknownRun {
                run_id: marker.run_id.clone(),
            })?;
        if !run.owner_dead() {
            return Err(KeepReason::RunAlive { run_id: run.run_id });
        }
        if lease_row(self.journal, path)
            .map_err(journal_err)?
            .is_some_and(|r| r.is_live())
        {
            return Err(KeepReason::Leased);
        }
        Ok(())
    }

    /// The canonical spelling of `path` under the root, refusing `..`, the root and outsiders.
    fn locate(&self, path: &Path) -> Result<PathBuf, CleanupReason> {
        let absolute = if path.is_absolute() {
            path.to_owned()
        } else {
            std::env::current_dir()
                .map_err(|e| io_reason("resolve relative path", &e))?
                .join(path)
        };
        let mut normal = PathBuf::new();
        for component in absolute.components() {
            match component {
                Component::ParentDir => return Err(CleanupReason::ParentComponent),
                Component::CurDir => {}
                other => normal.push(other),
            }
        }
        let root = self.store.root();
        let rel = match normal.strip_prefix(root) {
            Ok(rel) => rel.to_owned(),
            // The caller may spell the root through a symlinked ancestor (`/tmp` → `/private/tmp`).
            Err(_) => {
                let parent = normal.parent().ok_or(CleanupReason::OutsideRoot)?;
                let name = normal.file_name().ok_or(CleanupReason::OutsideRoot)?;
                let parent = fs::canonicalize(parent).map_err(|_| CleanupReason::OutsideRoot)?;
                parent
                    .join(name)
                    .strip_prefix(root)
                    .map_err(|_| CleanupReason::OutsideRoot)?
                    .to_owned()
            }
        };
        if rel.as_os_str().is_empty() {
            return Err(CleanupReason::IsRoot);
        }
        if rel.starts_with(BACKUPS_DIR) {
            return Err(CleanupReason::MissingMarker);
        }
        Ok(root.join(rel))
    }

    fn claim(&self, key: &Path) -> Result<Claim, JournalError> {
        let key_text = key.to_string_lossy().into_owned();
        let pid = std::process::id();
        let ticks = liveness::process_start_ticks(pid);
        let token = format!("{pid}-{:016x}", rand::random::<u64>());
        let journal = self.journal;
        journal.with_conn(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| journal.sql(e))?;
            let now = now_unix_ms();
            tx.execute(
                "INSERT INTO cleanup_claims (profile_path, state, updated_unix_ms)
                 VALUES (?1, 'pending', ?2) ON CONFLICT (profile_path) DO NOTHING",
                params![key_text, now],
            )
            .map_err(|e| journal.sql(e))?;
            let (state, holder_pid, holder_ticks): (String, Option<u32>, Option<u64>) = tx
                .query_row(
                    "SELECT state, claimant_pid, claimant_start_ticks FROM cleanup_claims
                     WHERE profile_path = ?1",
                    [&key_text],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()
                .map_err(|e| journal.sql(e))?
                .unwrap_or_default();
            if state == "cleaning"
                && let Some(holder) = holder_pid
                && liveness::owner_alive(holder, holder_ticks)
            {
                return Ok(Claim::HeldBy(holder));
            }
            tx.execute(
                "UPDATE cleanup_claims SET state = 'cleaning', claimant = ?2, claimant_pid = ?3,
                    claimant_start_ticks = ?4, reason = NULL, updated_unix_ms = ?5
                 WHERE profile_path = ?1 AND state = ?6",
                params![key_text, token, pid, ticks, now, state],
            )
            .map_err(|e| journal.sql(e))?;
            tx.commit().map_err(|e| journal.sql(e))?;
            Ok(Claim::Ours(token))
        })
    }

    fn finish(&self, key: &Path, token: &str, result: &CleanupReport) -> Result<(), JournalError> {
        let reason = result
            .reason
            .as_ref()
            .and_then(|r| serde_json::to_string(r).ok());
        let journal = self.journal;
        journal.with_conn(|conn| {
            conn.execute(
                "UPDATE cleanup_claims SET state = ?3, reason = ?4, updated_unix_ms = ?5
                 WHERE profile_path = ?1 AND claimant = ?2 AND state = 'cleaning'",
                params![
                    key.to_string_lossy(),
                    token,
                    result.outcome.as_str(),
                    reason,
                    now_unix_ms()
                ],
            )
            .map(|_| ())
            .map_err(|e| journal.sql(e))
        })
    }

    /// Proves containment of the claimed `key`, then deletes it and its backups.
    fn remove_claimed(&self, key: &Path) -> CleanupReport {
        let unsafe_ = |reason| report(key, CleanupOutcome::FailedUnsafe, Some(reason));
        let failed = |reason| report(key, CleanupOutcome::FailedOperational, Some(reason));
        let root = self.store.root();
        // No symlink at the path or at any ancestor below the root.
        let mut walk = root.to_owned();
        let rel = key.strip_prefix(root).unwrap_or(key);
        for component in rel.components() {
            walk.push(component);
            match fs::symlink_metadata(&walk) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return unsafe_(CleanupReason::SymlinkEscape { at: walk });
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let mut done = report(key, CleanupOutcome::Cleaned, None);
                    done.already_missing = true;
                    return done;
                }
                Err(e) => return failed(io_reason("inspect profile path", &e)),
            }
        }
        match fs::symlink_metadata(key) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return unsafe_(CleanupReason::NotADirectory),
            Err(e) => return failed(io_reason("inspect profile path", &e)),
        }
        match fs::canonicalize(key) {
            Ok(canonical) if canonical == key => {}
            Ok(canonical) => return unsafe_(CleanupReason::SymlinkEscape { at: canonical }),
            Err(e) => return failed(io_reason("resolve profile path", &e)),
        }
        if read_marker(key).is_err() {
            return unsafe_(CleanupReason::MissingMarker);
        }
        // Hold the OS lock while deleting, so no worker claims the profile midway.
        let _lock = match lease::open_lock_file(key, true).and_then(lease::try_lock) {
            Ok(Some(lock)) => lock,
            Ok(None) => {
                let pid = lease_row(self.journal, key).ok().flatten().map(|r| r.pid);
                return unsafe_(CleanupReason::LeaseHeld { pid });
            }
            Err(e) => return failed(io_reason("lock profile", &e)),
        };
        match lease_row(self.journal, key) {
            Ok(Some(row)) if row.is_live() => {
                return unsafe_(CleanupReason::LeaseHeld { pid: Some(row.pid) });
            }
            Ok(_) => {}
            Err(e) => return failed(journal_reason(&e)),
        }
        // Deleted through directory handles opened from the root, never by path: an ancestor
        // swapped for a symlink after the checks above cannot redirect the deletion.
        if let Err(e) = remove_profile_via_handles(root, rel) {
            return failed(io_reason("remove profile", &e));
        }
        if let Some(name) = key.file_name().and_then(|n| n.to_str()) {
            let backups = self.store.backups_of(name);
            match fs::symlink_metadata(root.join(BACKUPS_DIR)) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return unsafe_(CleanupReason::SymlinkEscape {
                        at: root.join(BACKUPS_DIR),
                    });
                }
                _ => {}
            }
            let removed = match fs::symlink_metadata(&backups) {
                Ok(meta) if meta.is_dir() => fs::remove_dir_all(&backups),
                Ok(_) => fs::remove_file(&backups),
                Err(_) => Ok(()),
            };
            if let Err(e) = removed {
                return failed(io_reason("remove profile backups", &e));
            }
        }
        if let Err(e) = lease::forget_lease(self.journal, key) {
            return failed(journal_reason(&e));
        }
        report(key, CleanupOutcome::Cleaned, None)
    }
}

/// Opens `root`, then each component of `rel` but the last, as directory handles that never
/// follow a symlink, and deletes the profile named by the last component through them.
fn remove_profile_via_handles(root: &Path, rel: &Path) -> std::io::Result<()> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut dir = openat(nix::fcntl::AT_FDCWD, root, flags, Mode::empty())?;
    let mut components: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let name = components
        .pop()
        .ok_or_else(|| std::io::Error::other("an empty profile path"))?;
    for component in components {
        dir = openat(&dir, component, flags, Mode::empty())?;
    }
    remove_profile_at(&dir, name)
}

/// Deletes the profile `name` inside the directory `parent`: everything in it (never
/// following a symlink), then its owner marker, then the folder. An interrupted removal keeps
/// the marker, so the next attempt may resume. Every step is relative to a directory handle.
pub(crate) fn remove_profile_at(
    parent: &impl std::os::fd::AsFd,
    name: &std::ffi::OsStr,
) -> std::io::Result<()> {
    use nix::unistd::{UnlinkatFlags, unlinkat};
    remove_contents_at(parent, name, Some(std::ffi::OsStr::new(OWNER_MARKER_FILE)))?;
    let dir = open_dir_at(parent, name)?;
    match unlinkat(&dir, OWNER_MARKER_FILE, UnlinkatFlags::NoRemoveDir) {
        Err(nix::errno::Errno::ENOENT) | Ok(()) => {}
        Err(e) => return Err(e.into()),
    }
    drop(dir);
    unlinkat(parent, name, UnlinkatFlags::RemoveDir)?;
    Ok(())
}

fn open_dir_at(
    parent: &impl std::os::fd::AsFd,
    name: &std::ffi::OsStr,
) -> std::io::Result<std::os::fd::OwnedFd> {
    use nix::fcntl::{OFlag, openat};
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    Ok(openat(parent, name, flags, nix::sys::stat::Mode::empty())?)
}

/// Deletes everything inside `parent/name` but `keep`, depth first, through handles.
fn remove_contents_at(
    parent: &impl std::os::fd::AsFd,
    name: &std::ffi::OsStr,
    keep: Option<&std::ffi::OsStr>,
) -> std::io::Result<()> {
    use nix::dir::{Dir, Type};
    use nix::unistd::{UnlinkatFlags, unlinkat};
    use std::os::unix::ffi::OsStrExt;
    let fd = open_dir_at(parent, name)?;
    let mut dir = Dir::from_fd(fd)?;
    let mut listed: Vec<(std::ffi::OsString, Option<Type>)> = Vec::new();
    for entry in dir.iter() {
        let entry = entry?;
        let entry_name = std::ffi::OsStr::from_bytes(entry.file_name().to_bytes()).to_owned();
        if entry_name == "." || entry_name == ".." || Some(entry_name.as_os_str()) == keep {
            continue;
        }
        listed.push((entry_name, entry.file_type()));
    }
    let entries: Vec<(std::ffi::OsString, bool)> = listed
        .into_iter()
        .map(|(entry_name, kind)| {
            let is_dir = match kind {
                Some(kind) => kind == Type::Directory,
                None => nix::sys::stat::fstatat(
                    &dir,
                    entry_name.as_os_str(),
                    nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                )
                .is_ok_and(|st| st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFDIR),
            };
            (entry_name, is_dir)
        })
        .collect();
    for (entry_name, is_dir) in entries {
        if is_dir {
            remove_contents_at(&dir, &entry_name, None)?;
            unlinkat(&dir, entry_name.as_os_str(), UnlinkatFlags::RemoveDir)?;
        } else {
            unlinkat(&dir, entry_name.as_os_str(), UnlinkatFlags::NoRemoveDir)?;
        }
    }
    Ok(())
}

fn report(path: &Path, outcome: CleanupOutcome, reason: Option<CleanupReason>) -> CleanupReport {
    CleanupReport {
        path: path.to_owned(),
        outcome,
        reason,
        already_missing: false,
    }
}

fn journal_reason(e: &JournalError) -> CleanupReason {
    CleanupReason::Journal {
        error: e.to_string(),
    }
}

fn io_reason(operation: &'static str, e: &std::io::Error) -> CleanupReason {
    CleanupReason::Io {
        operation,
        error: e.kind().to_string(),
    }
}

#[cfg(test)]
mod handle_tests {
    use super::{OWNER_MARKER_FILE, remove_profile_at};
    use std::ffi::OsStr;
    use std::fs;

    fn profile(dir: &std::path::Path, cookie: &str) {
        fs::create_dir_all(dir.join("Default/Cache")).unwrap();
        fs::write(dir.join("Default/Cookies"), cookie).unwrap();
        fs::write(dir.join("Default/Cache/0"), cookie).unwrap();
        fs::write(dir.join(OWNER_MARKER_FILE), "{}").unwrap();
    }

    #[test]
    fn an_ancestor_swapped_for_a_symlink_after_the_check_cannot_redirect_the_deletion() {
        let base = tempfile::tempdir().unwrap();
        let store = base.path().join("store");
        profile(&store.join("p1"), "ours");
        let outside = base.path().join("outside");
        profile(&outside.join("p1"), "someone else's");
        fs::write(outside.join("keep.txt"), "keep").unwrap();

        // The check opened its handle on the store...
        let handle = fs::File::open(&store).unwrap();
        // ...then the store is swapped for a symlink to a folder that is not ours.
        fs::rename(&store, base.path().join("store-moved")).unwrap();
        std::os::unix::fs::symlink(&outside, &store).unwrap();

        remove_profile_at(&handle, OsStr::new("p1")).unwrap();

        assert!(
            !base.path().join("store-moved/p1").exists(),
            "the profile the check proved ours is gone"
        );
        assert_eq!(
            fs::read_to_string(outside.join("p1/Default/Cookies")).unwrap(),
            "someone else's",
            "nothing through the swapped path was touched"
        );
        assert!(outside.join("p1/Default/Cache/0").exists());
        assert!(outside.join("keep.txt").exists());
    }

    #[test]
    fn a_symlink_inside_a_profile_is_unlinked_never_followed() {
        let base = tempfile::tempdir().unwrap();
        let store = base.path().join("store");
        profile(&store.join("p1"), "ours");
        let outside = base.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keep.txt"), "keep").unwrap();
        std::os::unix::fs::symlink(&outside, store.join("p1/Default/link")).unwrap();

        let handle = fs::File::open(&store).unwrap();
        remove_profile_at(&handle, OsStr::new("p1")).unwrap();

        assert!(!store.join("p1").exists());
        assert!(outside.join("keep.txt").exists());
    }
}
