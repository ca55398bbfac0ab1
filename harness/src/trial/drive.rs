//! Following one worker: its events, up to its armed fault point or its end, within a
//! deadline. The one event loop of a trial; every phase of the engine and every fault unit
//! drives its workers through [`drive`].

use std::time::{Duration, Instant};

use super::spawn::WorkerHandle;
use crate::evidence::{Verification, WorkerEnd, WorkerEvidence};
use crate::fault::{ScreenshotRef, Step, WorkerEvent, ms};
use crate::plan::FaultPoint;
use crate::site::RunningSite;

/// One worker, as the trial follows it.
pub(super) struct Tracked {
    pub(super) handle: WorkerHandle,
    pub(super) evidence: WorkerEvidence,
    pub(super) spawned: Instant,
    /// Cookie values its browser reported: secrets for the evidence scan.
    pub(super) cookies: Vec<String>,
    /// The ledger's highest sequence number at its spawn, and at its end.
    pub(super) ledger_seq_before: u64,
    pub(super) ledger_seq_after: u64,
    /// What a recording worker reported: its steps and the fault points it crossed.
    pub(super) steps: Vec<Step>,
    pub(super) crossed: Vec<FaultPoint>,
}

/// How far to follow a worker.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Until {
    /// To its end: a fault point it reports is passed (it is not armed).
    End,
    /// To its armed fault point, or its end if it never gets there.
    Strike,
}

/// Why [`drive`] stopped.
pub(super) enum Stop {
    /// The worker ended: it finished, died, or ran out of time (and was crashed).
    Ended,
    /// The worker reached its armed fault point and waits for the trial's word.
    Struck(Strike),
}

/// What a worker reported at its armed fault point.
pub(super) struct Strike {
    /// Which point.
    pub(super) boundary: FaultPoint,
    /// The screenshot taken there.
    pub(super) screenshot: Option<ScreenshotRef>,
    /// Why the screenshot taken there was not kept.
    pub(super) screenshot_withheld: Option<String>,
    /// For a step: the step the worker had just completed.
    pub(super) step: Option<Step>,
    /// Its browser's process id, when the worker knows it.
    pub(super) browser_pid: Option<u32>,
}

/// Follows `w` until `until`, or until `deadline`, when it is crashed as timed out.
pub(super) async fn drive(
    w: &mut Tracked,
    until: Until,
    deadline: Instant,
    site: &RunningSite,
) -> Stop {
    loop {
        match tokio::time::timeout_at(deadline.into(), w.handle.next_event()).await {
            Ok(Some(WorkerEvent::Boundary {
                boundary,
                screenshot,
                screenshot_withheld,
                browser_pid,
                timing,
                cookie_values,
                step,
            })) if until == Until::Strike => {
                w.evidence.struck = Some(boundary);
                w.evidence.struck_step = step.clone();
                w.evidence.timing = timing;
                w.cookies.extend(cookie_values);
                return Stop::Struck(Strike {
                    boundary,
                    screenshot,
                    screenshot_withheld,
                    step,
                    browser_pid,
                });
            }
            Ok(Some(event)) => {
                if follow(w, event, site).await {
                    return Stop::Ended;
                }
            }
            Ok(None) => {
                w.evidence.end = WorkerEnd::Died;
                w.handle.wait_exit(Duration::from_secs(5)).await;
                return Stop::Ended;
            }
            Err(_) => {
                w.handle.crash().await;
                w.evidence.end = WorkerEnd::TimedOut;
                return Stop::Ended;
            }
        }
    }
}

/// Crashes `w` where it waits: its fault struck.
pub(super) async fn crash(w: &mut Tracked) {
    w.handle.crash().await;
    w.evidence.end = WorkerEnd::Crashed;
}

/// What is known of `w` once it is gone: its time, its log's tail, and the ledger after it.
pub(super) async fn settle(w: &mut Tracked, site: &RunningSite) {
    w.evidence.total_ms = ms(w.spawned.elapsed());
    w.evidence.log_tail = w.handle.log_tail();
    w.evidence.stray_processes = w.handle.take_strays();
    w.ledger_seq_after = site.ledger_seq().await;
}

/// Takes in one event of a worker that is not at its armed fault point. Returns whether the
/// worker has ended.
async fn follow(w: &mut Tracked, event: WorkerEvent, site: &RunningSite) -> bool {
    match event {
        WorkerEvent::Started { launch_ms, .. } => {
            w.evidence.start_ms = ms(w.spawned.elapsed());
            w.evidence.timing.launch_ms = launch_ms;
        }
        WorkerEvent::Boundary { cookie_values, .. } => {
            // An unarmed worker never strikes; a marked point of its own just passes.
            w.cookies.extend(cookie_values);
            w.handle.resume().await;
        }
        WorkerEvent::Ready => w.handle.resume().await,
        WorkerEvent::ScenarioBegan => w.evidence.scenario_began = true,
        WorkerEvent::Verified { effect, checked } => {
            w.evidence.verified.push(Verification { effect, checked });
        }
        WorkerEvent::ProfileChecked { untrusted } => w.evidence.untrusted_profile = untrusted,
        WorkerEvent::Step(step) => w.steps.push(step),
        WorkerEvent::Crossed { boundary } => w.crossed.push(boundary),
        WorkerEvent::Finished {
            result,
            timing,
            cookie_values,
            tampered,
        } => {
            w.evidence.tampered = tampered;
            w.evidence.result = Some(result);
            w.evidence.timing = timing;
            w.evidence.end = WorkerEnd::Finished;
            w.cookies.extend(cookie_values);
            if !w.handle.wait_exit(Duration::from_secs(30)).await {
                w.evidence.end = WorkerEnd::TimedOut;
            }
            w.ledger_seq_after = site.ledger_seq().await;
            return true;
        }
    }
    false
}
