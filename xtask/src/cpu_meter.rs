//! The CPU time a command's whole process tree spends, its orphans included (a Chromium
//! whose chromedriver was killed is reparented away from us, so `RUSAGE_CHILDREN` misses it).
//!
//! As root on a cgroup v1 `cpuacct` hierarchy, each run gets a group of its own: this process
//! joins it just long enough to spawn the command (a child starts in its parent's group, so
//! nothing the command starts can escape it), then goes back, and the group's
//! `cpuacct.usage` is the tree's CPU time. Anywhere else the meter falls back to the whole
//! machine's busy time from `/proc/stat`, which counts whatever else runs beside; the output
//! says which meter it used.

use std::path::{Path, PathBuf};
use std::process::Command;

const CPUACCT: &str = "/sys/fs/cgroup/cpuacct";

pub(crate) enum CpuMeter {
    /// The `cpuacct` mount, and the group this process lives in.
    Cgroup { root: PathBuf, home: PathBuf },
    /// The machine's busy time.
    Machine,
}

impl CpuMeter {
    pub(crate) fn new() -> CpuMeter {
        let root = PathBuf::from(CPUACCT);
        let home = std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                    controllers
                        .split(',')
                        .any(|c| c == "cpuacct")
                        .then(|| root.join(path.trim_start_matches('/')))
                })
            });
        match home {
            Some(home) if probe(&root) => CpuMeter::Cgroup { root, home },
            _ => CpuMeter::Machine,
        }
    }

    pub(crate) fn describe(&self) -> &'static str {
        match self {
            CpuMeter::Cgroup { .. } => "each side's own process tree (a cpuacct cgroup)",
            CpuMeter::Machine => {
                "the whole machine's busy time (/proc/stat; no cpuacct cgroup here), anything running beside included"
            }
        }
    }

    /// Runs `cmd` to its end: whether it succeeded, and the CPU seconds it took (`None` when
    /// the meter failed).
    pub(crate) fn run(&self, cmd: &mut Command, label: &str) -> (bool, Option<f64>) {
        match self {
            CpuMeter::Cgroup { root, home } => {
                let group = root.join(format!(
                    "browser-fault-bench-{}-{label}",
                    std::process::id()
                ));
                if std::fs::create_dir(&group).is_err() {
                    return (super::run(cmd), None);
                }
                let me = std::process::id().to_string();
                let joined = std::fs::write(group.join("cgroup.procs"), &me).is_ok();
                let child = cmd.spawn();
                // Back home before anything else: only the command's tree stays counted.
                let _ = std::fs::write(home.join("cgroup.procs"), &me);
                let ok = child.and_then(|mut c| c.wait()).is_ok_and(|s| s.success());
                let used = std::fs::read_to_string(group.join("cpuacct.usage"))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .filter(|_| joined)
                    .map(|ns| ns as f64 / 1e9);
                // Refused while a straggler lives in it; it is empty once the tree is gone.
                let _ = std::fs::remove_dir(&group);
                (ok, used)
            }
            CpuMeter::Machine => {
                let before = machine_busy();
                let ok = super::run(cmd);
                let used = before.zip(machine_busy()).map(|(a, b)| b - a);
                (ok, used)
            }
        }
    }
}

/// Whether a group can be made, joined and left here.
fn probe(root: &Path) -> bool {
    let group = root.join(format!("browser-fault-bench-probe-{}", std::process::id()));
    let ok = std::fs::create_dir(&group).is_ok() && group.join("cpuacct.usage").is_file();
    let _ = std::fs::remove_dir(&group);
    ok
}

/// The machine's busy CPU seconds since boot (user, nice, system, irq, softirq, steal).
fn machine_busy() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let busy: u64 = [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| ticks.get(i))
        .sum();
    // USER_HZ is 100 on every Linux this runs on.
    Some(busy as f64 / 100.0)
}
