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

/// Set in the environment of the harness's own chromedriver, and so of the Chromium it
/// starts: what tells the harness's processes in a worker's process group from the agent's
/// (an agent's own chromedriver, a helper it spawned), whose environment is the worker's.
pub(crate) const HARNESS_PROCESS_ENV: &str = "BROWSER_FAULT_HARNESS_PROCESS";

/// The live processes of process group `pgid` that the harness did not start, left running
/// after the group's leader (a worker) exited on its own: what the agent left behind.
///
/// The harness's are those with [`HARNESS_PROCESS_ENV`] in their environment, and Chromium's
/// helpers (which start with a cleaned environment) by a profile under `profile_root` on their
/// command line; a browser on a trial profile is counted as a leak by the profile scan
/// instead. Each other member is given `grace` to finish dying (one the agent killed a moment
/// before it exited, or a helper whose command line already reads as empty); those still
/// alive then are SIGKILLed, waited for, and returned by name (`/proc/<pid>/comm`, never a
/// command line: that may carry a secret).
pub(crate) async fn strays_of_group(
    pgid: u32,
    profile_root: &Path,
    grace: std::time::Duration,
) -> Vec<String> {
    let on_a_profile = format!("--user-data-dir={}/", profile_root.display());
    let candidates: Vec<(u32, String)> = group_members(pgid)
        .into_iter()
        .filter(|pid| !harness_started(*pid) && !names_prefix(*pid, on_a_profile.as_bytes()))
        .map(|pid| (pid, comm(pid)))
        .collect();
    let mut strays = Vec::new();
    for (pid, name) in candidates {
        if !wait_dead(pid, grace).await && in_group(pid, pgid) {
            kill_pid(pid);
            wait_dead(pid, grace).await;
            strays.push(name);
        }
    }
    strays.sort();
    strays
}

/// The live pids whose process group is `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    live_pids().filter(|pid| in_group(*pid, pgid)).collect()
}

/// Whether `pid`'s process group is `pgid` (`/proc/<pid>/stat`'s fifth field; the second,
/// the command name, may hold spaces and parentheses, so the fields after the last `)`).
fn in_group(pid: u32, pgid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|g| g.parse::<u32>().ok())
            == Some(pgid)
    })
}

/// Whether a word of `pid`'s command line starts with `prefix`.
fn names_prefix(pid: u32, prefix: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
        cmdline
            .split(|b| *b == 0 || *b == b' ')
            .any(|word| word.starts_with(prefix))
    })
}

/// Whether `pid`'s environment carries [`HARNESS_PROCESS_ENV`].
fn harness_started(pid: u32) -> bool {
    let needle = format!("{HARNESS_PROCESS_ENV}=1");
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == needle.as_bytes()))
}

/// A process's command name, or `?` once it is gone.
fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim_end().to_owned())
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "?".to_owned())
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

/// The byte strings by which a process names `path` in its environment or command line:
/// the path as given and, where it differs, its canonical form.
pub(crate) fn path_needles(path: &Path) -> Vec<Vec<u8>> {
    let mut needles = vec![path.as_os_str().as_encoded_bytes().to_vec()];
    if let Ok(canonical) = std::fs::canonicalize(path) {
        let canonical = canonical.as_os_str().as_encoded_bytes().to_vec();
        if canonical != needles[0] {
            needles.push(canonical);
        }
    }
    needles
}

/// The live (not zombie) processes, other than `me`, that are in one of `groups` or whose
/// environment or command line holds one of `needles` (a trial root: chromedrivers and
/// Chromiums run with `TMPDIR` in it and their profile in it): (pid, process group).
pub(crate) fn processes_naming(needles: &[Vec<u8>], groups: &[u32], me: u32) -> Vec<(u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) S ppid pgid …`: the name may hold anything but a last ')'.
            let mut rest = stat.get(stat.rfind(')')? + 2..)?.split(' ');
            let state = rest.next()?;
            let pgid: u32 = rest.nth(1)?.parse().ok()?;
            if state == "Z" || state == "X" {
                return None;
            }
            let ours = groups.contains(&pgid)
                || [
                    format!("/proc/{pid}/environ"),
                    format!("/proc/{pid}/cmdline"),
                ]
                .iter()
                .filter_map(|f| std::fs::read(f).ok())
                .any(|bytes| needles.iter().any(|n| contains(&bytes, n)));
            ours.then_some((pid, pgid))
        })
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
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
mod group_tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn names_what_the_agent_left_in_its_group_and_leaves_the_harnesss_own_alone() {
        let mut leader = Command::new("sleep")
            .arg("300")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = leader.id();
        let mut agents = Command::new("sleep")
            .arg("301")
            .process_group(pgid as i32)
            .spawn()
            .unwrap();
        let mut harness = Command::new("sleep")
            .arg("302")
            .env(HARNESS_PROCESS_ENV, "1")
            .process_group(pgid as i32)
            .spawn()
            .unwrap();
        let root = tempfile::tempdir().unwrap();
        let helper_arg = format!("--user-data-dir={}/p-1", root.path().display());
        // A shell blocked on its stdin (a builtin: nothing is exec'd), carrying the argument.
        let mut helper = Command::new("sh")
            .args(["-c", "read line", &helper_arg])
            .stdin(std::process::Stdio::piped())
            .process_group(pgid as i32)
            .spawn()
            .unwrap();
        leader.kill().unwrap();
        leader.wait().unwrap();
        let strays = strays_of_group(pgid, root.path(), Duration::from_millis(100)).await;
        assert_eq!(strays, ["sleep"]);
        helper.kill().unwrap();
        helper.wait().unwrap();
        // The agent's was killed; the harness's is the harness's to end.
        agents.wait().unwrap();
        assert!(harness.try_wait().unwrap().is_none());
        harness.kill().unwrap();
        harness.wait().unwrap();
        assert!(
            strays_of_group(pgid, root.path(), Duration::from_millis(100))
                .await
                .is_empty()
        );
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

#[cfg(test)]
mod needle_tests {
    use super::contains;

    #[test]
    fn a_root_is_found_anywhere_in_an_environment_block() {
        let environ = b"HOME=/root\0TMPDIR=/tmp/browser-fault-0/0a1b2c3d/tmp-w1\0";
        assert!(contains(environ, b"/tmp/browser-fault-0/0a1b2c3d"));
        assert!(!contains(environ, b"/tmp/browser-fault-0/ffffffff"));
        assert!(!contains(environ, b""));
    }
}
