//! The harness survives its own death: a runner interrupted by SIGINT or SIGTERM (what CI's
//! cancel sends) stops its workers and browsers, removes its roots with proof and exits
//! non-zero saying so, and then runs the stop of a site the suite started (as it does at
//! the run's own end, once); a runner SIGKILLed mid-trial leaves no process of its run alive, and
//! the next run's sweep removes the roots it owned, and nothing else.
//!
//! Each case runs this binary again as a runner (`BF_INTERRUPT_RUNNER`) under a TMPDIR of
//! the case's own, so that every process and folder of the run can be counted by that path
//! (in its command line or its environment: every worker, chromedriver and Chromium carries
//! it). The first three cases signal one hanging trial with its browser up. The soak signals
//! a two-thread matrix (recoveries, `abort`-mode workers, concurrent claimants, an
//! exploration recording) at seeded moments, TERM, INT and KILL in turn: a few rounds here,
//! as many as asked with `cargo xtask interrupt-soak [ROUNDS] [SEED]`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use browser_fault::prelude::*;
use browser_fault::runner::ExitCode;
use browser_fault::trial::TrialSettings;
use libtest_mimic::{Arguments, Failed, Trial as Test};

const RUNNER_ENV: &str = "BF_INTERRUPT_RUNNER";

/// Opens a page, then waits for an element that never comes: a trial with its worker and
/// browser up for as long as the case needs.
#[browser_fault(at = "after_login", effects = [], timeout = "300s")]
async fn hangs(w: &mut Worker) -> TaskResult {
    let page = w.open("/threads/42").await?;
    w.log("page open; waiting for what never comes");
    page.wait_for("#never-there").await?;
    Ok(Outcome::Completed)
}

/// [`hangs`], on a site the suite started, whose stop leaves a line in the run's TMPDIR.
#[browser_fault(at = "after_login", effects = [], timeout = "300s", site = started_site)]
async fn hangs_on_started_site(w: &mut Worker) -> TaskResult {
    let page = w.open("/threads/42").await?;
    w.log("page open; waiting for what never comes");
    page.wait_for("#never-there").await?;
    Ok(Outcome::Completed)
}

/// Trials that end on their own, on the same started site: the reference agent.
#[browser_fault(at = ["after_profile_created", "after_login"], effects = "42", site = started_site)]
async fn ends_on_started_site(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

/// The line the started site's stop appends, once per call, to `$TMPDIR/site-stopped`.
const STOPPED: &str = "site stopped\n";

/// The bundled site as one the suite starts (its origin known once `started`'s closure
/// ran), stopped by the runner when it ends: the stop appends [`STOPPED`] to a file of the
/// run's TMPDIR, so a case counts how often it ran.
fn started_site() -> SiteSpec {
    let site = browser_fault_suites::shared_fixture_site();
    let adapter = browser_fault::site::Fixture::new().with_ledger_url(site.ledger_url());
    SiteSpec::started(
        || Ok(browser_fault_suites::shared_fixture_site().base_url()),
        adapter,
        browser_fault_suites::demo_account(0),
    )
    .with_secrets(site.secrets())
    .stopped_by(|| {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(std::env::temp_dir().join("site-stopped"))
            .expect("the stop's file opens");
        file.write_all(STOPPED.as_bytes())
            .expect("the stop's line is written");
    })
}

/// The soak's matrix: the reference agent at boundaries with recoveries, concurrent
/// claimants and a stale restore.
#[browser_fault(
    at = ["after_click", "browser_crash", "concurrent_profile", "stale_profile_restore"],
    effects = "42",
    timeout = "60s"
)]
async fn soak(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

/// The soak's in-process workers: their browsers are started by the runner itself.
#[browser_fault(
    at = ["after_remote_effect", "browser_crash"],
    crash = "abort",
    effects = "42",
    timeout = "60s"
)]
async fn soak_abort(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

/// The soak's exploration: a recording before the first trial, then two step trials.
#[browser_fault(at = "after_login", every_step = 2, effects = "42", timeout = "60s")]
async fn soak_explored(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

fn runner_settings() -> TrialSettings {
    let mut s = TrialSettings::from_env();
    s.step_timeout = Duration::from_secs(300);
    s.snapshot_dir = None;
    s
}

/// The pids of every live process whose command line or environment names `dir` (the
/// run's TMPDIR: the runner, workers, chromedrivers, Chromiums and their crash handlers all
/// carry it). A zombie is dead: it only waits to be reaped.
fn processes_under(dir: &Path) -> Vec<u32> {
    run_processes(dir).into_iter().map(|p| p.pid).collect()
}

/// One live process of a run.
#[derive(Clone, Debug)]
struct RunProcess {
    pid: u32,
    /// Clock ticks since boot when it started.
    start_ticks: u64,
    name: String,
}

fn run_processes(dir: &Path) -> Vec<RunProcess> {
    let mut needles = vec![dir.as_os_str().as_encoded_bytes().to_vec()];
    if let Ok(canonical) = std::fs::canonicalize(dir) {
        needles.push(canonical.as_os_str().as_encoded_bytes().to_vec());
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let close = stat.rfind(')')?;
            let name = stat.get(stat.find('(')? + 1..close)?.to_owned();
            let fields: Vec<&str> = stat.get(close + 2..)?.split(' ').collect();
            if matches!(fields.first(), Some(&"Z") | Some(&"X")) {
                return None;
            }
            let start_ticks = fields.get(19)?.parse().ok()?;
            let ours = ["cmdline", "environ"].iter().any(|f| {
                std::fs::read(format!("/proc/{pid}/{f}")).is_ok_and(|bytes| {
                    needles
                        .iter()
                        .any(|n| bytes.windows(n.len()).any(|w| w == n.as_slice()))
                })
            });
            ours.then_some(RunProcess {
                pid,
                start_ticks,
                name,
            })
        })
        .collect()
}

/// Chromium processes of the run on a profile: the sign that the trial is up (not the
/// `chromium --version` of the runner's preflight).
fn browsers_under(dir: &Path) -> usize {
    processes_under(dir)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("--user-data-dir="))
        })
        .count()
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

struct Case {
    tmp: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        Case {
            tmp: tempfile::Builder::new()
                .prefix("bf-int-")
                .tempdir()
                .expect("a temporary folder"),
        }
    }

    fn roots_base(&self) -> PathBuf {
        self.tmp.path().join(format!("browser-fault-{}", nix_uid()))
    }

    fn roots(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.roots_base())
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }

    fn runner(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(std::env::current_exe().expect("this binary"));
        cmd.args(args)
            .env(RUNNER_ENV, "1")
            .env("TMPDIR", self.tmp.path())
            .env("BROWSER_FAULT_OUT", self.tmp.path().join("out"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }

    /// Starts the hanging trial and returns once its browser is up.
    fn start(&self) -> Result<Child, Failed> {
        let child = self
            .runner(&["hangs::after_login", "--exact", "--test-threads=1"])
            .spawn()
            .map_err(|e| format!("the runner did not start: {e}"))?;
        if !wait_until(Duration::from_secs(90), || {
            browsers_under(self.tmp.path()) > 0
        }) {
            return Err("the trial's browser never came up".into());
        }
        Ok(child)
    }
}

fn nix_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|u| u.parse().ok())
        })
        .unwrap_or(0)
}

fn signal(child: &Child, sig: &str) -> Result<(), Failed> {
    let status = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .map_err(|e| format!("kill: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -{sig} failed").into())
    }
}

/// SIGINT or SIGTERM: the runner cleans up and says so.
fn interrupted(sig: &'static str, code: i32) -> Result<(), Failed> {
    let case = Case::new();
    let child = case.start()?;
    signal(&child, sig)?;
    let output = child
        .wait_with_output()
        .map_err(|e| format!("waiting for the runner: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() != Some(code) {
        return Err(format!(
            "exit {:?}, expected {code}; stderr:\n{stderr}",
            output.status.code()
        )
        .into());
    }
    if !stderr.contains(&format!("interrupted by SIG{sig}"))
        || !stderr.contains("removed with proof")
    {
        return Err(format!("no line saying it was interrupted; stderr:\n{stderr}").into());
    }
    if !wait_until(Duration::from_secs(2), || {
        processes_under(case.tmp.path()).is_empty()
    }) {
        return Err(format!(
            "processes of the run outlived it: {:?}",
            processes_under(case.tmp.path())
        )
        .into());
    }
    let roots = case.roots();
    if !roots.is_empty() {
        return Err(format!("trial roots left behind: {roots:?}").into());
    }
    Ok(())
}

/// What the started site's stop wrote under the case's TMPDIR.
fn site_stops(case: &Case) -> String {
    std::fs::read_to_string(case.tmp.path().join("site-stopped")).unwrap_or_default()
}

/// A site the suite started is stopped once when the run ends, however many trials
/// reached it.
fn a_started_site_is_stopped_once_at_the_end() -> Result<(), Failed> {
    let case = Case::new();
    let output = case
        .runner(&["ends_on_started_site::", "--test-threads=1"])
        .output()
        .map_err(|e| format!("the runner did not start: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() != Some(ExitCode::Success.code()) {
        return Err(format!("exit {:?}; stderr:\n{stderr}", output.status.code()).into());
    }
    match site_stops(&case).as_str() {
        STOPPED => Ok(()),
        other => {
            Err(format!("the site's stop wrote {other:?}, not once; stderr:\n{stderr}").into())
        }
    }
}

/// A SIGTERM stops the site the suite started too, after the run's workers.
fn a_started_site_is_stopped_on_sigterm() -> Result<(), Failed> {
    let case = Case::new();
    let child = case
        .runner(&["hangs_on_started_site::after_login", "--exact"])
        .spawn()
        .map_err(|e| format!("the runner did not start: {e}"))?;
    if !wait_until(Duration::from_secs(90), || {
        browsers_under(case.tmp.path()) > 0
    }) {
        return Err("the trial's browser never came up".into());
    }
    if !site_stops(&case).is_empty() {
        return Err("the site was stopped while its trial ran".into());
    }
    signal(&child, "TERM")?;
    let output = child
        .wait_with_output()
        .map_err(|e| format!("waiting for the runner: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() != Some(ExitCode::Terminated.code()) {
        return Err(format!("exit {:?}; stderr:\n{stderr}", output.status.code()).into());
    }
    match site_stops(&case).as_str() {
        STOPPED => Ok(()),
        other => {
            Err(format!("the site's stop wrote {other:?}, not once; stderr:\n{stderr}").into())
        }
    }
}

/// SIGKILL: nothing can be caught; every process of the run dies with it, and the next
/// run's sweep removes its root and nothing else.
fn killed() -> Result<(), Failed> {
    let case = Case::new();
    let child = case.start()?;
    // A folder of somebody else's beside the run's roots: the sweep must keep it.
    let foreign = case.roots_base().join("not-ours");
    std::fs::create_dir_all(&foreign).map_err(|e| e.to_string())?;
    std::fs::write(foreign.join("keep.txt"), b"keep").map_err(|e| e.to_string())?;
    signal(&child, "KILL")?;
    let mut child = child;
    let _ = child.wait();
    if !wait_until(Duration::from_secs(2), || {
        processes_under(case.tmp.path()).is_empty()
    }) {
        return Err(format!(
            "processes of the SIGKILLed run outlived it by 2 s: {:?}",
            processes_under(case.tmp.path())
        )
        .into());
    }
    let left: Vec<PathBuf> = case.roots().into_iter().filter(|r| r != &foreign).collect();
    if left.is_empty() {
        return Err("the SIGKILLed run left no root: the sweep has nothing to prove".into());
    }
    // The next run: its sweep runs before anything else, even for `--list`.
    let next = case
        .runner(&["--list"])
        .output()
        .map_err(|e| format!("the next run: {e}"))?;
    let stderr = String::from_utf8_lossy(&next.stderr);
    let after: Vec<PathBuf> = case.roots();
    if after != [foreign.clone()] {
        return Err(format!(
            "after the next run's sweep the roots are {after:?}, expected only {foreign:?}; stderr:\n{stderr}"
        )
        .into());
    }
    if !foreign.join("keep.txt").exists() {
        return Err("the sweep touched a folder that is not ours".into());
    }
    Ok(())
}

#[path = "interrupt/soak.rs"]
mod seeded;

fn main() {
    if std::env::var_os(RUNNER_ENV).is_some() {
        browser_fault::runner::main_with(runner_settings);
    }
    browser_fault::runner::enter_worker_role_if_asked();
    let args = Arguments::from_args();
    // One case at a time: each brings up a browser and counts processes by its own path.
    let args = Arguments {
        test_threads: Some(1),
        ..args
    };
    let tests = vec![
        Test::test(
            "a_sigterm_stops_workers_removes_profiles_and_says_so",
            || interrupted("TERM", ExitCode::Terminated.code()),
        ),
        Test::test(
            "a_sigint_stops_workers_removes_profiles_and_says_so",
            || interrupted("INT", ExitCode::Interrupted.code()),
        ),
        Test::test(
            "a_sigkill_leaves_no_process_and_the_next_sweep_removes_the_root",
            killed,
        ),
        Test::test(
            "a_started_site_is_stopped_once_at_the_end",
            a_started_site_is_stopped_once_at_the_end,
        ),
        Test::test(
            "a_started_site_is_stopped_on_sigterm",
            a_started_site_is_stopped_on_sigterm,
        ),
        Test::test(
            "signals_at_seeded_moments_of_a_two_thread_matrix_leave_nothing",
            seeded::soak,
        ),
    ];
    libtest_mimic::run(&args, tests).exit();
}
