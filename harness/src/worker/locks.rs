//! Chromium's profile lock: a stale one is recovered only when its owner is proven dead.

use std::path::Path;

use super::{SafeStop, TaskError};

/// The `(host, pid)` that Chromium's `SingletonLock` in `profile` names (a symlink to
/// `<host>-<pid>`); `None` when there is none or it does not read that way.
pub(super) fn singleton_lock_owner(profile: &Path) -> Option<(String, u32)> {
    let target = std::fs::read_link(profile.join("SingletonLock")).ok()?;
    let target = target.to_string_lossy();
    let (host, pid) = target.rsplit_once('-')?;
    Some((host.to_owned(), pid.parse().ok()?))
}

/// Chromium's `SingletonLock` is a symlink to `<host>-<pid>`. A lock whose owner is dead on
/// this host is stale and removed (with its `SingletonSocket`/`SingletonCookie`); a lock
/// held by a live process, or by another host, is refused.
pub(super) fn recover_stale_singleton_lock(profile: &Path) -> Result<(), TaskError> {
    let lock = profile.join("SingletonLock");
    if std::fs::read_link(&lock).is_err() {
        return Ok(());
    }
    // A lock that does not name `<host>-<pid>` is someone else's: refused, never removed.
    let (host, pid) = singleton_lock_owner(profile).ok_or(SafeStop::ProfileInUse)?;
    let this_host = crate::liveness::host_name();
    // A live pid owns the lock only if it started before the lock was made: the dead
    // owner's pid may already belong to a newer process (`pid_max` is small, browsers many).
    let made = std::fs::symlink_metadata(&lock)
        .and_then(|m| m.modified())
        .ok();
    let started_before = match (crate::liveness::process_start_time(pid), made) {
        // Ticks and the boot time are both rounded down: the owner's start, so computed,
        // is never later than the lock (a pid takes far longer than that to come round).
        (Some(started), Some(made)) => started <= made,
        _ => true,
    };
    if host != this_host || (crate::liveness::pid_alive(pid) && started_before) {
        return Err(SafeStop::ProfileInUse.into());
    }
    for name in ["SingletonLock", "SingletonSocket", "SingletonCookie"] {
        let _ = std::fs::remove_file(profile.join(name));
    }
    Ok(())
}
