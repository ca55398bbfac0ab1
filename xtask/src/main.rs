//! `cargo xtask drill` and `cargo xtask test`: a preflight that finds (or installs)
//! Chromium and chromedriver, then the real work.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use browser_fault::{BrowserBinaries, PreflightError};

mod bench_peer;
mod cpu_meter;
mod soak;

const USAGE: &str = "usage: cargo xtask <drill | test | preflight | matrix [N] | soak [N] [--load] | bench-peer [N] | interrupt-soak [ROUNDS] [SEED]>
  drill            the acceptance drill: crash the reference agent at each step, print the matrix
  test             the whole test suite (what CI runs)
  preflight        find Chromium and chromedriver, installing Debian's packages when missing
  matrix [N]       the reference agent's full matrix N times in a row (default 10): no flake allowed
  soak [N] [--load]  the matrix N times (default 13, about 300 trials), with --load beside a
                   second matrix the whole time; counts false positives and leftovers
  bench-peer [N]   the drill against the same trials hand-written with Playwright (bench/peer),
                   N interleaved rounds (default 6): each round's ratio and the median
  interrupt-soak [ROUNDS] [SEED]
                   a two-thread matrix (recoveries, abort-mode workers, concurrent claimants, an
                   exploration recording) signalled ROUNDS times (default 50) at moments the
                   SEED picks (default: the clock), TERM, INT and KILL in turn; fails on any
                   process of the run alive 2 s after a signal, any root left (after the next
                   run's sweep, for KILL) or any process started after a signal";

/// The drill's steps: (what it proves, the trial that proves it).
const DRILL: &[(&str, &str)] = &[
    (
        "start with a known account and object; persist run, session, generation, key; kill after target verification; verify identity again",
        "send_message::after_target_verified",
    ),
    (
        "the world changes during the crash: trusting the old verification is caught",
        "send_message::after_target_verified::account_switched",
    ),
    (
        "kill right after a known mutation; reconcile read-only; classify confirmed",
        "send_message::after_click::landed",
    ),
    (
        "kill after a request that never landed; classify UNKNOWN, never retry blindly",
        "send_message::after_click::lost",
    ),
    (
        "kill after the site accepted, before REMOTE_CONFIRMED is durable; reconcile",
        "send_message::after_remote_effect",
    ),
    (
        "restore an older profile signed in as another account: fail closed",
        "send_message::stale_profile_restore::other_account",
    ),
    (
        "restore an older generation of the same account: fail closed",
        "send_message::stale_profile_restore::older_generation",
    ),
    (
        "kill the browser under a live worker; recover the stale lock; no duplicate",
        "send_message::browser_crash",
    ),
    (
        "two workers on one profile: exactly one holds the lease",
        "send_message::concurrent_profile",
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("drill") => preflight().and_then(|_| drill()),
        Some("preflight") => preflight().map(drop),
        Some("test") => preflight()
            .and_then(|_| grid_preflight())
            .and_then(|_| test()),
        Some("matrix") => {
            preflight().and_then(|_| matrix(args.get(1).and_then(|n| n.parse().ok()).unwrap_or(10)))
        }
        Some("soak") => {
            let rounds = args
                .iter()
                .skip(1)
                .find_map(|a| a.parse().ok())
                .unwrap_or(13);
            let load = args.iter().any(|a| a == "--load");
            preflight().and_then(|_| soak::soak(&workspace(), rounds, load))
        }
        Some("interrupt-soak") => preflight().and_then(|_| {
            interrupt_soak(
                &workspace(),
                args.get(1).and_then(|n| n.parse().ok()).unwrap_or(50),
                args.get(2).and_then(|n| n.parse().ok()),
            )
        }),
        Some("bench-peer") => preflight().and_then(|_| {
            bench_peer::bench_peer(
                &workspace(),
                args.get(1).and_then(|n| n.parse().ok()).unwrap_or(6),
            )
        }),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => ExitCode::from(code),
    }
}

/// Finds Chromium and chromedriver; installs Debian's packages when they are missing and we
/// may (root, apt-get present); otherwise says what to do.
fn preflight() -> Result<BrowserBinaries, u8> {
    match BrowserBinaries::discover() {
        Ok(b) => {
            eprintln!(
                "preflight: chromium {} and chromedriver {} (major versions match)",
                b.chrome_version, b.chromedriver_version
            );
            Ok(b)
        }
        Err(PreflightError::NotFound { .. }) if can_apt() => {
            eprintln!(
                "preflight: chromium or chromedriver missing; installing the Debian packages `chromium` and `chromium-driver` with apt-get"
            );
            let ok = run(Command::new("apt-get").arg("update").arg("-qq"))
                && run(Command::new("apt-get")
                    .args(["install", "-y", "-qq", "chromium", "chromium-driver"])
                    .env("DEBIAN_FRONTEND", "noninteractive"));
            if !ok {
                eprintln!(
                    "preflight: apt-get failed; install `chromium` and `chromium-driver`, or set BROWSER_FAULT_CHROME and BROWSER_FAULT_CHROMEDRIVER"
                );
                return Err(4);
            }
            BrowserBinaries::discover().map_err(|e| {
                eprintln!("preflight: {e}");
                4
            })
        }
        Err(e) => {
            eprintln!("preflight: {e}");
            Err(4)
        }
    }
}

/// Finds the JRE the grid suite runs Selenium Grid on; installs Debian's
/// `openjdk-17-jre-headless` when it is missing and we may (root, apt-get present). Without
/// it the grid suite says why it skipped (and fails under `CI=true`).
fn grid_preflight() -> Result<(), u8> {
    let has_java = || {
        Command::new("java")
            .arg("-version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if has_java() {
        eprintln!("preflight: java found (the grid suite runs Selenium Grid on it)");
        return Ok(());
    }
    if !can_apt() {
        eprintln!(
            "preflight: java missing; the grid suite will be skipped (install a JRE 17+, e.g. Debian's openjdk-17-jre-headless)"
        );
        return Ok(());
    }
    eprintln!(
        "preflight: java missing; installing the Debian package `openjdk-17-jre-headless` with apt-get (for the grid suite)"
    );
    let ok = run(Command::new("apt-get").arg("update").arg("-qq"))
        && run(Command::new("apt-get")
            .args(["install", "-y", "-qq", "openjdk-17-jre-headless"])
            .env("DEBIAN_FRONTEND", "noninteractive"));
    if !ok || !has_java() {
        eprintln!("preflight: apt-get failed; install `openjdk-17-jre-headless`");
        return Err(4);
    }
    Ok(())
}

fn can_apt() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0"))
        .unwrap_or(false);
    root && Path::new("/usr/bin/apt-get").exists()
}

pub(crate) fn run(cmd: &mut Command) -> bool {
    cmd.status().map(|s| s.success()).unwrap_or(false)
}

/// `cargo test -q -p browser-fault-suites --test reference` in `ws`, snapshots off: the
/// reference agent's matrix, as the drill, the matrix and the soak run it.
pub(crate) fn reference_matrix(ws: &Path) -> Command {
    suite(ws, "reference", &[])
}

/// The reference agent's explored trials (`every_step`, `depth = 2`, `seeded`), from the
/// explore suite.
fn explored_reference(ws: &Path) -> Command {
    suite(ws, "explore", &["--", "careful::"])
}

/// `cargo test -q` of one test target of the suites, without snapshots.
fn suite(ws: &Path, target: &str, rest: &[&str]) -> Command {
    let mut cmd = cargo();
    cmd.current_dir(ws)
        .args(["test", "-q", "-p", "browser-fault-suites", "--test", target])
        .args(rest)
        .env("BROWSER_FAULT_SNAPSHOTS", "");
    cmd
}

pub(crate) fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The whole suite: every crate's tests and the suites, which include the downstream example
/// (`suites/tests/downstream.rs` builds it and expects its faulty agent to fail).
fn test() -> Result<(), u8> {
    let ws = workspace();
    if !run(cargo().current_dir(&ws).args(["test", "--workspace"])) {
        return Err(1);
    }
    Ok(())
}

/// The reference agent's full matrix, `n` times in a row.
fn matrix(n: usize) -> Result<(), u8> {
    let ws = workspace();
    let started = Instant::now();
    for i in 1..=n {
        eprintln!("matrix: round {i} of {n}");
        // The named trials, then every explored trial of the reference agent (each step of
        // its recording, its recovery crashed at each point, seeded schedules).
        let ok = run(&mut reference_matrix(&ws)) && run(&mut explored_reference(&ws));
        if !ok {
            eprintln!("matrix: round {i} failed: a flaky trial is a bug in the harness");
            return Err(1);
        }
    }
    eprintln!(
        "matrix: {n} rounds, no failure, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The interrupt soak of `suites/tests/interrupt.rs` on its long matrix: `rounds` seeded
/// signals, each round's figures and the totals printed as they come.
fn interrupt_soak(ws: &Path, rounds: u64, seed: Option<u64>) -> Result<(), u8> {
    let mut cmd = suite(
        ws,
        "interrupt",
        &[
            "--",
            "--exact",
            "signals_at_seeded_moments_of_a_two_thread_matrix_leave_nothing",
            "--nocapture",
        ],
    );
    cmd.env("BF_INTERRUPT_SOAK_ROUNDS", rounds.to_string())
        .env("BF_INTERRUPT_SOAK_FULL", "1");
    if let Some(seed) = seed {
        cmd.env("BF_INTERRUPT_SOAK_SEED", seed.to_string());
    }
    if run(&mut cmd) { Ok(()) } else { Err(1) }
}

/// The acceptance drill.
fn drill() -> Result<(), u8> {
    let ws = workspace();
    let out = ws.join("target/browser-fault-drill");
    let _ = std::fs::remove_dir_all(&out);
    println!("browser-fault acceptance drill: the reference agent against the fixture site\n");
    for (i, (what, trial)) in DRILL.iter().enumerate() {
        println!("  step {}: {what}\n          trial {trial}", i + 1);
    }
    println!();
    let started = Instant::now();
    let mut cmd = reference_matrix(&ws);
    cmd.args(["--", "--exact"])
        .args(DRILL.iter().map(|(_, t)| *t))
        .env("BROWSER_FAULT_OUT", &out);
    let ok = run(&mut cmd);
    let wall = started.elapsed();
    let mut failed = !ok;
    println!(
        "\nboundary × verdict (F = the fault struck, W = no wrong account, D = no duplicate, A = ambiguity visible, R = recover or stop safely, L = no leak, S = no secret, C = claims match facts, O = no wrong object, P = profile trusted, K = locks intact)\n"
    );
    println!("  {:<58} F  W D A R L S C O P K  recovery", "trial");
    let mut t = Totals::default();
    for (_, trial) in DRILL {
        let path = out
            .join("evidence")
            .join(trial.replace("::", "__"))
            .join("evidence.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            println!("  {trial:<58} (no evidence)");
            failed = true;
            continue;
        };
        let e: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let held = |name: &str| {
            let v = e["verdicts"]
                .as_array()
                .and_then(|v| v.iter().find(|v| v["invariant"] == name));
            match v.map(|v| v["held"].as_bool() == Some(true)) {
                Some(true) => "✓",
                Some(false) => "✗",
                None => "?",
            }
        };
        let marks: Vec<&str> = [
            "no_wrong_account",
            "no_duplicate",
            "ambiguity_visible",
            "recover_or_stop_safely",
            "no_leak",
            "no_secret_in_evidence",
            "claims_match_facts",
            "no_wrong_object",
            "profile_trusted",
            "locks_intact",
        ]
        .iter()
        .map(|n| held(n))
        .collect();
        let struck = held("fault_struck");
        let last = e["workers"]
            .as_array()
            .and_then(|w| w.last())
            .map(|w| w["result"].to_string())
            .unwrap_or_default();
        println!("  {trial:<58} {struck}  {}  {last}", marks.join(" "));
        t.add(&e);
        if e["passed"].as_bool() != Some(true) {
            failed = true;
        }
    }
    t.print(wall);
    println!("evidence: {}", out.join("evidence").display());
    if failed {
        println!(
            "\nDRILL FAILED: read the failing trial's evidence.json (verdicts, checkpoint trace, log tails)"
        );
        return Err(1);
    }
    println!("\ndrill passed");
    Ok(())
}

/// Where the drill's trial time went, summed over its trials.
#[derive(Default)]
struct Totals {
    total: u64,
    launch: u64,
    quit: u64,
    steps: u64,
    worst_overhead_pct: f64,
    worst_trial: String,
    runner_rss_kb: u64,
    worker_rss_kb: u64,
}

impl Totals {
    fn add(&mut self, e: &serde_json::Value) {
        let d = &e["durations"];
        let get = |k: &str| d[k].as_u64().unwrap_or(0);
        let (total, launch, quit, steps) = (
            get("total_ms"),
            get("browser_launch_ms"),
            get("browser_quit_ms"),
            get("browser_steps_ms"),
        );
        self.total += total;
        self.launch += launch;
        self.quit += quit;
        self.steps += steps;
        let overhead =
            100.0 * total.saturating_sub(launch + quit + steps) as f64 / total.max(1) as f64;
        if overhead > self.worst_overhead_pct {
            self.worst_overhead_pct = overhead;
            self.worst_trial = e["trial"].as_str().unwrap_or_default().to_owned();
        }
        self.runner_rss_kb = self
            .runner_rss_kb
            .max(e["memory"]["runner_peak_rss_kb"].as_u64().unwrap_or(0));
        self.worker_rss_kb = self
            .worker_rss_kb
            .max(e["memory"]["worker_peak_rss_kb"].as_u64().unwrap_or(0));
    }

    fn print(&self, wall: std::time::Duration) {
        let pct = |x: u64| 100.0 * x as f64 / self.total.max(1) as f64;
        let rest = self
            .total
            .saturating_sub(self.launch + self.quit + self.steps);
        println!(
            "\ndrill wall time {:.1} s (two trials at a time); the trials' own time, summed: {:.1} s",
            wall.as_secs_f64(),
            self.total as f64 / 1000.0
        );
        println!(
            "  Chromium launch (chromedriver + browser + session)  {:>6.1} s  {:>5.1}%",
            self.launch as f64 / 1000.0,
            pct(self.launch)
        );
        println!(
            "  Chromium quit                                       {:>6.1} s  {:>5.1}%",
            self.quit as f64 / 1000.0,
            pct(self.quit)
        );
        println!(
            "  inside browser commands (the agent's page work)     {:>6.1} s  {:>5.1}%",
            self.steps as f64 / 1000.0,
            pct(self.steps)
        );
        println!(
            "  everything else (harness: processes, journal, lease, site, oracle, cleanup)  {:>6.1} s  {:>5.1}%",
            rest as f64 / 1000.0,
            pct(rest)
        );
        println!(
            "  not Chromium's launch and quit: {:.1}%; worst trial's harness share: {:.1}% ({})",
            pct(self.total.saturating_sub(self.launch + self.quit)),
            self.worst_overhead_pct,
            self.worst_trial
        );
        println!(
            "  peak memory (Chromium excluded): test process {:.1} MB, largest worker process {:.1} MB",
            self.runner_rss_kb as f64 / 1024.0,
            self.worker_rss_kb as f64 / 1024.0
        );
    }
}
