//! Leases: exclusive use of a profile by one worker.
//!
//! A lease is two things, acquired in this order: an OS file lock (`flock`) on the profile's
//! [`LOCK_FILE`], taken without blocking, and a compare-and-set row in the journal with an
//! expiry and a fencing generation. A second claimer is refused while the first holds the
//! lock or, lock or not, while its row names a live holder that has not expired; it is never
//! let in. A holder that died (its pid is gone, or reused) loses the lock with its process,
//! and the next claim takes over with the generation bumped.
//!
//! ```
//! use std::time::Duration;
//! use browser_fault::journal::Journal;
//! use browser_fault::_internal::lease::{LeaseHolder, claim_lease};
//! use browser_fault::profile::{ProfileSpec, ProfileStore};
//! let dir = tempfile::tempdir()?;
//! let journal = Journal::open(&dir.path().join("journal.sqlite"))?;
//! let store = ProfileStore::open(dir.path().join("profiles"))?;
//! let profile = store.create(&ProfileSpec::new("p", "browser-fault", "doc", "run-1", "131"))?;
//! let lease = claim_lease(&journal, &profile, &LeaseHolder::this_process("run-1", 1), Duration::from_secs(60))?;
//! assert_eq!(lease.generation(), 1);
//! assert!(claim_lease(&journal, &profile, &LeaseHolder::this_process("run-1", 2), Duration::from_secs(60)).is_err());
//! lease.release()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use crate::journal::{Journal, JournalError, JournalErrorKind, now_unix_ms};
use crate::liveness;
use crate::profile::{LOCK_FILE, Profile};

/// Who claims a lease: a worker incarnation of a run, in a process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LeaseHolder {
    /// The run.
    pub run_id: String,
    /// The worker incarnation.
    pub incarnation: u32,
    /// The process that holds the lock.
    pub pid: u32,
}

impl LeaseHolder {
    /// A holder with these fields.
    pub fn new(run_id: impl Into<String>, incarnation: u32, pid: u32) -> LeaseHolder {
        LeaseHolder {
            run_id: run_id.into(),
            incarnation,
            pid,
        }
    }

    /// The calling process as holder.
    pub fn this_process(run_id: impl Into<String>, incarnation: u32) -> LeaseHolder {
        LeaseHolder::new(run_id, incarnation, std::process::id())
    }
}

/// A lease row as stored in the journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LeaseRecord {
    /// The profile (canonical path).
    pub profile_path: PathBuf,
    /// The holder's run.
    pub run_id: String,
    /// The holder's incarnation.
    pub incarnation: u32,
    /// The holder's pid.
    pub pid: u32,
    /// The holder's start time in clock ticks (tells a reused pid apart).
    pub pid_start_ticks: Option<u64>,
    /// The holder's host.
    pub host: String,
    /// The fencing generation: bumped at every new grant.
    pub generation: u64,
    /// When the lease was granted.
    pub acquired_unix_ms: u64,
    /// When it expires unless renewed.
    pub expires_unix_ms: u64,
    /// Whether the holder released it.
    pub released: bool,
}

impl LeaseRecord {
    /// Whether the holder process still runs (a holder on another host counts as alive).
    pub fn holder_alive(&self) -> bool {
        self.host != liveness::host_name() || liveness::owner_alive(self.pid, self.pid_start_ticks)
    }

    /// Whether the row still grants the lease: not released, not expired, holder alive.
    pub fn is_live(&self) -> bool {
        !self.released && self.expires_unix_ms > now_unix_ms() && self.holder_alive()
    }
}

/// A granted lease: the OS lock is held until [`Lease::release`] or drop.
///
/// Dropping without `release` releases too (best effort); a SIGKILL releases the OS lock
/// and leaves the row, which the next claim takes over.
#[derive(Debug)]
pub struct Lease {
    journal: Journal,
    lock: Option<File>,
    profile_path: PathBuf,
    generation: u64,
}

/// A failure to claim, renew or release a lease. Branch on [`LeaseError::kind`].
#[derive(Debug, thiserror::Error)]
#[error("failed to {kind} (profile {})", profile_path.display())]
pub struct LeaseError {
    profile_path: PathBuf,
    kind: Box<LeaseErrorKind>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl LeaseError {
    fn new(profile_path: &Path, kind: LeaseErrorKind) -> LeaseError {
        LeaseError {
            profile_path: profile_path.to_owned(),
            kind: Box::new(kind),
            source: None,
        }
    }

    fn journal(profile_path: &Path, e: JournalError) -> LeaseError {
        LeaseError {
            profile_path: profile_path.to_owned(),
            kind: Box::new(LeaseErrorKind::Journal),
            source: Some(Box::new(e)),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &LeaseErrorKind {
        &self.kind
    }

    /// The profile concerned.
    pub fn profile_path(&self) -> &Path {
        &self.profile_path
    }
}

/// The cause of a [`LeaseError`]. Messages read after "failed to …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseErrorKind {
    /// Another live holder has the profile; `holder` is its row when one was written.
    #[error("claim lease: another holder has it")]
    Held {
        /// The current holder's row, if any.
        holder: Option<LeaseRecord>,
    },
    /// The lease was taken over or released: this holder is fenced off.
    #[error("keep lease: generation {generation} is no longer current")]
    Lost {
        /// The generation this handle held.
        generation: u64,
    },
    /// The lock file could not be opened or locked (see the source).
    #[error("lock profile lock file")]
    LockFile,
    /// The journal failed (see the source).
    #[error("access the lease row")]
    Journal,
}

/// Claims the lease on `profile` for `holder`, for `ttl`.
///
/// Order: the OS lock first, without blocking (held → [`LeaseErrorKind::Held`]); then a
/// compare-and-set on the journal row: no row → generation 1; a released row, or one whose
/// holder is dead or expired → takeover with generation + 1; a live, unexpired holder →
/// `Held` (the OS lock is released again).
pub fn claim_lease(
    journal: &Journal,
    profile: &Profile,
    holder: &LeaseHolder,
    ttl: Duration,
) -> Result<Lease, LeaseError> {
    let path = profile.path();
    let lock = match open_lock_file(path, true).and_then(try_lock) {
        Ok(Some(file)) => file,
        Ok(None) => {
            let holder = lease_row(journal, path).map_err(|e| LeaseError::journal(path, e))?;
            return Err(LeaseError::new(path, LeaseErrorKind::Held { holder }));
        }
        Err(e) => {
            let mut err = LeaseError::new(path, LeaseErrorKind::LockFile);
            err.source = Some(Box::new(e));
            return Err(err);
        }
    };
    let key = path_key(journal, path).map_err(|e| LeaseError::journal(path, e))?;
    let ticks = liveness::process_start_ticks(holder.pid);
    let host = liveness::host_name();
    let granted = journal.with_conn(|conn| -> Result<Result<u64, LeaseRecord>, JournalError> {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| journal.sql(e))?;
        let current = select_row(&tx, &key).map_err(|e| journal.sql(e))?;
        let now = now_unix_ms();
        let generation = match current {
            None => 1,
            Some(row) if row.released || row.expires_unix_ms <= now || !row.holder_alive() => {
                row.generation + 1
            }
            Some(row) => return Ok(Err(row)),
        };
        tx.prepare_cached(
            "INSERT INTO leases (profile_path, run_id, incarnation, pid, pid_start_ticks, host,
                generation, acquired_unix_ms, expires_unix_ms, released)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0)
             ON CONFLICT (profile_path) DO UPDATE SET run_id = excluded.run_id,
                incarnation = excluded.incarnation, pid = excluded.pid,
                pid_start_ticks = excluded.pid_start_ticks, host = excluded.host,
                generation = excluded.generation, acquired_unix_ms = excluded.acquired_unix_ms,
                expires_unix_ms = excluded.expires_unix_ms, released = 0",
        )
        .and_then(|mut s| {
            s.execute(params![
                key,
                holder.run_id,
                holder.incarnation,
                holder.pid,
                ticks,
                host,
                generation,
                now,
                expiry(now, ttl)
            ])
        })
        .map_err(|e| journal.sql(e))?;
        tx.commit().map_err(|e| journal.sql(e))?;
        Ok(Ok(generation))
    });
    match granted {
        Ok(Ok(generation)) => Ok(Lease {
            journal: journal.clone(),
            lock: Some(lock),
            profile_path: path.to_owned(),
            generation,
        }),
        Ok(Err(row)) => Err(LeaseError::new(
            path,
            LeaseErrorKind::Held { holder: Some(row) },
        )),
        Err(e) => Err(LeaseError::journal(path, e)),
    }
}

/// The lease row of the profile at `profile_path`, if one was ever written.
pub fn lease_row(
    journal: &Journal,
    profile_path: &Path,
) -> Result<Option<LeaseRecord>, JournalError> {
    let key = path_key(journal, profile_path)?;
    journal.with_conn(|conn| select_row(conn, &key).map_err(|e| journal.sql(e)))
}

/// Deletes the lease row of a removed profile.
pub(crate) fn forget_lease(journal: &Journal, profile_path: &Path) -> Result<(), JournalError> {
    let key = path_key(journal, profile_path)?;
    journal.with_conn(|conn| {
        conn.execute("DELETE FROM leases WHERE profile_path = ?1", [key])
            .map(|_| ())
            .map_err(|e| journal.sql(e))
    })
}

/// Opens the profile's lock file without following a symlink; `None` when missing and not
/// `create`.
pub(crate) fn open_lock_file(profile_path: &Path, create: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(profile_path.join(LOCK_FILE))
}

/// Whether some process holds the profile's lock file locked (a lease's holder, live or
/// leaked): the same lock check a claimant makes, without taking the lock.
pub(crate) fn lock_held(profile_path: &Path) -> bool {
    match open_lock_file(profile_path, false) {
        Err(_) => false,
        // Taken here, so nobody held it: let go at once (the file closes).
        Ok(file) => !matches!(try_lock(file), Ok(Some(_))),
    }
}

/// Takes the OS lock without blocking: `None` when someone else holds it.
pub(crate) fn try_lock(file: File) -> std::io::Result<Option<File>> {
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

impl Lease {
    /// The fencing generation: strictly increasing across grants of this profile.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether the lock file at the profile's [`LOCK_FILE`] path is still the file this lease
    /// holds locked: `false` when someone removed it, or replaced it with another file. The
    /// lease itself survives either way (its journal row names a live holder, and a second
    /// claimant is refused on that); this is how tampering is noticed.
    pub fn lock_intact(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Some(held) = self.lock.as_ref().and_then(|f| f.metadata().ok()) else {
            return false;
        };
        match std::fs::metadata(self.profile_path.join(LOCK_FILE)) {
            Ok(at_path) => at_path.dev() == held.dev() && at_path.ino() == held.ino(),
            Err(_) => false,
        }
    }

    /// Extends the expiry to now + `ttl`; [`LeaseErrorKind::Lost`] if fenced off.
    pub fn renew(&self, ttl: Duration) -> Result<(), LeaseError> {
        let now = now_unix_ms();
        self.update(
            "UPDATE leases SET expires_unix_ms = ?3
             WHERE profile_path = ?1 AND generation = ?2 AND released = 0",
            expiry(now, ttl),
        )
    }

    /// Releases the row, then the OS lock; [`LeaseErrorKind::Lost`] if fenced off (the OS
    /// lock is released either way).
    pub fn release(mut self) -> Result<(), LeaseError> {
        let result = self.release_row();
        self.lock = None;
        result
    }

    fn release_row(&self) -> Result<(), LeaseError> {
        self.update(
            "UPDATE leases SET released = ?3
             WHERE profile_path = ?1 AND generation = ?2 AND released = 0",
            1,
        )
    }

    fn update(&self, sql: &str, value: u64) -> Result<(), LeaseError> {
        let path = &self.profile_path;
        let key = path_key(&self.journal, path).map_err(|e| LeaseError::journal(path, e))?;
        let n = self
            .journal
            .with_conn(|conn| {
                conn.prepare_cached(sql)
                    .and_then(|mut s| s.execute(params![key, self.generation, value]))
                    .map_err(|e| self.journal.sql(e))
            })
            .map_err(|e| LeaseError::journal(path, e))?;
        if n == 0 {
            return Err(LeaseError::new(
                path,
                LeaseErrorKind::Lost {
                    generation: self.generation,
                },
            ));
        }
        Ok(())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.lock.is_some() {
            let _ = self.release_row();
        }
    }
}

fn expiry(now: u64, ttl: Duration) -> u64 {
    now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
        .min(i64::MAX as u64)
}

fn path_key(journal: &Journal, path: &Path) -> Result<String, JournalError> {
    path.to_str().map(str::to_owned).ok_or_else(|| {
        journal.error(JournalErrorKind::InvalidRow {
            detail: format!("profile path {} is not UTF-8", path.display()),
        })
    })
}

fn select_row(conn: &rusqlite::Connection, key: &str) -> rusqlite::Result<Option<LeaseRecord>> {
    conn.prepare_cached(
        "SELECT profile_path, run_id, incarnation, pid, pid_start_ticks, host, generation,
            acquired_unix_ms, expires_unix_ms, released FROM leases WHERE profile_path = ?1",
    )?
    .query_row([key], |r| {
        Ok(LeaseRecord {
            profile_path: PathBuf::from(r.get::<_, String>(0)?),
            run_id: r.get(1)?,
            incarnation: r.get(2)?,
            pid: r.get(3)?,
            pid_start_ticks: r.get(4)?,
            host: r.get(5)?,
            generation: r.get(6)?,
            acquired_unix_ms: r.get(7)?,
            expires_unix_ms: r.get(8)?,
            released: r.get::<_, i64>(9)? != 0,
        })
    })
    .optional()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{ProfileSpec, ProfileStore};

    #[test]
    fn a_removed_or_replaced_lock_file_is_noticed_and_the_holder_still_holds_the_lease() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(&dir.path().join("journal.sqlite")).unwrap();
        let store = ProfileStore::open(dir.path().join("profiles")).unwrap();
        let profile = store
            .create(&ProfileSpec::new("p", "browser-fault", "t", "run", "131"))
            .unwrap();
        let ttl = Duration::from_secs(60);
        let lease = claim_lease(
            &journal,
            &profile,
            &LeaseHolder::this_process("run", 1),
            ttl,
        )
        .unwrap();
        assert!(lease.lock_intact());

        // Removed: anyone can delete a path, and a new file at it can be flocked at once.
        std::fs::remove_file(profile.path().join(LOCK_FILE)).unwrap();
        assert!(!lease.lock_intact());
        let second = claim_lease(
            &journal,
            &profile,
            &LeaseHolder::this_process("run", 2),
            ttl,
        );
        assert!(
            matches!(
                second.as_ref().map_err(LeaseError::kind),
                Err(LeaseErrorKind::Held { .. })
            ),
            "the live holder is recognised by its journal row, not by the path: {second:?}"
        );

        // Replaced by another file: noticed too.
        std::fs::write(profile.path().join(LOCK_FILE), b"").unwrap();
        assert!(!lease.lock_intact());
        lease.release().unwrap();
    }
}
