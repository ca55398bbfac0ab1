//! Browser profiles: Chromium user-data-dirs under a profile root, owned by the harness.
//!
//! Each profile is a directory of mode 0700 holding an owner marker
//! ([`OWNER_MARKER_FILE`]) that says who made it, for which run and purpose, its generation
//! and browser version. Backups live in the store (`<root>/.backups/<name>/<label>`) and
//! leave out Chromium's `Singleton*` files and the lease lock; restoring one rolls the
//! marker's generation back, so a rollback is detectable by [`ProfileStore::check_policy`].
//!
//! ```
//! use browser_fault::profile::{ProfileSpec, ProfileStore};
//! let dir = tempfile::tempdir()?;
//! let store = ProfileStore::open(dir.path().join("profiles"))?;
//! let profile = store.create(&ProfileSpec::new("worker-1", "browser-fault", "trial", "run-1", "131"))?;
//! assert_eq!(store.marker(&profile)?.generation, 1);
//! assert_eq!(store.bump_generation(&profile)?, 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::journal::now_unix_ms;

/// The owner marker's file name inside a profile.
pub const OWNER_MARKER_FILE: &str = ".browser-fault-owner.json";
/// The lock file name inside a profile that the worker holding the profile's lease locks.
pub const LOCK_FILE: &str = ".browser-fault.lock";
/// The directory under the root that holds backups.
pub const BACKUPS_DIR: &str = ".backups";
/// The environment variable that overrides [`ProfileStore::default_root`].
pub const PROFILE_ROOT_ENV: &str = "BROWSER_FAULT_PROFILE_ROOT";

const MARKER_FORMAT: &str = "browser-fault-profile/1";

/// The profile root: where profiles and their backups live.
#[derive(Clone, Debug)]
pub struct ProfileStore {
    root: PathBuf,
}

/// What to create: names and ownership of a new profile.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProfileSpec {
    /// The directory name: one safe path component (no `/`, not `.` or `..`, not empty,
    /// not starting with `.`).
    pub name: String,
    /// Who owns it (the harness or tool name).
    pub owner: String,
    /// What it is for (the trial).
    pub purpose: String,
    /// The run it belongs to.
    pub run_id: String,
    /// The browser version it is created for.
    pub browser_version: String,
}

impl ProfileSpec {
    /// A spec with these fields.
    pub fn new(
        name: impl Into<String>,
        owner: impl Into<String>,
        purpose: impl Into<String>,
        run_id: impl Into<String>,
        browser_version: impl Into<String>,
    ) -> ProfileSpec {
        ProfileSpec {
            name: name.into(),
            owner: owner.into(),
            purpose: purpose.into(),
            run_id: run_id.into(),
            browser_version: browser_version.into(),
        }
    }
}

/// The owner marker file's contents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OwnerMarker {
    /// Format tag, `"browser-fault-profile/1"`.
    pub format: String,
    /// Who owns the profile.
    pub owner: String,
    /// What it is for.
    pub purpose: String,
    /// The run it belongs to.
    pub run_id: String,
    /// Bumped at each change of hands; rolled back by a restore.
    pub generation: u64,
    /// The browser version it was created for.
    pub browser_version: String,
    /// When it was created.
    pub created_unix_ms: u64,
}

/// A profile of the store: its canonical path and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    path: PathBuf,
    name: String,
}

impl Profile {
    /// The canonical path of the profile directory (Chromium's `--user-data-dir`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A backup of a profile, in the store.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProfileBackup {
    /// Where the copy lives.
    pub path: PathBuf,
    /// The profile's name.
    pub profile_name: String,
    /// The backup's label.
    pub label: String,
    /// The marker's generation when the backup was taken.
    pub generation: u64,
}

/// Limits a profile must respect before a worker uses it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfilePolicy {
    /// The oldest a profile may be.
    pub max_age: Option<Duration>,
    /// The highest generation allowed.
    pub max_generation: Option<u64>,
    /// The browser version the profile must have been created for.
    pub expected_browser_version: Option<String>,
    /// The generation the caller last saw (for example in its browser-session record).
    pub expected_generation: Option<u64>,
}

/// A policy violation found by [`ProfileStore::check_policy`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum PolicyFinding {
    /// The profile is older than allowed.
    TooOld {
        /// Its age.
        age: Duration,
        /// The limit.
        max_age: Duration,
    },
    /// The generation exceeds the limit.
    GenerationTooHigh {
        /// The marker's generation.
        generation: u64,
        /// The limit.
        max_generation: u64,
    },
    /// The profile was created for another browser version.
    BrowserVersionChanged {
        /// The marker's version.
        recorded: String,
        /// The version in use now.
        current: String,
    },
    /// The generation went backwards: an older copy was restored.
    GenerationRolledBack {
        /// The generation expected.
        expected: u64,
        /// The generation found.
        found: u64,
    },
    /// The generation is ahead of what the caller saw: someone else took the profile.
    GenerationAdvanced {
        /// The generation expected.
        expected: u64,
        /// The generation found.
        found: u64,
    },
}

/// A failure of the profile store. Branch on [`ProfileError::kind`].
#[derive(Debug, thiserror::Error)]
#[error("failed to {kind} ({})", path.display())]
pub struct ProfileError {
    path: PathBuf,
    kind: Box<ProfileErrorKind>,
    #[source]
    source: Option<std::io::Error>,
}

impl ProfileError {
    fn new(path: &Path, kind: ProfileErrorKind) -> ProfileError {
        ProfileError {
            path: path.to_owned(),
            kind: Box::new(kind),
            source: None,
        }
    }

    fn io(path: &Path, kind: ProfileErrorKind, source: std::io::Error) -> ProfileError {
        ProfileError {
            path: path.to_owned(),
            kind: Box::new(kind),
            source: Some(source),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ProfileErrorKind {
        &self.kind
    }

    /// The path concerned.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The cause of a [`ProfileError`]. Messages read after "failed to …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileErrorKind {
    /// The root could not be created or is not a directory owned by this user.
    #[error("open profile root: {detail}")]
    Root {
        /// Why.
        detail: String,
    },
    /// A name or label that is not one safe path component.
    #[error("name profile: {name:?} is not a single safe path component")]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// The profile (or backup) exists already; profiles are never reused by accident.
    #[error("create profile: it already exists")]
    AlreadyExists,
    /// The path is not a profile directory under the root.
    #[error("open profile: it is not under the profile root")]
    OutsideRoot,
    /// The directory has no readable owner marker of ours.
    #[error("read owner marker: {detail}")]
    Marker {
        /// Why.
        detail: String,
    },
    /// A file-system operation failed (see the source).
    #[error("{operation}")]
    Io {
        /// What was being done ("copy profile", …).
        operation: &'static str,
    },
}

impl ProfileStore {
    /// Opens (creating with mode 0700 when missing) the profile root.
    ///
    /// The root is canonicalized; an existing root must be a directory owned by this user.
    pub fn open(root: impl Into<PathBuf>) -> Result<ProfileStore, ProfileError> {
        let root = root.into();
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)
            .map_err(|e| ProfileError::io(&root, root_err("cannot create it"), e))?;
        let canonical = fs::canonicalize(&root)
            .map_err(|e| ProfileError::io(&root, root_err("cannot resolve it"), e))?;
        let meta = fs::metadata(&canonical)
            .map_err(|e| ProfileError::io(&root, root_err("cannot stat it"), e))?;
        let me = fs::metadata("/proc/self").map(|m| m.uid()).ok();
        if !meta.is_dir() {
            return Err(ProfileError::new(&root, root_err("not a directory")));
        }
        if me.is_some_and(|uid| uid != meta.uid()) {
            return Err(ProfileError::new(&root, root_err("owned by another user")));
        }
        Ok(ProfileStore { root: canonical })
    }

    /// The default root: `$BROWSER_FAULT_PROFILE_ROOT` when set and non-empty, else
    /// `std::env::temp_dir()/browser-fault-profiles-<uid>`.
    pub fn default_root() -> PathBuf {
        match std::env::var_os(PROFILE_ROOT_ENV) {
            Some(root) if !root.is_empty() => PathBuf::from(root),
            _ => {
                let uid = fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0);
                std::env::temp_dir().join(format!("browser-fault-profiles-{uid}"))
            }
        }
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The profile folders under the root, sorted (not the backups, not files).
    pub fn profile_dirs(&self) -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
            .map(|e| e.path())
            .collect();
        dirs.sort();
        dirs
    }

    /// Creates a new profile directory (mode 0700) with its owner marker at generation 1.
    ///
    /// An existing directory of that name is [`ProfileErrorKind::AlreadyExists`]. The marker
    /// and the directory entry are fsynced before this returns.
    pub fn create(&self, spec: &ProfileSpec) -> Result<Profile, ProfileError> {
        validate_component(&spec.name)?;
        let path = self.root.join(&spec.name);
        DirBuilder::new().mode(0o700).create(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                ProfileError::io(&path, ProfileErrorKind::AlreadyExists, e)
            } else {
                ProfileError::io(
                    &path,
                    ProfileErrorKind::Io {
                        operation: "create profile",
                    },
                    e,
                )
            }
        })?;
        // DirBuilder's mode is filtered by the umask; make 0700 exact.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o700)).map_err(|e| {
            ProfileError::io(
                &path,
                ProfileErrorKind::Io {
                    operation: "set profile mode",
                },
                e,
            )
        })?;
        let marker = OwnerMarker {
            format: MARKER_FORMAT.to_owned(),
            owner: spec.owner.clone(),
            purpose: spec.purpose.clone(),
            run_id: spec.run_id.clone(),
            generation: 1,
            browser_version: spec.browser_version.clone(),
            created_unix_ms: now_unix_ms(),
        };
        write_marker(&path, &marker)?;
        sync_dir(&self.root)?;
        Ok(Profile {
            path,
            name: spec.name.clone(),
        })
    }

    /// Opens an existing profile: `path` must resolve to a directory directly under the root
    /// that carries our owner marker.
    pub fn open_profile(&self, path: &Path) -> Result<Profile, ProfileError> {
        let canonical = fs::canonicalize(path)
            .map_err(|e| ProfileError::io(path, ProfileErrorKind::OutsideRoot, e))?;
        let name = match canonical.strip_prefix(&self.root) {
            Ok(rel) if rel.components().count() == 1 => rel.to_string_lossy().into_owned(),
            _ => return Err(ProfileError::new(path, ProfileErrorKind::OutsideRoot)),
        };
        validate_component(&name)?;
        let profile = Profile {
            path: canonical,
            name,
        };
        self.marker(&profile)?;
        Ok(profile)
    }

    /// Reads the profile's owner marker.
    pub fn marker(&self, profile: &Profile) -> Result<OwnerMarker, ProfileError> {
        read_marker(profile.path())
    }

    /// Increments the marker's generation (atomically replacing the file) and returns it.
    /// Call it while holding the profile's lease.
    pub fn bump_generation(&self, profile: &Profile) -> Result<u64, ProfileError> {
        let mut marker = self.marker(profile)?;
        marker.generation += 1;
        write_marker(profile.path(), &marker)?;
        Ok(marker.generation)
    }

    /// Puts the marker's generation back to `generation` (atomically replacing the file),
    /// never forward: what the harness does once browsers of its own have signed the
    /// profile in as another account, so that the change reads as the world's (an older
    /// backup stays older) and not as a worker's. Call it while no worker runs.
    pub(crate) fn rewind_generation(
        &self,
        profile: &Profile,
        generation: u64,
    ) -> Result<(), ProfileError> {
        let mut marker = self.marker(profile)?;
        if marker.generation > generation {
            marker.generation = generation;
            write_marker(profile.path(), &marker)?;
        }
        Ok(())
    }

    /// Records in the marker that the profile was last written by browser major `version`
    /// (atomically replacing the file): what a browser upgrade, or an explicit migration,
    /// leaves behind. Call it while holding the profile's lease, or while no worker runs.
    pub fn record_browser_version(
        &self,
        profile: &Profile,
        version: &str,
    ) -> Result<(), ProfileError> {
        let mut marker = self.marker(profile)?;
        marker.browser_version = version.to_owned();
        write_marker(profile.path(), &marker)
    }

    /// Copies the profile into `<root>/.backups/<name>/<label>`, leaving out Chromium's
    /// `Singleton*` files and the lease lock; symlinks are copied as links, never followed.
    pub fn backup(&self, profile: &Profile, label: &str) -> Result<ProfileBackup, ProfileError> {
        validate_component(label)?;
        let marker = self.marker(profile)?;
        let dir = self.backups_of(profile.name());
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| {
                ProfileError::io(
                    &dir,
                    ProfileErrorKind::Io {
                        operation: "create backup dir",
                    },
                    e,
                )
            })?;
        let dest = dir.join(label);
        if fs::symlink_metadata(&dest).is_ok() {
            return Err(ProfileError::new(&dest, ProfileErrorKind::AlreadyExists));
        }
        let staging = dir.join(format!(".staging-{label}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&staging);
        copy_tree(profile.path(), &staging, true)?;
        fs::rename(&staging, &dest).map_err(|e| {
            ProfileError::io(
                &dest,
                ProfileErrorKind::Io {
                    operation: "publish backup",
                },
                e,
            )
        })?;
        sync_dir(&dir)?;
        Ok(ProfileBackup {
            path: dest,
            profile_name: profile.name().to_owned(),
            label: label.to_owned(),
            generation: marker.generation,
        })
    }

    /// The backup of `profile` labelled `label`, taken earlier (by this process or another).
    pub fn open_backup(
        &self,
        profile: &Profile,
        label: &str,
    ) -> Result<ProfileBackup, ProfileError> {
        validate_component(label)?;
        let path = self.backups_of(profile.name()).join(label);
        let marker = read_marker(&path)?;
        Ok(ProfileBackup {
            path,
            profile_name: profile.name().to_owned(),
            label: label.to_owned(),
            generation: marker.generation,
        })
    }

    /// Replaces the profile with the backup, atomically: the backup is copied beside the
    /// profile (a hidden folder of the store), the lease's lock file is linked into the copy
    /// (the same file, so its holders and its identity stay), and the two folders are
    /// exchanged in one `renameat2(RENAME_EXCHANGE)`. A crash at any point leaves the profile
    /// whole, old or restored, never mixed; the copy left beside it is hidden and holds no
    /// profile of the store. The marker's generation goes back to the backup's, so the
    /// rollback is detectable.
    pub fn restore(&self, profile: &Profile, backup: &ProfileBackup) -> Result<(), ProfileError> {
        let io = |p: &Path, operation: &'static str, e| {
            ProfileError::io(p, ProfileErrorKind::Io { operation }, e)
        };
        let backup_marker = read_marker(&backup.path)?;
        let name = profile.path().file_name().ok_or_else(|| {
            ProfileError::new(profile.path(), root_err("a profile without a name"))
        })?;
        let staging_name = format!(
            ".restore-{}-{:08x}",
            name.to_string_lossy(),
            rand::random::<u32>()
        );
        let staging = self.root.join(&staging_name);
        let built = (|| {
            copy_tree(&backup.path, &staging, true)?;
            write_marker(&staging, &backup_marker)?;
            let lock = profile.path().join(LOCK_FILE);
            if lock.exists() {
                fs::hard_link(&lock, staging.join(LOCK_FILE))
                    .map_err(|e| io(&lock, "link the lease's lock file", e))?;
            }
            File::open(&staging)
                .and_then(|d| d.sync_all())
                .map_err(|e| io(&staging, "sync the restored copy", e))?;
            let root = File::open(&self.root).map_err(|e| io(&self.root, "open the store", e))?;
            nix::fcntl::renameat2(
                &root,
                name,
                &root,
                staging_name.as_str(),
                nix::fcntl::RenameFlags::RENAME_EXCHANGE,
            )
            .map_err(|e| io(profile.path(), "exchange the restored copy", e.into()))?;
            root.sync_all()
                .map_err(|e| io(&self.root, "sync the store", e))
        })();
        // Before the exchange it holds the half-built copy, after it the old contents.
        let _ = fs::remove_dir_all(&staging);
        built
    }

    /// Checks the profile against `policy`; an empty list means it passes.
    pub fn check_policy(
        &self,
        profile: &Profile,
        policy: &ProfilePolicy,
    ) -> Result<Vec<PolicyFinding>, ProfileError> {
        let marker = self.marker(profile)?;
        let mut findings = Vec::new();
        if let Some(max_age) = policy.max_age {
            let age = Duration::from_millis(now_unix_ms().saturating_sub(marker.created_unix_ms));
            if age > max_age {
                findings.push(PolicyFinding::TooOld { age, max_age });
            }
        }
        if let Some(max_generation) = policy.max_generation
            && marker.generation > max_generation
        {
            findings.push(PolicyFinding::GenerationTooHigh {
                generation: marker.generation,
                max_generation,
            });
        }
        if let Some(current) = &policy.expected_browser_version
            && *current != marker.browser_version
        {
            findings.push(PolicyFinding::BrowserVersionChanged {
                recorded: marker.browser_version.clone(),
                current: current.clone(),
            });
        }
        if let Some(expected) = policy.expected_generation {
            let found = marker.generation;
            if found < expected {
                findings.push(PolicyFinding::GenerationRolledBack { expected, found });
            } else if found > expected {
                findings.push(PolicyFinding::GenerationAdvanced { expected, found });
            }
        }
        Ok(findings)
    }

    /// The directory holding the backups of the profile named `name`.
    pub fn backups_of(&self, name: &str) -> PathBuf {
        self.root.join(BACKUPS_DIR).join(name)
    }
}

fn root_err(detail: &str) -> ProfileErrorKind {
    ProfileErrorKind::Root {
        detail: detail.to_owned(),
    }
}

/// Accepts one normal path component that is not hidden (hidden names are the store's own).
fn validate_component(name: &str) -> Result<(), ProfileError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0']);
    if ok {
        Ok(())
    } else {
        Err(ProfileError::new(
            Path::new(name),
            ProfileErrorKind::InvalidName {
                name: name.to_owned(),
            },
        ))
    }
}

/// Reads and parses the owner marker in `dir`, refusing a symlinked marker.
pub(crate) fn read_marker(dir: &Path) -> Result<OwnerMarker, ProfileError> {
    let path = dir.join(OWNER_MARKER_FILE);
    let marker_err = |detail: &str| {
        ProfileError::new(
            &path,
            ProfileErrorKind::Marker {
                detail: detail.to_owned(),
            },
        )
    };
    let bytes = OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(&path)
        .and_then(|mut f| {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut buf).map(|_| buf)
        })
        .map_err(|e| {
            ProfileError::io(
                &path,
                ProfileErrorKind::Marker {
                    detail: "no readable owner marker".into(),
                },
                e,
            )
        })?;
    let marker: OwnerMarker =
        serde_json::from_slice(&bytes).map_err(|_| marker_err("the owner marker is not ours"))?;
    if marker.format != MARKER_FORMAT {
        return Err(marker_err("the owner marker has another format"));
    }
    Ok(marker)
}

/// Writes the marker atomically: a temporary file, fsync, rename, fsync of the directory.
fn write_marker(dir: &Path, marker: &OwnerMarker) -> Result<(), ProfileError> {
    let io = |e| {
        ProfileError::io(
            dir,
            ProfileErrorKind::Io {
                operation: "write owner marker",
            },
            e,
        )
    };
    let tmp = dir.join(format!("{OWNER_MARKER_FILE}.tmp-{}", std::process::id()));
    let json = serde_json::to_vec_pretty(marker).map_err(|e| io(std::io::Error::other(e)))?;
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(&tmp)
        .map_err(io)?;
    file.write_all(&json)
        .and_then(|()| file.sync_all())
        .map_err(io)?;
    fs::rename(&tmp, dir.join(OWNER_MARKER_FILE)).map_err(io)?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), ProfileError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| {
        ProfileError::io(
            dir,
            ProfileErrorKind::Io {
                operation: "sync directory",
            },
            e,
        )
    })
}

/// Whether a profile entry is left out of backups: Chromium's `Singleton*` and our lock.
fn skipped_in_backup(name: &std::ffi::OsStr) -> bool {
    name == LOCK_FILE || name.as_encoded_bytes().starts_with(b"Singleton")
}

/// Copies `from` into `to` without following symlinks; `create` makes `to` (0700) first.
fn copy_tree(from: &Path, to: &Path, create: bool) -> Result<(), ProfileError> {
    let io = |p: &Path, e| {
        ProfileError::io(
            p,
            ProfileErrorKind::Io {
                operation: "copy profile",
            },
            e,
        )
    };
    if create {
        DirBuilder::new()
            .mode(0o700)
            .create(to)
            .map_err(|e| io(to, e))?;
    }
    for entry in fs::read_dir(from).map_err(|e| io(from, e))? {
        let entry = entry.map_err(|e| io(from, e))?;
        let name = entry.file_name();
        if skipped_in_backup(&name) {
            continue;
        }
        let src = entry.path();
        let dst = to.join(&name);
        let kind = entry.file_type().map_err(|e| io(&src, e))?;
        if kind.is_symlink() {
            let target = fs::read_link(&src).map_err(|e| io(&src, e))?;
            std::os::unix::fs::symlink(target, &dst).map_err(|e| io(&dst, e))?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst, true)?;
        } else if kind.is_file() {
            fs::copy(&src, &dst).map_err(|e| io(&src, e))?;
        }
        // Sockets, fifos and devices have no place in a backup.
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_names_that_are_not_one_safe_component() {
        for bad in ["", ".", "..", "a/b", "../x", ".hidden", "a\0b"] {
            let err = validate_component(bad).unwrap_err();
            assert!(
                matches!(err.kind(), ProfileErrorKind::InvalidName { .. }),
                "{bad:?}"
            );
        }
        validate_component("worker-1.profile").unwrap();
    }

    #[test]
    fn skips_chromium_singletons_and_the_lock_in_backups() {
        for name in [
            "SingletonLock",
            "SingletonSocket",
            "SingletonCookie",
            LOCK_FILE,
        ] {
            assert!(skipped_in_backup(name.as_ref()), "{name}");
        }
        assert!(!skipped_in_backup("Default".as_ref()));
    }
}
