//! The worker role of a re-entered test binary: what a worker process is told
//! ([`WorkerLaunch`], through [`WORKER_ENV`]), its `main`, and the life of one worker
//! ([`run_worker`]), which a `kill`-mode worker process and an `abort`-mode task share. The
//! trial's side, which spawns workers and follows them, is `trial/spawn.rs`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use serde::{Deserialize, Serialize};

use crate::fault::WorkerEvent;
use crate::scenario::Scenario;
use crate::worker::hook::FaultHook;
use crate::worker::{FailureKind, LogSink, Worker, WorkerResult, WorkerSpec};

/// The environment variable that turns a re-entered test binary into one worker.
pub(crate) const WORKER_ENV: &str = "BROWSER_FAULT_WORKER";

/// What a `kill`-mode worker process is told, through [`WORKER_ENV`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct WorkerLaunch {
    pub(crate) spec: WorkerSpec,
    pub(crate) module_path: String,
    pub(crate) scenario: String,
    pub(crate) socket: PathBuf,
}

/// One worker from start to end: start, run the scenario (a panic is caught and typed),
/// report how it ended, then quit the browser and release the lease.
pub(crate) async fn run_worker(
    scenario: &'static Scenario,
    spec: WorkerSpec,
    hook: Arc<FaultHook>,
    log: LogSink,
) {
    if spec.start_gate {
        hook.start_gate().await;
    }
    // The scenario's site spec, built again in this role: its adapter drives the pages.
    let site = (scenario.site)().adapter();
    let mut worker = match Worker::start(spec, site, hook.clone(), log.clone()).await {
        Ok(w) => w,
        Err(e) => {
            log.line(&format!(
                "worker did not start: {}",
                crate::error::error_chain(&e)
            ));
            hook.report(WorkerEvent::Finished {
                result: WorkerResult::Err(e.kind()),
                timing: hook.timing(),
                cookie_values: Vec::new(),
                tampered: Vec::new(),
            })
            .await;
            return;
        }
    };
    hook.report(WorkerEvent::ScenarioBegan).await;
    // No task of its own: dropping this future (the `abort` crash) must drop the worker,
    // its browser and its lease with it. A panic is caught here instead.
    let joined = std::panic::AssertUnwindSafe((scenario.run)(&mut worker))
        .catch_unwind()
        .await;
    let reported = match joined {
        Ok(result) => {
            if let Err(e) = &result {
                // The error's own words, not only its kind: "Browser" alone says nothing of
                // which command failed or why. The log tail is redacted before it is kept.
                log.line(&format!(
                    "scenario ended: {:?}: {}",
                    e.kind(),
                    crate::error::error_chain(e)
                ));
            }
            WorkerResult::from(&result)
        }
        Err(_) => {
            log.line("scenario panicked");
            WorkerResult::Err(FailureKind::Panic)
        }
    };
    // What the last click started reaches the site before the browser is ended, and its
    // cookies are among those scanned.
    worker.page().settle_last_click().await;
    let cookie_values = worker.cookie_values().await;
    let tampered = worker.tampering();
    for what in &tampered {
        log.line(&format!("lock tampering: {what}"));
    }
    worker.finish().await;
    hook.report(WorkerEvent::Finished {
        result: reported,
        timing: hook.timing(),
        cookie_values,
        tampered,
    })
    .await;
}

/// Kills this worker's whole process group (itself, its chromedriver and Chromium) once the
/// test process that spawned it is gone, however it went (a SIGKILL included): a worker
/// must never outlive its trial. Its parent's death shows as a new parent pid; a thread
/// looks every 100 ms.
fn die_with_the_trial() {
    let parent = nix::unistd::getppid();
    let _ = std::thread::Builder::new()
        .name("browser-fault-orphan-watch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(100));
                if nix::unistd::getppid() != parent {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::getpgrp(),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                    std::process::exit(137);
                }
            }
        });
}

/// The worker role of a re-entered test binary: runs one worker and exits.
pub(crate) fn worker_process_main(launch: WorkerLaunch) -> ! {
    die_with_the_trial();
    // Run again with its arguments, this binary comes back here: its chromedriver can be
    // started so as to die with it.
    crate::startgate::mark_reentrant();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => std::process::exit(70),
    };
    let code = runtime.block_on(async move {
        let Some(scenario) = crate::scenario::find(&launch.module_path, &launch.scenario) else {
            eprintln!(
                "browser-fault worker: no scenario {}::{} in this binary",
                launch.module_path, launch.scenario
            );
            return 2;
        };
        let hook = match FaultHook::connect(
            launch.spec.armed,
            &launch.socket,
            launch.spec.evidence_dir.clone(),
        )
        .await
        {
            Ok(h) => Arc::new(h.with_steps(launch.spec.armed_step, launch.spec.record_steps)),
            Err(e) => {
                eprintln!("browser-fault worker: cannot reach the trial: {e}");
                return 3;
            }
        };
        run_worker(scenario, launch.spec, hook, LogSink::Stderr).await;
        0
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    std::process::exit(code)
}

/// The worker launch in this process's environment, if it is a worker.
/// A re-entered binary that is to become a browser-side process does so here, first: every
/// runner and worker entry asks for its worker launch before anything else.
pub(crate) fn worker_launch_from_env() -> Option<WorkerLaunch> {
    crate::startgate::exec_guarded_if_asked();
    let raw = std::env::var(WORKER_ENV).ok()?;
    match serde_json::from_str(&raw) {
        Ok(launch) => Some(launch),
        Err(e) => {
            eprintln!("browser-fault: {WORKER_ENV} is set but unreadable: {e}");
            std::process::exit(2);
        }
    }
}
