//! The soak: a two-thread matrix signalled at seeded moments, TERM, INT and KILL in turn,
//! with every process and root of the run counted after each signal.
//!
//! Deterministic in what it checks, seeded in when it signals: round `r` of seed `s` signals
//! at the same moment of the matrix every time, so a failure names the seed, the round, the
//! signal and the moment. A control round first runs the matrix unsignalled: it must pass and
//! leave nothing, and its length spreads the moments over the whole matrix.
//!
//! - `BF_INTERRUPT_SOAK_ROUNDS` (default 3), `BF_INTERRUPT_SOAK_SEED` (default: the clock),
//!   `BF_INTERRUPT_SOAK_ONLY=r` (one round of the seed, to replay it);
//! - `BF_INTERRUPT_SOAK_FULL=1`: the long matrix (what `cargo xtask interrupt-soak` runs)
//!   instead of the short one.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use browser_fault::runner::ExitCode;
use libtest_mimic::Failed;

use super::{Case, RunProcess, run_processes, signal};

/// The short matrix: a kill-mode recovery, a mid-task second claimant, an in-process worker.
const SHORT: &[&str] = &[
    "soak::after_click::landed",
    "soak::concurrent_profile::mid_task",
    "soak_abort::browser_crash",
];

/// The long matrix: recoveries, every concurrent claimant, a stale restore, in-process
/// workers and an exploration recording with its step trials.
const FULL: &[&str] = &[
    "soak::after_click::landed",
    "soak::after_click::lost",
    "soak::browser_crash",
    "soak::concurrent_profile",
    "soak::stale_profile_restore::other_account",
    "soak_abort::",
    "soak_explored::",
];

/// A process of the run started this long after the signal was started after the stop.
const STARTED_AFTER: Duration = Duration::from_secs(1);

/// Every process of the run but the runner is gone this long after SIGINT or SIGTERM, and
/// every process at all this long after the runner's SIGKILL.
const GONE_WITHIN: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sig {
    Term,
    Int,
    Kill,
}

impl Sig {
    /// Round 1 TERM, round 2 INT, round 3 KILL, and again.
    fn of_round(round: u64) -> Sig {
        [Sig::Term, Sig::Int, Sig::Kill][(round.saturating_sub(1) % 3) as usize]
    }

    fn name(self) -> &'static str {
        match self {
            Sig::Term => "TERM",
            Sig::Int => "INT",
            Sig::Kill => "KILL",
        }
    }

    fn exit_code(self) -> Option<i32> {
        match self {
            Sig::Term => Some(ExitCode::Terminated.code()),
            Sig::Int => Some(ExitCode::Interrupted.code()),
            Sig::Kill => None,
        }
    }
}

/// splitmix64: the moment of round `round` of `seed`.
fn mix(seed: u64, round: u64) -> u64 {
    let mut z = seed
        .wrapping_add(round.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The moment round `round` signals: from 200 ms to the end of a matrix of `length`.
fn moment(seed: u64, round: u64, length: Duration) -> Duration {
    let span = length.as_millis().max(1) as u64;
    Duration::from_millis(200 + mix(seed, round) % span)
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// What the rounds found, summed.
#[derive(Debug, Default)]
struct Totals {
    rounds: usize,
    by_signal: [usize; 3],
    /// Rounds whose runner had finished before its moment came.
    late: usize,
    /// Processes of the run alive past [`GONE_WITHIN`].
    alive: usize,
    /// Roots left once the runner was gone (after the next run's sweep, for KILL).
    roots: usize,
    /// Processes of the run started past [`STARTED_AFTER`].
    started_after: usize,
    failures: Vec<String>,
}

pub(super) fn soak() -> Result<(), Failed> {
    let rounds = env_u64("BF_INTERRUPT_SOAK_ROUNDS").unwrap_or(3);
    let seed = env_u64("BF_INTERRUPT_SOAK_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    let only = env_u64("BF_INTERRUPT_SOAK_ONLY");
    let full = std::env::var_os("BF_INTERRUPT_SOAK_FULL").is_some_and(|v| v == "1");
    let matrix = if full { FULL } else { SHORT };
    eprintln!(
        "interrupt soak: seed {seed}, {rounds} round(s) of the {} matrix",
        if full { "long" } else { "short" }
    );
    let length = control_round(matrix)?;
    eprintln!(
        "interrupt soak: control round passed in {:.1} s, nothing left",
        length.as_secs_f64()
    );
    let mut totals = Totals::default();
    for round in (1..=rounds).filter(|r| only.is_none_or(|o| o == *r)) {
        let sig = Sig::of_round(round);
        let at = moment(seed, round, length);
        let found = one_round(matrix, sig, at);
        totals.rounds += 1;
        totals.by_signal[sig as usize] += 1;
        let what = format!(
            "round {round} of seed {seed}: SIG{} at {:.3} s of a {:.1} s matrix",
            sig.name(),
            at.as_secs_f64(),
            length.as_secs_f64()
        );
        match found {
            Ok(r) => {
                totals.late += usize::from(r.late);
                totals.alive += r.alive;
                totals.roots += r.roots;
                totals.started_after += r.started_after;
                eprintln!(
                    "interrupt soak: {what}: {}{} process(es) alive after {} s, {} root(s) left, {} started after the signal",
                    if r.late { "(the run had ended) " } else { "" },
                    r.alive,
                    GONE_WITHIN.as_secs(),
                    r.roots,
                    r.started_after
                );
                if !r.problems.is_empty() {
                    totals.failures.push(format!(
                        "{what}: {}\n  replay: BF_INTERRUPT_SOAK_SEED={seed} BF_INTERRUPT_SOAK_ONLY={round}{}",
                        r.problems.join("; "),
                        if full { " BF_INTERRUPT_SOAK_FULL=1" } else { "" }
                    ));
                }
            }
            Err(e) => totals
                .failures
                .push(format!("{what}: {}", e.message().unwrap_or("failed"))),
        }
    }
    eprintln!(
        "interrupt soak: {} round(s) (TERM {}, INT {}, KILL {}; {} after the run had ended), seed {seed}: {} process(es) alive after {} s, {} root(s) left, {} process(es) started more than {} s after a signal, {} failed round(s)",
        totals.rounds,
        totals.by_signal[Sig::Term as usize],
        totals.by_signal[Sig::Int as usize],
        totals.by_signal[Sig::Kill as usize],
        totals.late,
        totals.alive,
        GONE_WITHIN.as_secs(),
        totals.roots,
        totals.started_after,
        STARTED_AFTER.as_secs(),
        totals.failures.len()
    );
    if totals.failures.is_empty() {
        Ok(())
    } else {
        Err(totals.failures.join("\n").into())
    }
}

fn runner(case: &Case, matrix: &[&str]) -> Result<Child, Failed> {
    let stderr = File::create(case.tmp.path().join("runner.stderr"))
        .map_err(|e| format!("the runner's stderr file: {e}"))?;
    let mut args = vec!["--test-threads=2"];
    args.extend_from_slice(matrix);
    case.runner(&args)
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("the runner did not start: {e}").into())
}

fn runner_stderr(case: &Case) -> String {
    std::fs::read_to_string(case.tmp.path().join("runner.stderr")).unwrap_or_default()
}

/// Runs the matrix unsignalled: it must pass and leave nothing. Returns its length.
fn control_round(matrix: &[&str]) -> Result<Duration, Failed> {
    let case = Case::new();
    let started = Instant::now();
    let mut child = runner(&case, matrix)?;
    let status = child.wait().map_err(|e| format!("the control run: {e}"))?;
    let length = started.elapsed();
    if !status.success() {
        return Err(format!(
            "the control run (no signal) failed with {status}; stderr:\n{}",
            runner_stderr(&case)
        )
        .into());
    }
    let left = processes_left(&case);
    let roots = case.roots();
    if !left.is_empty() || !roots.is_empty() {
        return Err(format!(
            "the control run (no signal) left processes {left:?} and roots {roots:?}"
        )
        .into());
    }
    Ok(length)
}

fn processes_left(case: &Case) -> Vec<(u32, String)> {
    run_processes(case.tmp.path())
        .into_iter()
        .map(|p| (p.pid, p.name))
        .collect()
}

/// What one round found.
#[derive(Debug, Default)]
struct Round {
    late: bool,
    alive: usize,
    roots: usize,
    started_after: usize,
    problems: Vec<String>,
    /// What the next run's sweep said (SIGKILL rounds).
    sweep_said: String,
}

/// Clock ticks since boot, now, as a process's start time counts them: the start time of a
/// process started now (`/proc/uptime` may count from another boot in a container).
fn ticks_now() -> u64 {
    let Ok(mut probe) = std::process::Command::new("true").spawn() else {
        return 0;
    };
    // Readable until it is reaped, even once it has exited.
    let ticks = std::fs::read_to_string(format!("/proc/{}/stat", probe.id()))
        .ok()
        .and_then(|stat| {
            let close = stat.rfind(')')?;
            stat.get(close + 2..)?.split(' ').nth(19)?.parse().ok()
        })
        .unwrap_or(0);
    let _ = probe.wait();
    ticks
}

/// Watches the processes of the run from the signal on: every one seen, by pid.
struct Watch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<RunProcess>>,
}

impl Watch {
    fn start(case: &Case) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let dir: PathBuf = case.tmp.path().to_owned();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut seen: Vec<RunProcess> = Vec::new();
            while !flag.load(Ordering::SeqCst) {
                for p in run_processes(&dir) {
                    if !seen
                        .iter()
                        .any(|s| s.pid == p.pid && s.start_ticks == p.start_ticks)
                    {
                        seen.push(p);
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            seen
        });
        Watch { stop, thread }
    }

    fn finish(self) -> Vec<RunProcess> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap_or_default()
    }
}

fn one_round(matrix: &[&str], sig: Sig, at: Duration) -> Result<Round, Failed> {
    let case = Case::new();
    let started = Instant::now();
    let mut child = runner(&case, matrix)?;
    let mut round = Round::default();
    // Until the moment, unless the run ends first.
    let mut ended: Option<ExitStatus> = None;
    while started.elapsed() < at {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            ended = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Some(status) = ended {
        round.late = true;
        if !status.success() {
            round.problems.push(format!(
                "the run ended on its own before its moment, with {status}"
            ));
        }
        count_leftovers(&case, &mut round);
        return Ok(round);
    }
    let mut watch = Some(Watch::start(&case));
    let signalled_at = Instant::now();
    let signal_ticks = ticks_now();
    signal(&child, sig.name())?;
    let runner_pid = child.id();
    let mut seen = Vec::new();
    let others_gone = |case: &Case| {
        run_processes(case.tmp.path())
            .iter()
            .all(|p| p.pid == runner_pid)
    };
    match sig.exit_code() {
        Some(code) => {
            // Every process but the runner (still removing roots) gone within 2 s.
            let deadline = signalled_at + GONE_WITHIN;
            while Instant::now() < deadline && !others_gone(&case) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let alive: Vec<(u32, String)> = processes_left(&case)
                .into_iter()
                .filter(|(pid, _)| *pid != runner_pid)
                .collect();
            if !alive.is_empty() {
                round.alive += alive.len();
                round.problems.push(format!(
                    "processes of the run alive {} s after the signal: {alive:?}",
                    GONE_WITHIN.as_secs()
                ));
            }
            let status = wait_within(&mut child, Duration::from_secs(30))?;
            let stderr = runner_stderr(&case);
            // The signal met a run on its way out: every trial had ended ("done in") and the
            // runner was exiting with the run's own result, which stands (nothing of the run
            // outlived the signal by 2 s, checked above; its leftovers are counted below).
            let ended_first = status.success()
                && stderr.contains("done in")
                && !stderr.contains("interrupted by SIG");
            if ended_first {
                round.late = true;
            } else if status.code() != Some(code) {
                round.problems.push(format!(
                    "exit {:?}, expected {code}; stderr tail:\n{}",
                    status.code(),
                    tail(&stderr)
                ));
            } else if !stderr.contains(&format!("interrupted by SIG{}", sig.name()))
                || !stderr.contains("removed with proof")
                || !stderr.contains("nothing kept")
            {
                round.problems.push(format!(
                    "the runner did not say it removed everything; stderr tail:\n{}",
                    tail(&stderr)
                ));
            }
        }
        None => {
            let _ = child.wait();
            // The processes of this run, not the next run's.
            seen = watch.take().map(Watch::finish).unwrap_or_default();
            let deadline = signalled_at + GONE_WITHIN;
            while Instant::now() < deadline && !processes_left(&case).is_empty() {
                std::thread::sleep(Duration::from_millis(20));
            }
            let alive = processes_left(&case);
            if !alive.is_empty() {
                round.alive += alive.len();
                round.problems.push(format!(
                    "processes of the SIGKILLed run alive {} s after: {alive:?}",
                    GONE_WITHIN.as_secs()
                ));
            }
            // The next run's sweep, before anything else (even for `--list`).
            let next = case
                .runner(&["--list"])
                .output()
                .map_err(|e| format!("the next run: {e}"))?;
            if !next.status.success() {
                round.problems.push(format!(
                    "the next run's `--list` failed: {}",
                    String::from_utf8_lossy(&next.stderr)
                ));
            }
            // What the sweep kept, and why: the diagnosis of a root left behind.
            round.sweep_said = String::from_utf8_lossy(&next.stderr)
                .lines()
                .filter(|l| l.contains("browser-fault: kept") || l.contains("swept"))
                .collect::<Vec<_>>()
                .join("\n");
        }
    }
    if let Some(watch) = watch.take() {
        seen = watch.finish();
    }
    let limit = signal_ticks + STARTED_AFTER.as_millis() as u64 / 10;
    let late: Vec<String> = seen
        .iter()
        .filter(|p| p.start_ticks > limit)
        .map(|p| {
            format!(
                "{} ({}) {:.2} s after",
                p.pid,
                p.name,
                (p.start_ticks - signal_ticks) as f64 / 100.0
            )
        })
        .collect();
    if !late.is_empty() {
        round.started_after = late.len();
        round.problems.push(format!(
            "processes of the run started after the signal: {late:?}"
        ));
    }
    count_leftovers(&case, &mut round);
    Ok(round)
}

/// Processes still alive and roots still there, once the runner is gone.
fn count_leftovers(case: &Case, round: &mut Round) {
    let alive = processes_left(case);
    if !alive.is_empty() && round.alive == 0 {
        round.alive = alive.len();
        round
            .problems
            .push(format!("processes of the run left: {alive:?}"));
    }
    let roots = case.roots();
    if !roots.is_empty() {
        round.roots = roots.len();
        let held: Vec<String> = roots
            .iter()
            .map(|r| format!("{}: {:?}", r.display(), tree(r)))
            .collect();
        round.problems.push(format!(
            "trial roots left: {roots:?}; they hold {}; the next run's sweep said: {:?}",
            held.join(", "),
            round.sweep_said
        ));
    }
}

/// The paths under `dir`, relative to it: what a root left behind holds.
fn tree(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            found.push(
                path.strip_prefix(dir)
                    .unwrap_or(&path)
                    .display()
                    .to_string(),
            );
            if entry.file_type().is_ok_and(|t| t.is_dir()) && found.len() < 40 {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

fn wait_within(child: &mut Child, limit: Duration) -> Result<ExitStatus, Failed> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the runner did not exit within {limit:?} of the signal").into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}
