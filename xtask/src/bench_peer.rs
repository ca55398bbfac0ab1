//! `cargo xtask bench-peer [N]`: the drill against its peer, the same nine trials
//! hand-written with Playwright (`bench/peer/`), interleaved for N rounds (default 6). Prints
//! each round's wall times and the ratio drill / peer, the median ratio, and where a trial's
//! time goes on each side, and each side's throughput at that parallelism: trials per minute
//! and per CPU-minute (the CPU time of its whole process tree, Chromium included). Not part of
//! CI's tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::cpu_meter::CpuMeter;

/// One side's per-trial time, summed over the trials of every round.
#[derive(Default)]
struct Split {
    trials: u64,
    launch: u64,
    steps: u64,
    quit: u64,
    total: u64,
    /// The largest harness share of one trial (percent), and that trial.
    worst_own_pct: f64,
    worst_trial: String,
    /// Peak memory (kB), Chromium excluded: the test process, and the largest worker.
    runner_rss_kb: u64,
    worker_rss_kb: u64,
}

/// One side's runs, whole: wall and CPU seconds, and the trials they ran.
#[derive(Default)]
struct Throughput {
    trials: usize,
    wall_s: f64,
    cpu_s: f64,
    /// Runs whose CPU time the meter could not read (their trials are left out of both).
    unmetered: usize,
}

impl Throughput {
    fn add(&mut self, trials: usize, wall_s: f64, cpu_s: Option<f64>) {
        match cpu_s {
            Some(cpu) => {
                self.trials += trials;
                self.wall_s += wall_s;
                self.cpu_s += cpu;
            }
            None => self.unmetered += 1,
        }
    }

    /// Trials per wall minute, CPU seconds per trial, trials per CPU-minute.
    fn figures(&self) -> (f64, f64, f64) {
        let n = self.trials.max(1) as f64;
        (
            n * 60.0 / self.wall_s.max(f64::EPSILON),
            self.cpu_s / n,
            n * 60.0 / self.cpu_s.max(f64::EPSILON),
        )
    }
}

impl Split {
    /// Adds one trial's `durations` (the drill's evidence and the peer's report share the
    /// keys).
    fn add(&mut self, trial: &serde_json::Value) {
        let d = &trial["durations"];
        let get = |k: &str| d[k].as_u64().unwrap_or(0);
        let (launch, steps, quit, total) = (
            get("browser_launch_ms"),
            get("browser_steps_ms"),
            get("browser_quit_ms"),
            get("total_ms"),
        );
        self.trials += 1;
        self.launch += launch;
        self.steps += steps;
        self.quit += quit;
        self.total += total;
        let own = 100.0 * total.saturating_sub(launch + steps + quit) as f64 / total.max(1) as f64;
        if own > self.worst_own_pct {
            self.worst_own_pct = own;
            self.worst_trial = trial["trial"].as_str().unwrap_or_default().to_owned();
        }
        let memory = &trial["memory"];
        let kb = |k: &str| memory[k].as_u64().unwrap_or(0);
        self.runner_rss_kb = self.runner_rss_kb.max(kb("runner_peak_rss_kb"));
        self.worker_rss_kb = self.worker_rss_kb.max(kb("worker_peak_rss_kb"));
    }

    /// The rest's share of all trial time (percent).
    fn own_pct(&self) -> f64 {
        let rest = self
            .total
            .saturating_sub(self.launch + self.steps + self.quit);
        100.0 * rest as f64 / self.total.max(1) as f64
    }

    /// Per trial: launch, page work, quit, the rest, total (ms).
    fn per_trial(&self) -> [u64; 5] {
        let n = self.trials.max(1);
        let rest = self
            .total
            .saturating_sub(self.launch + self.steps + self.quit);
        [self.launch, self.steps, self.quit, rest, self.total].map(|x| x / n)
    }
}

pub(crate) fn bench_peer(ws: &Path, rounds: usize) -> Result<(), u8> {
    let peer = ws.join("bench/peer");
    let fail = |what: &str| {
        eprintln!("bench-peer: {what}");
        1
    };
    if !super::run(Command::new("node").arg("--version").stdout(Stdio::null())) {
        return Err(fail(
            "Node.js is needed for the Playwright peer (`apt-get install nodejs npm`)",
        ));
    }
    if !peer.join("node_modules").is_dir() {
        eprintln!("bench-peer: installing the peer's npm packages (npm ci in bench/peer)");
        let ok = super::run(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&peer)
                .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1"),
        );
        if !ok {
            return Err(fail("npm ci failed in bench/peer"));
        }
    }
    // Build once, so that no round measures a compile.
    let site = fixture_site_bin(ws).ok_or_else(|| fail("the fixture-site bin did not build"))?;
    if !super::run(super::reference_matrix(ws).arg("--no-run")) {
        return Err(fail("the reference suite did not build"));
    }
    let out = ws.join("target/browser-fault-bench-peer");
    let _ = std::fs::remove_dir_all(&out);
    let mut ratios = Vec::new();
    let (mut drill_split, mut peer_split) = (Split::default(), Split::default());
    let (mut drill_rate, mut peer_rate) = (Throughput::default(), Throughput::default());
    let meter = CpuMeter::new();
    let mut failed = false;
    println!(
        "bench-peer: the drill's {} trials, browser-fault vs Playwright, {rounds} interleaved rounds, two trials at a time\n",
        super::DRILL.len()
    );
    println!("  round  load 1/5 min  drill     peer      drill/peer");
    for round in 1..=rounds {
        let load = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join("/"))
            .unwrap_or_default();
        let dir = out.join(format!("r{round}"));
        // Alternate which side goes first, so neither always runs on a warmer machine.
        let (drill, peer_run) = if round % 2 == 1 {
            let d = run_drill(ws, &dir.join("drill"), &meter);
            (d, run_peer(&peer, &site, &dir.join("peer"), &meter))
        } else {
            let p = run_peer(&peer, &site, &dir.join("peer"), &meter);
            (run_drill(ws, &dir.join("drill"), &meter), p)
        };
        let (drill_s, drill_ok, drill_cpu) = drill;
        let (peer_s, peer_ok, peer_cpu) = peer_run;
        let peer_trials_before = peer_split.trials;
        for trial in super::DRILL.iter().map(|(_, t)| *t) {
            let path = dir
                .join("drill/evidence")
                .join(trial.replace("::", "__"))
                .join("evidence.json");
            let e: serde_json::Value = std::fs::read_to_string(path)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
            drill_split.add(&e);
        }
        let report: serde_json::Value = std::fs::read_to_string(dir.join("peer/report.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        for t in report["trials"].as_array().into_iter().flatten() {
            peer_split.add(t);
        }
        drill_rate.add(super::DRILL.len(), drill_s, drill_cpu);
        peer_rate.add(
            (peer_split.trials - peer_trials_before) as usize,
            peer_s,
            peer_cpu,
        );
        let ratio = drill_s / peer_s.max(f64::EPSILON);
        let note = match (drill_ok, peer_ok) {
            (true, true) => String::new(),
            (d, p) => {
                failed = true;
                format!(
                    "  FAILED:{}{} (see its log)",
                    if d { "" } else { " drill" },
                    if p { "" } else { " peer" }
                )
            }
        };
        println!(
            "  {round:>5}  {load:>11}  {drill_s:>6.1} s  {peer_s:>6.1} s  {ratio:>6.2}×{note}"
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    let median = match ratios.len() {
        0 => 0.0,
        n if n % 2 == 1 => ratios[n / 2],
        n => (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0,
    };
    println!(
        "\n  median drill/peer: {median:.2}× (range {:.2}–{:.2}×)",
        ratios.first().copied().unwrap_or(0.0),
        ratios.last().copied().unwrap_or(0.0)
    );
    println!(
        "\n  per trial, mean over all rounds (ms)   launch  page work   quit  harness own / other   total   own share"
    );
    for (name, split) in [("browser-fault", &drill_split), ("Playwright", &peer_split)] {
        let [launch, steps, quit, rest, total] = split.per_trial();
        println!(
            "  {name:<38} {launch:>6}  {steps:>9}  {quit:>5}  {rest:>19}  {total:>6}   {:>8.1}%",
            split.own_pct()
        );
    }
    println!(
        "\n  browser-fault: worst trial's harness share {:.1}% ({}); peak memory, Chromium excluded: test process {:.1} MB, largest worker {:.1} MB",
        drill_split.worst_own_pct,
        drill_split.worst_trial,
        drill_split.runner_rss_kb as f64 / 1024.0,
        drill_split.worker_rss_kb as f64 / 1024.0
    );
    println!(
        "\n  throughput, two trials at a time           trials/min   CPU s per trial   trials per CPU-minute"
    );
    for (name, rate) in [("browser-fault", &drill_rate), ("Playwright", &peer_rate)] {
        let (per_min, cpu_per_trial, per_cpu_min) = rate.figures();
        let unmetered = match rate.unmetered {
            0 => String::new(),
            n => format!("  ({n} run(s) unmetered, left out)"),
        };
        println!(
            "  {name:<40} {per_min:>10.1}   {cpu_per_trial:>15.2}   {per_cpu_min:>21.1}{unmetered}"
        );
    }
    println!("  CPU time measured as {}", meter.describe());
    println!("\n  evidence and reports: {}", out.display());
    if failed {
        return Err(fail(
            "a round failed: read its evidence (drill) or report.json (peer)",
        ));
    }
    Ok(())
}

/// `cargo xtask drill`'s trials, as the drill runs them; its wall time, whether it passed,
/// and its CPU seconds.
fn run_drill(ws: &Path, out: &Path, meter: &CpuMeter) -> (f64, bool, Option<f64>) {
    let _ = std::fs::create_dir_all(out);
    let log = log_file(&out.join("drill.log"));
    let started = Instant::now();
    let mut cmd = super::reference_matrix(ws);
    cmd.args(["--", "--exact"])
        .args(super::DRILL.iter().map(|(_, t)| *t))
        .env("BROWSER_FAULT_OUT", out)
        .stdout(log);
    let (ok, cpu) = meter.run(&mut cmd, "drill");
    (started.elapsed().as_secs_f64(), ok, cpu)
}

/// The Playwright peer; its wall time, whether every trial passed, and its CPU seconds.
fn run_peer(peer: &Path, site: &Path, out: &Path, meter: &CpuMeter) -> (f64, bool, Option<f64>) {
    let _ = std::fs::create_dir_all(out);
    let log = log_file(&out.join("peer.log"));
    let started = Instant::now();
    let (ok, cpu) = meter.run(
        Command::new("node")
            .arg(peer.join("peer.js"))
            .arg("--site")
            .arg(site)
            .arg("--json")
            .arg(out.join("report.json"))
            .arg("--out")
            .arg(out.join("evidence"))
            .stderr(log),
        "peer",
    );
    (started.elapsed().as_secs_f64(), ok, cpu)
}

/// Where a run's output goes (nowhere, when the file cannot be made).
fn log_file(path: &Path) -> Stdio {
    std::fs::File::create(path).map_or_else(|_| Stdio::null(), Stdio::from)
}

/// Builds the `fixture-site` bin and returns its path (from cargo's own report).
fn fixture_site_bin(ws: &Path) -> Option<PathBuf> {
    let output = super::cargo()
        .current_dir(ws)
        .args([
            "build",
            "-q",
            "-p",
            "browser-fault-fixtures",
            "--bin",
            "fixture-site",
            "--message-format=json",
        ])
        .stderr(Stdio::inherit())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["target"]["name"] == "fixture-site")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
}
