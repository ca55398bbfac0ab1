//! `cargo xtask soak N [--load]`: the reference agent's whole matrix N times, optionally with
//! a second copy of the matrix running beside it the whole time (2 cores, both busy). Every
//! failed trial of a correct agent is a false positive: the command counts trials and
//! failures of both matrices, then the processes, profile locks and folders the runs left,
//! and fails on any of them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Instant;

use browser_fault::_internal::liveness::process_start_ticks;

/// What one matrix round reported.
#[derive(Debug, Default, Clone, Copy)]
struct Round {
    passed: usize,
    failed: usize,
    /// The test binary exited non-zero with no failed trial (a gate, a crash).
    broken: bool,
}

/// Totals of one stream of rounds.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    rounds: usize,
    trials: usize,
    failed: usize,
    broken_rounds: usize,
}

impl Totals {
    fn add(&mut self, r: Round) {
        self.rounds += 1;
        self.trials += r.passed + r.failed;
        self.failed += r.failed;
        self.broken_rounds += usize::from(r.broken);
    }
}

pub(crate) fn soak(ws: &Path, rounds: usize, load: bool) -> Result<(), u8> {
    // Build once, so that neither stream measures a compile.
    if !super::run(super::reference_matrix(ws).arg("--no-run")) {
        return Err(1);
    }
    let out = ws.join("target/browser-fault-soak");
    let _ = std::fs::remove_dir_all(&out);
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let background = load.then(|| {
        let stop = stop.clone();
        let ws = ws.to_owned();
        let dir = out.join("load");
        thread::spawn(move || {
            let mut totals = Totals::default();
            while !stop.load(Ordering::SeqCst) {
                let r = matrix_round(&ws, &dir.join(format!("r{}", totals.rounds + 1)));
                if r.failed > 0 || r.broken {
                    eprintln!(
                        "soak: load round {} had {} failed trial(s)",
                        totals.rounds + 1,
                        r.failed
                    );
                }
                totals.add(r);
            }
            totals
        })
    });
    let mut fore = Totals::default();
    for i in 1..=rounds {
        let r = matrix_round(ws, &out.join(format!("r{i}")));
        eprintln!(
            "soak: round {i} of {rounds}: {} passed, {} failed{}",
            r.passed,
            r.failed,
            if r.broken {
                " (the run itself failed)"
            } else {
                ""
            }
        );
        fore.add(r);
    }
    stop.store(true, Ordering::SeqCst);
    let load_totals = background.map(|h| h.join().unwrap_or_default());
    let wall = started.elapsed();

    let leftovers = leftovers();
    println!(
        "\nsoak: {} round(s) of the reference matrix{}, {:.0} s",
        fore.rounds,
        if load {
            " beside a second matrix (load)"
        } else {
            ""
        },
        wall.as_secs_f64()
    );
    println!(
        "  measured matrix: {} trials, {} failed (false positives), {} round(s) whose run failed otherwise",
        fore.trials, fore.failed, fore.broken_rounds
    );
    if let Some(l) = load_totals {
        println!(
            "  load matrix:     {} trials in {} round(s), {} failed, {} round(s) whose run failed otherwise",
            l.trials, l.rounds, l.failed, l.broken_rounds
        );
    }
    println!(
        "  left behind: {} browser or driver process(es), {} trial folder(s), {} profile lock(s)",
        leftovers.processes, leftovers.folders, leftovers.locks
    );
    let load_bad = load_totals.is_some_and(|l| l.failed > 0 || l.broken_rounds > 0);
    if fore.failed > 0 || fore.broken_rounds > 0 || load_bad || leftovers.any() {
        println!("soak FAILED");
        return Err(1);
    }
    println!("soak passed");
    Ok(())
}

/// One run of the reference matrix, evidence under `out`, snapshots off.
fn matrix_round(ws: &Path, out: &Path) -> Round {
    let output = super::reference_matrix(ws)
        .env("BROWSER_FAULT_OUT", out)
        .stdin(Stdio::null())
        .output();
    let Ok(output) = output else {
        return Round {
            broken: true,
            ..Round::default()
        };
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let mut round = Round::default();
    for line in text.lines().filter(|l| l.starts_with("test result:")) {
        round.passed += count_before(line, " passed");
        round.failed += count_before(line, " failed");
    }
    for line in text.lines().filter(|l| l.ends_with("FAILED")) {
        eprintln!("soak: {line}");
    }
    round.broken = !output.status.success() && round.failed == 0;
    if round.broken {
        eprintln!(
            "soak: the run failed: {}",
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    round
}

/// `7` in "test result: ok. 7 passed; 0 failed; …".
fn count_before(line: &str, what: &str) -> usize {
    line.split(['.', ';'])
        .find_map(|part| part.trim().strip_suffix(what.trim()).map(str::trim))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[derive(Debug, Default)]
struct Leftovers {
    processes: usize,
    folders: usize,
    locks: usize,
}

impl Leftovers {
    fn any(&self) -> bool {
        self.processes + self.folders + self.locks > 0
    }
}

/// What the soak's runs left in the trial-root base: the roots no live process owns (a
/// root whose owner lives belongs to another run on the machine, not to the soak, whose
/// runs have all ended), the processes whose command line names one, and their profiles'
/// locks.
fn leftovers() -> Leftovers {
    let base = trial_root_base();
    let folders: Vec<PathBuf> = std::fs::read_dir(&base)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !owner_lives(p))
        .collect();
    let needles: Vec<String> = folders
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let processes = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| {
                    let c = String::from_utf8_lossy(&c);
                    needles.iter().any(|n| c.contains(n.as_str()))
                })
                .unwrap_or(false)
        })
        .count();
    let locks = folders
        .iter()
        .flat_map(|root| {
            std::fs::read_dir(root.join("profiles"))
                .into_iter()
                .flatten()
        })
        .flatten()
        .filter(|e| e.path().join("SingletonLock").symlink_metadata().is_ok())
        .count();
    Leftovers {
        processes,
        folders: folders.len(),
        locks,
    }
}

/// Whether the process named by `root`'s `owner.json` (pid and start time, as the harness
/// writes it) still runs on this host.
fn owner_lives(root: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(root.join("owner.json")) else {
        return false;
    };
    let Ok(owner) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    let (Some(pid), Some(ticks)) = (owner["pid"].as_u64(), owner["start_ticks"].as_u64()) else {
        return false;
    };
    u32::try_from(pid).is_ok_and(|pid| process_start_ticks(pid) == Some(ticks))
}

/// `$TMPDIR/browser-fault-<uid>`, as the harness names it.
fn trial_root_base() -> PathBuf {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    std::env::temp_dir().join(format!("browser-fault-{uid}"))
}

#[cfg(test)]
mod tests {
    use super::{count_before, owner_lives};

    #[test]
    fn a_root_is_owned_while_its_owner_runs_with_the_start_time_it_wrote() {
        let root = std::env::temp_dir().join(format!("xtask-owner-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        assert!(!owner_lives(&root), "no owner.json: nobody's");
        let pid = std::process::id();
        let ticks = super::process_start_ticks(pid).unwrap();
        std::fs::write(
            root.join("owner.json"),
            format!(r#"{{"pid":{pid},"start_ticks":{ticks},"host":"h"}}"#),
        )
        .unwrap();
        assert!(owner_lives(&root));
        std::fs::write(
            root.join("owner.json"),
            format!(r#"{{"pid":{pid},"start_ticks":{},"host":"h"}}"#, ticks + 1),
        )
        .unwrap();
        assert!(!owner_lives(&root), "a reused pid is not the owner");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn reads_the_counts_of_a_libtest_result_line() {
        let line = "test result: FAILED. 22 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 70.1s";
        assert_eq!(count_before(line, " passed"), 22);
        assert_eq!(count_before(line, " failed"), 1);
        let ok = "test result: ok. 23 passed; 0 failed; 0 ignored";
        assert_eq!(count_before(ok, " passed"), 23);
        assert_eq!(count_before(ok, " failed"), 0);
    }
}
