//! Process liveness helpers: is the owner of a run, lease or cleanup claim still alive?
//!
//! Liveness is `kill(pid, 0)` plus two Linux refinements read from `/proc/<pid>/stat`:
//! a zombie (a child that exited but was not reaped yet) counts as dead, and a recorded
//! process start time that no longer matches means the pid was reused by another process.

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

/// Whether a process with this pid exists and has not exited.
///
/// `kill(pid, 0)` semantics: `EPERM` (the process exists but belongs to another user)
/// counts as alive. A zombie counts as dead: it has exited, closed its files and released
/// its locks, and only waits to be reaped by its parent. Pid 0 and pids beyond `i32::MAX`
/// are never alive.
///
/// ```
/// assert!(browser_fault::_internal::liveness::pid_alive(std::process::id()));
/// ```
pub fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    match kill(Pid::from_raw(raw), None) {
        Ok(()) | Err(Errno::EPERM) => !matches!(proc_stat(pid), Some((b'Z' | b'X', _))),
        Err(_) => false,
    }
}

/// The start time of a process in clock ticks since boot (`/proc/<pid>/stat`, field 22).
///
/// Recorded next to a pid so that a reused pid is not mistaken for the original owner.
/// `None` when the process does not exist or `/proc` is unavailable.
pub fn process_start_ticks(pid: u32) -> Option<u64> {
    proc_stat(pid).map(|(_, ticks)| ticks)
}

/// Whether the process recorded as (`pid`, `start_ticks`) is still the one running.
///
/// Dead when [`pid_alive`] says so, or when both start times are known and differ
/// (the pid now belongs to another process).
pub(crate) fn owner_alive(pid: u32, start_ticks: Option<u64>) -> bool {
    if !pid_alive(pid) {
        return false;
    }
    match (start_ticks, process_start_ticks(pid)) {
        (Some(recorded), Some(current)) => recorded == current,
        _ => true,
    }
}

/// When `pid` started, as wall-clock time (boot time plus its start ticks); `None` when it
/// is gone or `/proc` cannot say.
pub(crate) fn process_start_time(pid: u32) -> Option<std::time::SystemTime> {
    /// `USER_HZ`: the unit of `/proc/<pid>/stat`'s start time, 100 on every Linux ABI.
    const TICKS_PER_SECOND: u64 = 100;
    let ticks = process_start_ticks(pid)?;
    let btime: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let since_boot = std::time::Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND);
    Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(btime) + since_boot)
}

/// The name of this host (`/proc/sys/kernel/hostname`), or `"localhost"` when unknown.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// State letter and start ticks of a process, parsed from `/proc/<pid>/stat`.
fn proc_stat(pid: u32) -> Option<(u8, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces or ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.bytes().next()?;
    // After the state (field 3), the start time is field 22: 19 fields further.
    let ticks = fields.nth(18)?.parse().ok()?;
    Some((state, ticks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::wait::{Id, WaitPidFlag, waitid};

    #[test]
    fn considers_this_process_alive_with_a_stable_start_time() {
        let me = std::process::id();
        assert!(pid_alive(me));
        let ticks = process_start_ticks(me);
        assert!(ticks.is_some());
        assert!(owner_alive(me, ticks));
        assert!(!owner_alive(me, ticks.map(|t| t + 1)));
    }

    #[test]
    fn this_process_started_in_the_past_and_not_long_before_now() {
        let started = process_start_time(std::process::id()).unwrap();
        let now = std::time::SystemTime::now();
        // btime is whole seconds: allow a second either way.
        assert!(started <= now + std::time::Duration::from_secs(1));
        assert!(
            now.duration_since(started).unwrap_or_default()
                < std::time::Duration::from_secs(24 * 3600)
        );
    }

    #[test]
    fn considers_pid_zero_and_out_of_range_pids_dead() {
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
    }

    #[test]
    fn considers_an_unreaped_exited_child_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Wait for the exit without reaping it: the child stays a zombie.
        let raw = Pid::from_raw(i32::try_from(pid).unwrap());
        waitid(Id::Pid(raw), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT).unwrap();
        assert!(matches!(proc_stat(pid), Some((b'Z', _))));
        assert!(!pid_alive(pid));
        child.wait().unwrap();
        assert!(!pid_alive(pid));
    }
}
