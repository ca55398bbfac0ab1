//! The drill's nine trials run by the careful agent three ways: on the harness's `Page`
//! (`send_hello`, which fills fields at once); on `Page` typing the send form a key at a
//! time (`Page::type_keys`, the input mechanics of WebDriver's element send keys); and as
//! an agent with its own WebDriver client on the worker's endpoint (`own_client::send_hello`:
//! plain thirtyfour, the same steps, `send_keys`). Rounds interleaved, the side that goes
//! first rotating, two trials at a time as the drill runs them; each round's wall time of
//! each side, the endpoint's ratio to each Page side, and the median ratios. What the
//! endpoint costs an adopted agent's matrix, measured in one run, and how much of that is
//! the agent's own way of typing rather than the endpoint.
//!
//! `cargo bench -p browser-fault-suites --bench endpoint_drill` (4 rounds);
//! `BROWSER_FAULT_BENCH_ROUNDS` sets the rounds. Figures are for reading, never for
//! asserting. Evidence goes to `target/browser-fault-bench-endpoint/`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use browser_fault::prelude::*;
use browser_fault::trial::{self, Trial, TrialSettings};

/// The drill's trials, by their name after the scenario's.
const DRILL: [&str; 9] = [
    "after_target_verified",
    "after_target_verified::account_switched",
    "after_click::landed",
    "after_click::lost",
    "after_remote_effect",
    "stale_profile_restore::other_account",
    "stale_profile_restore::older_generation",
    "browser_crash",
    "concurrent_profile",
];

/// The careful agent on the harness's `Page`.
#[browser_fault(at = "all", effects = "42", timeout = "60s")]
async fn on_page(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

/// The careful agent on the harness's `Page`, typing its send form a key at a time.
#[browser_fault(at = "all", effects = "42", timeout = "60s")]
async fn on_page_typing(w: &mut Worker) -> TaskResult {
    use browser_fault_suites::THREAD;
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    browser_fault_suites::open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let target = w.target().route(&route).object(THREAD).api();
    w.side_effect("send-hello")
        .args(format!("thread={THREAD};body=hello"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(|p: Page, key: RequestKey| async move {
            p.type_keys("#request-key", key.as_str()).await?;
            p.type_keys("#body", "hello").await?;
            p.click("button#send").await
        })
        .confirm(browser_fault_suites::observe_sent)
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// The careful agent on thirtyfour, connected to the worker's WebDriver endpoint.
#[browser_fault(at = "all", effects = "42", timeout = "60s")]
async fn on_endpoint(w: &mut Worker) -> TaskResult {
    browser_fault_suites::own_client::send_hello(w).await
}

fn drill_of(scenario: &str) -> Vec<Trial> {
    let s = trial::scenarios()
        .into_iter()
        .find(|s| s.name == scenario)
        .unwrap_or_else(|| panic!("no scenario {scenario}"));
    let trials: Vec<Trial> = trial::expand(s)
        .into_iter()
        .filter(|t| DRILL.iter().any(|d| t.name() == format!("{scenario}::{d}")))
        .collect();
    assert_eq!(trials.len(), DRILL.len(), "{scenario}: the drill's trials");
    trials
}

/// Where a side's trial time went, summed over its trials, ms: Chromium's launch, the
/// agent's browser commands, quitting, and the rest (the harness's own work and the
/// agent's between commands).
#[derive(Clone, Copy, Default)]
struct Split {
    launch: u64,
    steps: u64,
    quit: u64,
    rest: u64,
    trials: u64,
}

impl Split {
    fn add(&mut self, d: &browser_fault::evidence::Durations) {
        self.launch += d.browser_launch_ms;
        self.steps += d.browser_steps_ms;
        self.quit += d.browser_quit_ms;
        self.rest += d
            .total_ms
            .saturating_sub(d.browser_launch_ms + d.browser_steps_ms + d.browser_quit_ms);
        self.trials += 1;
    }

    fn per_trial(&self, ms: u64) -> u64 {
        ms / self.trials.max(1)
    }
}

/// Runs `trials` two at a time; the wall time, or the trials that did not pass.
fn run_side(
    trials: &[Trial],
    settings: &TrialSettings,
    split: &Mutex<Split>,
) -> Result<Duration, Vec<String>> {
    let failed = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some(t) = trials.get(next.fetch_add(1, Ordering::SeqCst)) {
                    match browser_fault_suites::run_blocking(t, settings) {
                        Ok(report) if report.passed() => {
                            split.lock().unwrap().add(&report.evidence.durations);
                        }
                        Ok(report) => failed.lock().unwrap().push(format!(
                            "{}: did not pass ({})",
                            t.name(),
                            report.evidence_path.display()
                        )),
                        Err(e) => failed.lock().unwrap().push(format!("{}: {e:?}", t.name())),
                    }
                }
            });
        }
    });
    let wall = started.elapsed();
    let failed = failed.into_inner().unwrap();
    if failed.is_empty() {
        Ok(wall)
    } else {
        Err(failed)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    browser_fault::runner::enter_worker_role_if_asked();
    // `cargo bench` passes `--bench`; nothing else is read.
    let rounds: usize = std::env::var("BROWSER_FAULT_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4)
        .max(1);
    let mut settings = TrialSettings::from_env();
    settings.snapshot_dir = None;
    settings.out_dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/browser-fault-bench-endpoint");
    const SIDES: [&str; 3] = ["on Page", "on Page, typing", "on the endpoint"];
    let drills = [
        drill_of("on_page"),
        drill_of("on_page_typing"),
        drill_of("on_endpoint"),
    ];
    println!(
        "the drill's {} trials, two at a time: the careful agent on Page (fill), on Page typing its form a key at a time, and on its own thirtyfour client through the worker's endpoint; {rounds} rounds\n",
        DRILL.len()
    );
    println!(
        "round   on Page (s)   on Page, typing (s)   on the endpoint (s)   endpoint / Page   endpoint / Page typing"
    );
    let splits: [Mutex<Split>; 3] = Default::default();
    let mut walls_of: [Vec<f64>; 3] = Default::default();
    let (mut ratios, mut typing_ratios) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut walls = [Duration::ZERO; 3];
        for i in 0..3 {
            let side = (round + i) % 3;
            match run_side(&drills[side], &settings, &splits[side]) {
                Ok(wall) => walls[side] = wall,
                Err(failed) => {
                    eprintln!("round {}: trials failed, no figure:", round + 1);
                    for f in failed {
                        eprintln!("  {f}");
                    }
                    std::process::exit(1);
                }
            }
        }
        let secs = walls.map(|w| w.as_secs_f64());
        let (ratio, typing_ratio) = (secs[2] / secs[0], secs[2] / secs[1]);
        println!(
            "{:>5} {:>13.2} {:>21.2} {:>21.2} {:>16.2}× {:>23.2}×",
            round + 1,
            secs[0],
            secs[1],
            secs[2],
            ratio,
            typing_ratio
        );
        ratios.push(ratio);
        typing_ratios.push(typing_ratio);
        for (side, w) in secs.iter().enumerate() {
            walls_of[side].push(*w);
        }
    }
    let [page_walls, typing_walls, endpoint_walls] = walls_of;
    println!(
        "\nmedian: on Page {:.2} s, on Page typing {:.2} s, on the endpoint {:.2} s",
        median(page_walls),
        median(typing_walls),
        median(endpoint_walls),
    );
    for (against, r) in [("Page", &ratios), ("Page typing", &typing_ratios)] {
        println!(
            "endpoint / {against}: {:.2}× (rounds {:.2}–{:.2}×)",
            median(r.clone()),
            r.iter().copied().fold(f64::INFINITY, f64::min),
            r.iter().copied().fold(0.0, f64::max),
        );
    }
    println!(
        "\nper trial, mean ms    launch   browser commands   quit   the rest (harness and agent between commands)"
    );
    for (name, split) in SIDES.iter().zip(&splits) {
        let t = *split.lock().unwrap();
        println!(
            "{name:<18} {:>9} {:>18} {:>6} {:>10}",
            t.per_trial(t.launch),
            t.per_trial(t.steps),
            t.per_trial(t.quit),
            t.per_trial(t.rest)
        );
    }
}
