//! The end of a trial, in four steps: the facts the agent left behind, the harness's own
//! cleanup, the evidence (secrets redacted), and the judgement. Each step takes only what it
//! needs.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::FaultPlan;
use super::context::{Crew, World};
use super::drive::Tracked;
use super::error::TrialError;
use crate::browser::process;
use crate::cleanup::{CleanupCoordinator, CleanupOutcome};
use crate::evidence::{
    CleanupEvidence, Durations, Evidence, LedgerSummary, TraceStep, WorkerEnd, WorkerEvidence,
};
use crate::fault::{ScreenshotRef, Step, ms};
use crate::journal::{BrowserSessionRecord, CheckpointTransition, SideEffectRecord};
use crate::oracle::{Facts, FaultRecord, LeakedProfile, judge};
use crate::plan::FaultPoint;
use crate::site::RemoteEffect;

/// What a trial produced.
#[derive(Debug)]
#[non_exhaustive]
pub struct TrialReport {
    /// The evidence.
    pub evidence: Evidence,
    /// Where `evidence.json` was written.
    pub evidence_path: PathBuf,
    /// What each worker did, step by step, when the trial was recorded.
    pub(crate) recordings: Vec<WorkerRecording>,
}

/// One worker's steps and the fault points it crossed, in a recorded trial.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct WorkerRecording {
    pub(crate) incarnation: u32,
    pub(crate) steps: Vec<Step>,
    pub(crate) crossed: Vec<FaultPoint>,
    /// Whether the worker ran to its end (not crashed, not timed out).
    pub(crate) finished: bool,
}

impl TrialReport {
    /// Whether every invariant held and cleanup was proven.
    pub fn passed(&self) -> bool {
        self.evidence.passed
    }

    /// A failure message a user can act on: which invariant broke, at which boundary, and
    /// where the evidence is.
    pub fn failure_message(&self) -> Option<String> {
        let broken: Vec<String> = self
            .evidence
            .broken()
            .map(|v| format!("  invariant `{}` broke: {}", v.invariant, v.explanation))
            .collect();
        if broken.is_empty() {
            return None;
        }
        let step = self
            .evidence
            .workers
            .iter()
            .find_map(|w| w.struck_step.as_ref());
        let at = match (self.evidence.boundary, self.evidence.hazard) {
            (Some(FaultPoint::AfterStep), _) => match step {
                Some(step) => format!("right after step {} (`{}`)", step.n, step.label),
                None => "at a step that was never reached".to_owned(),
            },
            (Some(b), _) => format!("at boundary `{b}`"),
            (None, Some(h)) => format!("under hazard `{h}`"),
            _ => String::new(),
        };
        Some(format!(
            "trial {} failed {at}:\n{}\n  evidence: {}",
            self.evidence.trial,
            broken.join("\n"),
            self.evidence_path.display()
        ))
    }
}

/// A trial whose workers have all ended: what the conclusion works from.
pub(super) struct Ran<'a> {
    pub(super) world: World<'a>,
    pub(super) crew: Crew,
    pub(super) fault: FaultRecord,
    pub(super) screenshot: Option<ScreenshotRef>,
    /// Why the fault point's screenshot was not kept.
    pub(super) screenshot_withheld: Option<String>,
    /// Cookie values of the harness's own browsers: secrets too.
    pub(super) harness_cookies: Vec<String>,
    /// Worker 1's own tampering was the fault (the trial did it, not the agent).
    pub(super) planned_tamper: bool,
    /// What the trial put before the target that demands a stop ([`FaultUnit::demands_stop`]).
    ///
    /// [`FaultUnit::demands_stop`]: super::faults::FaultUnit::demands_stop
    pub(super) demands_stop: Option<&'static str>,
    pub(super) setup_ms: u64,
    pub(super) scenario_ms: u64,
    pub(super) recovery_ms: u64,
}

/// Facts, cleanup, evidence and judgement; the evidence file is written.
pub(super) async fn conclude(ran: Ran<'_>, evidence_dir: &Path) -> Result<TrialReport, TrialError> {
    let recordings = ran.crew.workers.iter().map(recording).collect();
    let oracle_started = Instant::now();
    let found = facts(&ran.world).await;
    let oracle_ms_before_cleanup = ms(oracle_started.elapsed());

    let cleanup_started = Instant::now();
    let cleaned = cleanup(&ran.world, &found.profiles).await;
    let cleanup_ms = ms(cleanup_started.elapsed());

    let judge_started = Instant::now();
    let mut evidence = evidence(&ran, &found, &cleaned);
    let secrets = secrets(&ran.world, &ran.crew.workers, &ran.harness_cookies);
    // The evidence in memory (log tails above all) and every file the trial wrote.
    let secrets_in_evidence =
        evidence.redact(&secrets) + crate::evidence::redact_files(evidence_dir, &secrets);
    judgement(&mut evidence, &ran, found, &cleaned, secrets_in_evidence);
    let oracle_ms = oracle_ms_before_cleanup + ms(judge_started.elapsed());
    evidence.durations = durations(&evidence.workers, &ran, oracle_ms, cleanup_ms);
    evidence.memory = crate::evidence::Memory {
        runner_peak_rss_kb: crate::fault::peak_rss_kb(),
        worker_peak_rss_kb: evidence
            .workers
            .iter()
            .map(|w| w.timing.peak_rss_kb)
            .max()
            .unwrap_or(0),
    };
    let evidence_path = evidence.write(evidence_dir).map_err(TrialError::Evidence)?;
    Ok(TrialReport {
        evidence,
        evidence_path,
        recordings,
    })
}

fn recording(w: &Tracked) -> WorkerRecording {
    WorkerRecording {
        incarnation: w.evidence.incarnation,
        steps: w.steps.clone(),
        crossed: w.crossed.clone(),
        finished: w.evidence.end == WorkerEnd::Finished,
    }
}

/// What the agent left behind, read before the harness's own cleanup.
struct Found {
    effects: Vec<SideEffectRecord>,
    history: Vec<CheckpointTransition>,
    ledger: Vec<RemoteEffect>,
    /// Every profile folder in the trial's store.
    profiles: Vec<PathBuf>,
    leaks: Vec<LeakedProfile>,
    held_locks: usize,
    leaked_processes: usize,
    open_remote_sessions: Vec<u32>,
}

/// Step 1: the facts, before anything is cleaned up.
async fn facts(world: &World<'_>) -> Found {
    let World {
        journal,
        run_id,
        site,
        store,
        profile,
        ..
    } = world;
    let effects = journal.side_effects(run_id).unwrap_or_default();
    let history = journal.history(run_id).unwrap_or_default();
    let ledger: Vec<RemoteEffect> = site.ledger().await.unwrap_or_default();
    let sessions = journal.browser_sessions(run_id).unwrap_or_default();
    let current_profile = sessions
        .last()
        .map(|r| r.profile_path.clone())
        .unwrap_or_else(|| profile.path().to_owned());
    let profiles = store.profile_dirs();
    let leaks: Vec<LeakedProfile> = profiles
        .iter()
        .filter(|p| !same_path(p, &current_profile))
        .map(|p| leaked(p, profile.path(), &sessions))
        .collect();
    let held_locks = profiles
        .iter()
        .filter(|p| crate::lease::lock_held(p))
        .count();
    let leaked_processes: usize = profiles
        .iter()
        .map(|p| process::browsers_using_profile(p).len())
        .sum();
    let open_remote_sessions = super::remote::open_sessions(journal, run_id).await;
    Found {
        effects,
        history,
        ledger,
        profiles,
        leaks,
        held_locks,
        leaked_processes,
        open_remote_sessions,
    }
}

/// A profile other than the current one, and who made it.
fn leaked(p: &Path, first: &Path, sessions: &[BrowserSessionRecord]) -> LeakedProfile {
    LeakedProfile {
        profile: file_name(p),
        created_by: if same_path(p, first) {
            "the trial (for worker 1)".to_owned()
        } else {
            sessions
                .iter()
                .find(|s| same_path(&s.profile_path, p))
                .map_or_else(
                    || "an unknown worker".to_owned(),
                    |s| format!("worker {}", s.incarnation),
                )
        },
        abandoned: sessions.iter().any(|s| same_path(&s.profile_path, p)),
    }
}

/// What the harness's own cleanup did.
struct Cleaned {
    cleanup: Vec<CleanupEvidence>,
    chromium_temp_dirs: usize,
    profile_cleaned: bool,
    unproven_cleanups: usize,
}

/// Step 2: every profile of the trial is removed, failed or not, with proof.
async fn cleanup(world: &World<'_>, profiles: &[PathBuf]) -> Cleaned {
    super::remote::end_sessions(&world.journal, &world.run_id, None).await;
    for p in profiles {
        process::kill_profile_processes(p);
    }
    let coordinator = CleanupCoordinator::new(&world.journal, &world.store);
    let cleanup: Vec<CleanupEvidence> = profiles
        .iter()
        .map(|p| CleanupEvidence {
            profile: file_name(p),
            outcome: coordinator.remove_profile(p).outcome,
        })
        .collect();
    let _ = std::fs::remove_dir_all(world.store.root().join(".backups"));
    let chromium_temp_dirs = count_chromium_temp_dirs(world.root);
    let profile_cleaned = cleanup.iter().all(|c| c.outcome == CleanupOutcome::Cleaned)
        && world.store.profile_dirs().is_empty();
    let unproven_cleanups = cleanup
        .iter()
        .filter(|c| c.outcome != CleanupOutcome::Cleaned)
        .count();
    Cleaned {
        cleanup,
        chromium_temp_dirs,
        profile_cleaned,
        unproven_cleanups,
    }
}

/// Step 3: the evidence, without verdicts yet (and before its secrets are redacted).
fn evidence(ran: &Ran<'_>, found: &Found, cleaned: &Cleaned) -> Evidence {
    let trial = ran.world.trial;
    let workers = &ran.crew.workers;
    Evidence {
        trial: trial.name(),
        scenario: trial.scenario.name.to_owned(),
        boundary: trial.fault_point(),
        variant: trial.variant(),
        hazard: match trial.plan {
            FaultPlan::Hazard { hazard } => Some(hazard),
            _ => None,
        },
        crash_mode: trial.crash_mode,
        workers: workers.iter().map(|w| w.evidence.clone()).collect(),
        checkpoint_trace: found
            .history
            .iter()
            .map(|t| TraceStep {
                effect: t.effect.clone(),
                from: t.from,
                to: t.to,
                incarnation: t.incarnation,
            })
            .collect(),
        ledger: LedgerSummary {
            effects: found.ledger.len(),
            accounts: found.ledger.iter().map(|e| e.account.clone()).collect(),
            objects: found.ledger.iter().map(|e| e.object.clone()).collect(),
        },
        verdicts: Vec::new(),
        passed: false,
        profile_cleaned: cleaned.profile_cleaned,
        cleanup: cleaned.cleanup.clone(),
        chromium_temp_dirs: cleaned.chromium_temp_dirs,
        durations: Durations::default(),
        memory: Default::default(),
        screenshot: ran.screenshot.clone(),
        screenshot_withheld: ran.screenshot_withheld.clone(),
        fault: ran.fault.clone(),
        leaks: found.leaks.clone(),
        warnings: workers.iter().flat_map(empty_verifications).collect(),
    }
}

/// Every secret known: the site's, the account's, and every cookie value the browsers held.
/// Each is counted, then redacted before anything is written.
fn secrets(world: &World<'_>, workers: &[Tracked], harness_cookies: &[String]) -> Vec<String> {
    let mut secrets = world.site.secrets();
    secrets.push(world.account.password.expose().to_owned());
    for w in workers {
        secrets.extend(w.cookies.iter().cloned());
    }
    secrets.extend(harness_cookies.iter().cloned());
    secrets.retain(|s| !s.is_empty());
    secrets.sort();
    secrets.dedup();
    secrets
}

/// A warning for each `TARGET_VERIFIED` of `w`'s whose verify step checked nothing.
fn empty_verifications(w: &Tracked) -> impl Iterator<Item = String> + '_ {
    // Kept apart so that the chain's lines fit: rustfmt leaves a chain alone when one of its
    // lines cannot be made to fit.
    const CHECKED_NOTHING: &str = "after a verify step that checked nothing";
    let n = w.evidence.incarnation;
    w.evidence
        .verified
        .iter()
        .filter(|v| v.checked.is_empty())
        .map(move |v| {
            let effect = &v.effect;
            format!("worker {n} journaled TARGET_VERIFIED for `{effect}` {CHECKED_NOTHING}")
        })
}

/// Step 4: the oracle judges the facts; the evidence gets its verdicts.
fn judgement(
    evidence: &mut Evidence,
    ran: &Ran<'_>,
    found: Found,
    cleaned: &Cleaned,
    secrets_in_evidence: usize,
) {
    let workers = &ran.crew.workers;
    // Tampering the trial did itself (lock_removed) is the fault, not the agent's doing.
    let tampering: Vec<String> = workers
        .iter()
        .filter(|w| !(ran.planned_tamper && w.evidence.incarnation == 1))
        .flat_map(|w| {
            w.evidence
                .tampered
                .iter()
                .map(move |t| format!("worker {}: {t}", w.evidence.incarnation))
        })
        .collect();
    let stray_processes: Vec<(u32, Vec<String>)> = workers
        .iter()
        .filter(|w| !w.evidence.stray_processes.is_empty())
        .map(|w| (w.evidence.incarnation, w.evidence.stray_processes.clone()))
        .collect();
    let untrusted_profiles: Vec<(u32, Vec<String>)> = workers
        .iter()
        .filter(|w| !w.evidence.untrusted_profile.is_empty())
        .map(|w| (w.evidence.incarnation, w.evidence.untrusted_profile.clone()))
        .collect();
    let account = &ran.world.account;
    let secrets_sent = ran.world.site.secrets_sent(&found.ledger);
    let facts = Facts {
        expected_account: account.id.clone(),
        expected_tenant: account.tenant.clone(),
        demands_stop: ran.demands_stop.map(str::to_owned),
        ledger_error: ran.world.site.ledger_failure(),
        intended: ran
            .world
            .trial
            .scenario
            .effects
            .map(|objects| objects.iter().map(|o| (*o).to_owned()).collect()),
        effects: found.effects,
        history: found.history,
        ledger: found.ledger,
        judged_workers: ran.crew.judged.clone(),
        fault: ran.fault.clone(),
        leaked_profiles: found.leaks,
        untrusted_profiles,
        tampering,
        held_locks: found.held_locks,
        leaked_processes: found.leaked_processes,
        stray_processes,
        open_remote_sessions: found.open_remote_sessions,
        unproven_cleanups: cleaned.unproven_cleanups,
        secrets_in_evidence,
        secrets_sent,
    };
    evidence.verdicts = judge(&facts);
    evidence.passed = evidence.verdicts.iter().all(|v| v.held) && cleaned.profile_cleaned;
}

/// Where the trial's time went.
fn durations(
    workers: &[WorkerEvidence],
    ran: &Ran<'_>,
    oracle_ms: u64,
    cleanup_ms: u64,
) -> Durations {
    let sum = |f: fn(&WorkerEvidence) -> u64| workers.iter().map(f).sum::<u64>();
    Durations {
        setup_ms: ran.setup_ms,
        worker_start_ms: sum(|w| w.start_ms),
        browser_launch_ms: sum(|w| w.timing.launch_ms),
        browser_quit_ms: sum(|w| w.timing.quit_ms),
        browser_steps_ms: sum(|w| w.timing.browser_ms),
        scenario_ms: ran.scenario_ms,
        recovery_ms: ran.recovery_ms,
        oracle_ms,
        cleanup_ms,
        total_ms: ran.world.elapsed_ms(),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn same_path(a: &Path, b: &Path) -> bool {
    a == b
        || std::fs::canonicalize(a)
            .ok()
            .zip(std::fs::canonicalize(b).ok())
            .is_some_and(|(a, b)| a == b)
}

fn count_chromium_temp_dirs(root: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("tmp-w"))
        .filter_map(|e| std::fs::read_dir(e.path()).ok())
        .flat_map(|d| d.flatten())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("org.chromium.Chromium")
        })
        .count()
}
