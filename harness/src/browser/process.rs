//! Process accounting: every Chromium and chromedriver process of a worker is found by the
//! profile path on its command line (or by its process group) and can be killed as a tree.

use std::path::Path;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// Pids of live processes whose command line names `profile_dir` as `--user-data-dir`.
///
/// This is how leftover browsers are found after a crash: the profile path is unique per
/// trial, so a match is ours.
pub fn processes_using_profile(profile_dir: &Path) -> Vec<u32> {
    let needle = format!("--user-data-dir={}", profile_dir.display());
    let mut found: Vec<u32> = live_pids()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| names_profile(&cmdline, needle.as_bytes()))
        })
        .collect();
    found.sort_unstable();
    found
}

/// Pids of live browser *main* processes (and chromedrivers) whose command line names
/// `profile_dir` as one `--user-data-dir` argument: what a leak is counted by. Chromium's
/// helpers (renderers, GPU, network) die with their main process, a moment after it; the
/// kill paths find them too ([`processes_using_profile`]), the leak count does not wait on
/// their dying.
pub(crate) fn browsers_using_profile(profile_dir: &Path) -> Vec<u32> {
    let needle = format!("--user-data-dir={}", profile_dir.display());
    let mut found: Vec<u32> = live_pids()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                cmdline
                    .split(|b| *b == 0)
                    .any(|arg| arg == needle.as_bytes())
            })
        })
        .collect();
    found.sort_unstable();
    found
}

/// Whether a `/proc/<pid>/cmdline` names the profile: as one NUL-separated argument, or,
/// for Chromium's helper processes (renderers, GPU, network), which rewrite their command
/// line into one space-separated string, as one space-separated word of it.
fn names_profile(cmdline: &[u8], needle: &[u8]) -> bool {
    cmdline
        .split(|b| *b == 0)
        .any(|arg| arg == needle || arg.split(|b| *b == b' ').any(|word| word == needle))
}

/// The pids in `/proc` that are not zombies.
fn live_pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| !is_zombie(*pid))
}

/// SIGKILLs every live process using `profile_dir`; returns how many were signalled.
pub fn kill_profile_processes(profile_dir: &Path) -> usize {
    let pids = processes_using_profile(profile_dir);
    for pid in &pids {
        let _ = kill(Pid::from_raw(*pid as i32), Signal::SIGKILL);
    }
    pids.len()
}

/// SIGKILLs `pids` and waits, up to `limit` each, until they are dead. Read the pids before
/// anything else kills the tree: a dying process's command line reads as empty, so it can
/// no longer be found by its profile path.
pub(crate) async fn kill_and_wait(pids: &[u32], limit: std::time::Duration) {
    for pid in pids {
        kill_pid(*pid);
    }
    wait_all_dead(pids, limit).await;
}

/// Waits, up to `limit` each, until every one of `pids` is dead.
pub(crate) async fn wait_all_dead(pids: &[u32], limit: std::time::Duration) {
    for pid in pids {
        wait_dead(*pid, limit).await;
    }
}

/// SIGKILLs process group `pgid` (no-op when it is gone).
pub fn kill_group(pgid: u32) {
    let _ = killpg(Pid::from_raw(pgid as i32), Signal::SIGKILL);
}

/// SIGKILLs `pid` only if it is still a process of the browser on `profile_dir` (its command
/// line names the profile): a pid that is not our child may have been reused.
pub(crate) fn kill_pid_on_profile(pid: u32, profile_dir: &Path) {
    if uses_profile(pid, profile_dir) {
        kill_pid(pid);
    }
}

/// Whether `pid` is a browser process on `profile_dir` (its command line names the
/// profile). A dying process's command line reads as empty: it no longer counts.
pub(crate) fn uses_profile(pid: u32, profile_dir: &Path) -> bool {
    let needle = format!("--user-data-dir={}", profile_dir.display());
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
        cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == needle.as_bytes())
    })
}

/// SIGKILLs one process (no-op when it is gone).
pub(crate) fn kill_pid(pid: u32) {
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
}

/// Waits until `pid` is dead (gone or a zombie), up to `limit`; returns whether it is.
/// A SIGKILL is delivered asynchronously: call this before acting on the death.
pub async fn wait_dead(pid: u32, limit: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    let mut backoff = std::time::Duration::from_micros(200);
    while !is_zombie(pid) {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(std::time::Duration::from_millis(20));
    }
    true
}

/// Gone, or a zombie only waiting to be reaped.
fn is_zombie(pid: u32) -> bool {
    !crate::liveness::pid_alive(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_kills_a_process_by_the_profile_path_on_its_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let arg = format!("--user-data-dir={}", dir.path().display());
        // A shell blocked on its stdin, carrying the argument on its own command line.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read line", &arg])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        assert_eq!(processes_using_profile(dir.path()), vec![pid]);
        assert_eq!(kill_profile_processes(dir.path()), 1);
        child.wait().unwrap();
        assert!(processes_using_profile(dir.path()).is_empty());
    }
}

#[cfg(test)]
mod command_line_tests {
    use super::names_profile;

    #[test]
    fn a_profile_is_named_by_an_argument_or_a_word_of_a_rewritten_command_line() {
        let needle = b"--user-data-dir=/tmp/r/profiles/p-1";
        assert!(names_profile(
            b"/usr/lib/chromium/chromium\0--headless\0--user-data-dir=/tmp/r/profiles/p-1\0",
            needle
        ));
        // A renderer's rewritten command line: one string, words separated by spaces.
        assert!(names_profile(
            b"/usr/lib/chromium/chromium --type=renderer --user-data-dir=/tmp/r/profiles/p-1 --lang=en\0",
            needle
        ));
        // Another profile, and a longer path that starts alike, are not ours.
        assert!(!names_profile(
            b"chromium --user-data-dir=/tmp/r/profiles/p-12 --type=gpu-process\0",
            needle
        ));
        assert!(!names_profile(
            b"chromium\0--user-data-dir=/tmp/r/profiles/p-2\0",
            needle
        ));
    }
}
