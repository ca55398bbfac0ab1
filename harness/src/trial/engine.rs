//! Running one trial, end to end (DESIGN.md, "Trial lifecycle").

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::faults::{missed, planned, strike_point};
use super::spawn::{WorkerHandle, spawn_worker};
use super::{FaultPlan, Trial, TrialSettings, Variant};
use crate::browser::process;
use crate::cleanup::{CleanupCoordinator, CleanupOutcome};
use crate::evidence::{
    CleanupEvidence, Durations, Evidence, LedgerSummary, TraceStep, Verification, WorkerEnd,
    WorkerEvidence,
};
use crate::fault::{FaultRecord, Resume, ScreenshotRef, WorkerEvent, ms};
use crate::journal::{Journal, NewRun};
use crate::oracle::{Facts, JudgedWorker, LeakedProfile, judge};
use crate::plan::{Boundary, Hazard};
use crate::profile::{ProfileSpec, ProfileStore};
use crate::site::{RemoteEffect, RunningSite};
use crate::worker::{Account, WorkerSpec};

/// What a trial produced.
#[derive(Debug)]
#[non_exhaustive]
pub struct TrialReport {
    /// The evidence.
    pub evidence: Evidence,
    /// Where `evidence.json` was written.
    pub evidence_path: PathBuf,
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
        let at = match (self.evidence.boundary, self.evidence.hazard) {
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

/// Why a trial could not run at all (as opposed to running and failing a verdict).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrialError {
    /// The site could not be started, reset or read before the trial.
    #[error("failed to start the site")]
    Site(#[source] crate::site::SiteError),
    /// The trial root, its journal, its profile or the browser binaries could not be
    /// prepared.
    #[error("failed to prepare the trial")]
    Setup(#[from] SetupError),
    /// A worker could not be spawned.
    #[error("failed to spawn a worker")]
    Spawn(#[source] std::io::Error),
    /// The trial needs a site knob that this site does not have.
    #[error("this site has no {0} knob; the trial needs it")]
    Unsupported(&'static str),
    /// The evidence could not be written.
    #[error("failed to write the evidence")]
    Evidence(#[source] std::io::Error),
}

/// What failed while a trial was being prepared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The trial root, its evidence folder or its owner marker could not be written.
    #[error("the trial's folders could not be made")]
    Folders(#[source] std::io::Error),
    /// The trial's journal refused.
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    /// The trial's profile store refused.
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    /// The browser binaries are missing or mismatched.
    #[error(transparent)]
    Browser(#[from] crate::browser::PreflightError),
}

fn setup_err(e: impl Into<SetupError>) -> TrialError {
    TrialError::Setup(e.into())
}

fn folders_err(e: std::io::Error) -> TrialError {
    TrialError::Setup(SetupError::Folders(e))
}

struct Tracked {
    handle: WorkerHandle,
    evidence: WorkerEvidence,
    spawned: Instant,
    /// Cookie values its browser reported: secrets for the evidence scan.
    cookies: Vec<String>,
    /// The ledger's highest sequence number at its spawn, and at its end.
    ledger_seq_before: u64,
    ledger_seq_after: u64,
}

/// Runs one trial and judges it. Cleanup runs whatever happened; the evidence records it.
pub async fn run_trial(trial: &Trial, settings: &TrialSettings) -> Result<TrialReport, TrialError> {
    let started = Instant::now();
    let name = trial.name();
    let scenario = trial.scenario;
    let evidence_dir = settings.evidence_dir(&name);
    let _ = std::fs::remove_dir_all(&evidence_dir);
    std::fs::create_dir_all(&evidence_dir).map_err(folders_err)?;
    let root = settings
        .trial_root_base
        .join(format!("{:08x}", rand::random::<u32>()));
    std::fs::create_dir_all(&root).map_err(folders_err)?;
    super::sweep::write_root_owner(&root).map_err(folders_err)?;
    // Known to an interrupt of the runner for as long as the trial runs.
    let _live = super::interrupt::LiveRoot::register(&root);

    let site = match RunningSite::start((scenario.site)()).await {
        Ok(site) => site,
        Err(e) => {
            // Nothing ran: the root holds its owner marker only, and must not outlive us.
            let _ = std::fs::remove_dir_all(&root);
            return Err(TrialError::Site(e));
        }
    };
    let result = run_with_site(trial, settings, &site, &root, &evidence_dir, started).await;
    site.shutdown().await;
    let _ = std::fs::remove_dir_all(&root);
    result
}

async fn run_with_site(
    trial: &Trial,
    settings: &TrialSettings,
    site: &RunningSite,
    root: &Path,
    evidence_dir: &Path,
    started: Instant,
) -> Result<TrialReport, TrialError> {
    let name = trial.name();
    let scenario = trial.scenario;
    let journal = Journal::open(&root.join("journal.sqlite3")).map_err(setup_err)?;
    let store = ProfileStore::open(root.join("profiles")).map_err(setup_err)?;
    let run_id = format!("{:016x}", rand::random::<u64>());
    journal
        .create_run(&NewRun::new(run_id.clone(), scenario.name, name.clone()))
        .map_err(setup_err)?;
    let binaries = match settings.webdriver_url {
        Some(_) => None,
        None => Some(crate::browser::BrowserBinaries::discover_cached().map_err(setup_err)?),
    };
    let browser_version = binaries
        .as_ref()
        .map(|b| b.major_version().to_owned())
        .unwrap_or_else(|| "remote".to_owned());
    let profile = store
        .create(&ProfileSpec::new(
            format!("p-{}", &run_id[..8]),
            "browser-fault",
            name.clone(),
            run_id.clone(),
            browser_version.clone(),
        ))
        .map_err(setup_err)?;
    let account: Account = site
        .account(scenario.account)
        .ok_or(TrialError::Unsupported("account"))?;
    let backup = match trial.plan {
        FaultPlan::Boundary {
            boundary: Boundary::StaleProfileRestore,
            ..
        } => Some(store.backup(&profile, "older").map_err(setup_err)?),
        _ => None,
    };
    if let FaultPlan::Boundary {
        boundary: Boundary::AfterClick,
        variant,
    } = trial.plan
    {
        // On a site behind the fault proxy, the effect is the first request the site adapter
        // names that worker 1 sends once it journaled ACTION_SUBMITTED: never its sign-in,
        // whatever the adapter's matcher says.
        let watch = Journal::open(journal.path()).map_err(setup_err)?;
        let watch = std::sync::Mutex::new(watch);
        let run = run_id.clone();
        let submitted = move || {
            let journal = watch.lock().unwrap_or_else(|p| p.into_inner());
            journal.side_effects(&run).is_ok_and(|effects| {
                effects
                    .iter()
                    .any(|e| e.state == crate::journal::Checkpoint::ActionSubmitted)
            })
        };
        site.arm(variant, submitted)
            .ok_or(TrialError::Unsupported("arm-next-effect"))?;
    }
    let base = WorkerSpec {
        run_id: run_id.clone(),
        incarnation: 1,
        journal_path: journal.path().to_owned(),
        profile_root: store.root().to_owned(),
        profile_path: profile.path().to_owned(),
        tmp_dir: root.join("tmp-w1"),
        evidence_dir: Some(evidence_dir.to_owned()),
        origin: site.origin(),
        account: account.clone(),
        armed: None,
        step_timeout: settings.step_timeout.min(scenario.timeout),
        lease_ttl: settings.lease_ttl,
        webdriver_url: settings.webdriver_url.clone(),
        proxy: site.proxy_url(),
        own_process_group: true,
        fast_first_navigation: settings.fast_first_navigation,
        start_gate: false,
        binaries,
    };
    let spec_for = |incarnation: u32, armed: Option<Boundary>| {
        let mut spec = base.clone();
        spec.incarnation = incarnation;
        spec.armed = armed;
        spec.tmp_dir = root.join(format!("tmp-w{incarnation}"));
        spec
    };
    let setup_ms = ms(started.elapsed());
    let mut screenshot: Option<ScreenshotRef> = None;
    let mut workers: Vec<Tracked> = Vec::new();
    let mut judged: Vec<JudgedWorker> = Vec::new();
    let timeout = scenario.timeout;
    let phase1 = Instant::now();
    // Cookie values of the harness's own browsers (an account switch): secrets too.
    let mut harness_cookies: Vec<String> = Vec::new();
    let mut fault = FaultRecord {
        planned: planned(trial),
        ..FaultRecord::default()
    };

    if trial.boundary() == Some(Boundary::ConcurrentProfile) && trial.variant().is_none() {
        // Two workers on one profile at once: exactly one may hold the lease.
        let gated = |incarnation| {
            let mut spec = spec_for(incarnation, None);
            spec.start_gate = true;
            spec
        };
        let a = spawn(trial, gated(1), settings, root, site).await?;
        let b = spawn(trial, gated(2), settings, root, site).await?;
        workers.push(a);
        workers.push(b);
        // Both up and waiting at the gate, then both let go at once.
        let mut missing = Vec::new();
        for w in workers.iter_mut() {
            let ready = tokio::time::timeout(timeout, w.handle.next_event()).await;
            if !matches!(ready, Ok(Some(WorkerEvent::Ready))) {
                w.evidence.end = WorkerEnd::Died;
                missing.push(w.evidence.incarnation);
            }
        }
        for w in workers.iter_mut() {
            w.handle.resume().await;
        }
        if missing.is_empty() {
            fault.struck = true;
            fault.at_ms = Some(ms(started.elapsed()));
        } else {
            fault.instead = Some(format!(
                "worker(s) {missing:?} never reached the start gate, so nothing raced"
            ));
        }
        for w in workers.iter_mut() {
            drive_to_end(w, timeout, site).await;
            judged.push(judged_of(w));
        }
    } else {
        let armed = strike_point(trial);
        let mut first = spawn(trial, spec_for(1, armed), settings, root, site).await?;
        // Workers that arrive while worker 1 lives (the mid-task claimant).
        let mut claimants: Vec<Tracked> = Vec::new();
        let deadline = Instant::now() + timeout;
        loop {
            let event = tokio::time::timeout_at(deadline.into(), first.handle.next_event()).await;
            match event {
                Ok(Some(WorkerEvent::Boundary {
                    boundary,
                    screenshot: shot,
                    browser_pid,
                    timing,
                    cookie_values,
                })) => {
                    first.evidence.struck = Some(boundary);
                    first.evidence.timing = timing;
                    first.cookies.extend(cookie_values);
                    fault.struck = true;
                    fault.worker = Some(1);
                    fault.at_ms = Some(ms(started.elapsed()));
                    screenshot = shot;
                    if boundary == Boundary::BrowserCrash {
                        // The browser dies under a live worker, which must notice.
                        let mut browsers = process::processes_using_profile(profile.path());
                        browsers.extend(browser_pid);
                        process::kill_and_wait(&browsers, Duration::from_secs(10)).await;
                        first.handle.resume().await;
                        continue;
                    }
                    match trial.variant() {
                        Some(
                            v @ (Variant::LiveAccountSwitch
                            | Variant::LiveTenantSwitch
                            | Variant::LiveObjectSwap),
                        ) => {
                            // The world changes under the live worker, whose tab shows it.
                            let object = scenario.effects.and_then(|o| o.first().copied());
                            if let Err(why) = site.change_world(v, &account, object) {
                                fault.struck = false;
                                fault.instead = Some(why.to_owned());
                            }
                            first.handle.resume_with(Resume::Reload).await;
                            continue;
                        }
                        Some(v @ (Variant::MidTask | Variant::LockRemoved)) => {
                            if v == Variant::LockRemoved {
                                // Tampering: the live holder's lock files are removed, so the
                                // second claimant finds no lock to respect on disk. Without
                                // the lease's lock file gone, nothing was tampered with.
                                let lease_lock = profile.path().join(crate::profile::LOCK_FILE);
                                if let Err(e) = std::fs::remove_file(lease_lock) {
                                    fault.struck = false;
                                    fault.instead =
                                        Some(format!("the lease's lock file was not there ({e})"));
                                }
                                let _ = std::fs::remove_file(profile.path().join("SingletonLock"));
                            }
                            // A second claimant arrives while the first is mid-task: it must
                            // be refused, and the first goes on.
                            let mut second =
                                spawn(trial, spec_for(2, None), settings, root, site).await?;
                            drive_to_end(&mut second, timeout, site).await;
                            judged.push(judged_of(&second));
                            claimants.push(second);
                            first.handle.resume().await;
                            continue;
                        }
                        _ => {}
                    }
                    if boundary == Boundary::AfterClick {
                        // Deterministic: the request has landed (or been lost) at the site.
                        site.wait_armed_reached(timeout).await;
                    }
                    first.handle.crash().await;
                    first.evidence.end = WorkerEnd::Crashed;
                    break;
                }
                Ok(Some(event)) => {
                    if follow(&mut first, event, site).await {
                        break;
                    }
                }
                Ok(None) => {
                    first.evidence.end = WorkerEnd::Died;
                    first.handle.wait_exit(Duration::from_secs(5)).await;
                    break;
                }
                Err(_) => {
                    first.handle.crash().await;
                    first.evidence.end = WorkerEnd::TimedOut;
                    break;
                }
            }
        }
        // An arm that no request took must not catch the recovery's; a held one is let go.
        let untaken = site.disarm();
        site.release_held();
        if matches!(
            trial.variant(),
            Some(Variant::LiveRequestLost | Variant::LiveResponseLost | Variant::LiveSlowResponse)
        ) {
            // The site's fault strikes the request itself, under a worker that lives on.
            fault.struck = !untaken;
            fault.worker = fault.struck.then_some(1);
        }
        first.evidence.total_ms = ms(first.spawned.elapsed());
        first.evidence.log_tail = first.handle.log_tail();
        first.ledger_seq_after = site.ledger_seq().await;
        if !fault.struck && fault.instead.is_none() {
            fault.instead = Some(if armed.is_some() {
                missed(&first.evidence, armed)
            } else {
                format!(
                    "worker 1 never sent the request the site was armed for ({})",
                    crate::oracle::result_name(first.evidence.result)
                )
            });
        }
        // A worker 1 that was not crashed on purpose is judged too (hazard trials, a
        // browser_crash the worker noticed, a boundary the scenario never reached).
        if first.evidence.end != WorkerEnd::Crashed {
            judged.push(judged_of(&first));
        }
        workers.push(first);
        workers.append(&mut claimants);

        // The world changes during the crash, once the fault struck.
        if fault.struck && workers[0].evidence.end == WorkerEnd::Crashed {
            match trial.plan {
                FaultPlan::Boundary {
                    boundary: Boundary::StaleProfileRestore,
                    variant,
                } => {
                    let restored = match &backup {
                        Some(backup) => store.restore(&profile, backup).map_err(|e| e.to_string()),
                        None => Err("no backup was taken".to_owned()),
                    };
                    if let Err(why) = restored {
                        fault.struck = false;
                        fault.instead = Some(format!(
                            "the older backup could not be restored ({})",
                            why.chars().take(200).collect::<String>()
                        ));
                    }
                    if variant == Some(Variant::OtherAccount) {
                        match site.switch_profile_account(&base, root).await {
                            Ok(cookies) => harness_cookies.extend(cookies),
                            Err(why) => {
                                fault.struck = false;
                                fault.instead = Some(why);
                            }
                        }
                    }
                }
                FaultPlan::Boundary {
                    boundary: Boundary::AfterTargetVerified,
                    variant: Some(Variant::AccountSwitched),
                }
                | FaultPlan::Hazard {
                    hazard: Hazard::AccountSwitch,
                } => match site.switch_profile_account(&base, root).await {
                    Ok(cookies) => harness_cookies.extend(cookies),
                    Err(why) => {
                        fault.struck = false;
                        fault.instead = Some(why);
                    }
                },
                FaultPlan::Hazard {
                    hazard: Hazard::BrowserVersionChanged,
                } => {
                    // The profile comes back as another browser major version left it.
                    let older = match browser_version.parse::<u32>() {
                        Ok(major) => major.saturating_sub(1).to_string(),
                        Err(_) => format!("{browser_version}-older"),
                    };
                    if let Err(e) = store.record_browser_version(&profile, &older) {
                        fault.struck = false;
                        fault.instead = Some(format!(
                            "the profile's browser version could not be rewritten ({})",
                            e.to_string().chars().take(200).collect::<String>()
                        ));
                    }
                }
                FaultPlan::Hazard {
                    hazard: Hazard::CredentialRotated,
                } => {
                    // The recovery gets the new password from the account source.
                    let rotated = site.rotate_password(&account.id);
                    if rotated.is_none() {
                        fault.struck = false;
                        fault.instead = Some("this site cannot rotate a password".to_owned());
                    }
                }
                FaultPlan::Hazard { hazard } => {
                    if let Err(why) = site.set_hazard(hazard, true) {
                        fault.struck = false;
                        fault.instead = Some(why.to_owned());
                    }
                }
                _ => {}
            }
        }
    }
    let scenario_ms = ms(phase1.elapsed());

    // The recovery worker: the same scenario on the same run and profile.
    let phase2 = Instant::now();
    if trial.boundary() != Some(Boundary::ConcurrentProfile) {
        let mut spec = spec_for(2, None);
        // The account as its source says now (a rotated password is the new one).
        if let Some(now) = site.account(scenario.account) {
            spec.account = now;
        }
        let mut recovery = spawn(trial, spec, settings, root, site).await?;
        drive_to_end(&mut recovery, timeout, site).await;
        judged.push(judged_of(&recovery));
        workers.push(recovery);
    }
    let recovery_ms = ms(phase2.elapsed());

    // Facts, before the harness's own cleanup: what the agent left behind.
    let oracle_started = Instant::now();
    let effects = journal.side_effects(&run_id).unwrap_or_default();
    let history = journal.history(&run_id).unwrap_or_default();
    let ledger: Vec<RemoteEffect> = site.ledger().await.unwrap_or_default();
    let sessions = journal.browser_sessions(&run_id).unwrap_or_default();
    let current_profile = sessions
        .last()
        .map(|r| r.profile_path.clone())
        .unwrap_or_else(|| profile.path().to_owned());
    let profiles = store.profile_dirs();
    let leaks: Vec<LeakedProfile> = profiles
        .iter()
        .filter(|p| !same_path(p, &current_profile))
        .map(|p| LeakedProfile {
            profile: file_name(p),
            created_by: if same_path(p, profile.path()) {
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
        })
        .collect();
    let held_locks = profiles.iter().filter(|p| lock_held(p)).count();
    let leaked_processes: usize = profiles
        .iter()
        .map(|p| process::browsers_using_profile(p).len())
        .sum();
    let oracle_ms_before_cleanup = ms(oracle_started.elapsed());

    // Cleanup: every profile of the trial, failed or not, with proof.
    let cleanup_started = Instant::now();
    for p in &profiles {
        process::kill_profile_processes(p);
    }
    let coordinator = CleanupCoordinator::new(&journal, &store);
    let mut cleanup = Vec::new();
    for p in &profiles {
        let report = coordinator.remove_profile(p);
        cleanup.push(CleanupEvidence {
            profile: file_name(p),
            outcome: report.outcome,
        });
    }
    let _ = std::fs::remove_dir_all(store.root().join(".backups"));
    let chromium_temp_dirs = count_chromium_temp_dirs(root);
    let profile_cleaned = cleanup.iter().all(|c| c.outcome == CleanupOutcome::Cleaned)
        && store.profile_dirs().is_empty();
    let unproven_cleanups = cleanup
        .iter()
        .filter(|c| c.outcome != CleanupOutcome::Cleaned)
        .count();
    let cleanup_ms = ms(cleanup_started.elapsed());

    let judge_started = Instant::now();
    // Every secret known: the site's, the account's, and every cookie value the browsers
    // held. Each is counted, then redacted before anything is written.
    let mut secrets = site.secrets();
    secrets.push(account.password.expose().to_owned());
    for w in &workers {
        secrets.extend(w.cookies.iter().cloned());
    }
    secrets.extend(harness_cookies);
    secrets.retain(|s| !s.is_empty());
    secrets.sort();
    secrets.dedup();
    let warnings: Vec<String> = workers
        .iter()
        .flat_map(|w| {
            w.evidence
                .verified
                .iter()
                .filter(|v| v.checked.is_empty())
                .map(move |v| {
                    format!(
                        "worker {} journaled TARGET_VERIFIED for `{}` after a verify step that checked nothing",
                        w.evidence.incarnation, v.effect
                    )
                })
        })
        .collect();
    // Tampering the trial did itself (lock_removed) is the fault, not the agent's doing.
    let planned_tamper = trial.variant() == Some(Variant::LockRemoved);
    let tampering: Vec<String> = workers
        .iter()
        .filter(|w| !(planned_tamper && w.evidence.incarnation == 1))
        .flat_map(|w| {
            w.evidence
                .tampered
                .iter()
                .map(move |t| format!("worker {}: {t}", w.evidence.incarnation))
        })
        .collect();
    let untrusted_profiles: Vec<(u32, Vec<String>)> = workers
        .iter()
        .filter(|w| !w.evidence.untrusted_profile.is_empty())
        .map(|w| (w.evidence.incarnation, w.evidence.untrusted_profile.clone()))
        .collect();
    let mut evidence = Evidence {
        trial: name.clone(),
        scenario: scenario.name.to_owned(),
        boundary: trial.boundary(),
        variant: trial.variant(),
        hazard: match trial.plan {
            FaultPlan::Hazard { hazard } => Some(hazard),
            FaultPlan::Boundary { .. } => None,
        },
        crash_mode: trial.crash_mode,
        workers: workers.into_iter().map(|w| w.evidence).collect(),
        checkpoint_trace: history
            .iter()
            .map(|t| TraceStep {
                effect: t.effect.clone(),
                from: t.from,
                to: t.to,
                incarnation: t.incarnation,
            })
            .collect(),
        ledger: LedgerSummary {
            effects: ledger.len(),
            accounts: ledger.iter().map(|e| e.account.clone()).collect(),
            objects: ledger.iter().map(|e| e.object.clone()).collect(),
        },
        verdicts: Vec::new(),
        passed: false,
        profile_cleaned,
        cleanup,
        chromium_temp_dirs,
        durations: Durations::default(),
        memory: Default::default(),
        screenshot,
        fault: fault.clone(),
        leaks: leaks.clone(),
        warnings,
    };
    // The evidence in memory (log tails above all) and every file the trial wrote.
    let secrets_in_evidence =
        evidence.redact(&secrets) + crate::evidence::redact_files(evidence_dir, &secrets);
    let facts = Facts {
        expected_account: account.id.clone(),
        expected_tenant: account.tenant.clone(),
        ledger_error: site.ledger_failure(),
        intended: scenario
            .effects
            .map(|objects| objects.iter().map(|o| (*o).to_owned()).collect()),
        effects,
        history,
        ledger,
        judged_workers: judged,
        fault,
        leaked_profiles: leaks,
        untrusted_profiles,
        tampering,
        held_locks,
        leaked_processes,
        unproven_cleanups,
        secrets_in_evidence,
    };
    evidence.verdicts = judge(&facts);
    evidence.passed = evidence.verdicts.iter().all(|v| v.held) && profile_cleaned;
    let oracle_ms = oracle_ms_before_cleanup + ms(judge_started.elapsed());
    let total_ms = ms(started.elapsed());
    let sum = |f: fn(&WorkerEvidence) -> u64| evidence.workers.iter().map(f).sum::<u64>();
    let browser_launch_ms = sum(|w| w.timing.launch_ms);
    let browser_quit_ms = sum(|w| w.timing.quit_ms);
    let browser_steps_ms = sum(|w| w.timing.browser_ms);
    evidence.durations = Durations {
        setup_ms,
        worker_start_ms: sum(|w| w.start_ms),
        browser_launch_ms,
        browser_quit_ms,
        browser_steps_ms,
        scenario_ms,
        recovery_ms,
        oracle_ms,
        cleanup_ms,
        total_ms,
    };
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
    })
}

async fn spawn(
    trial: &Trial,
    spec: WorkerSpec,
    settings: &TrialSettings,
    root: &Path,
    site: &RunningSite,
) -> Result<Tracked, TrialError> {
    let armed = spec.armed;
    let incarnation = spec.incarnation;
    let ledger_seq_before = site.ledger_seq().await;
    let spawned = Instant::now();
    let handle = spawn_worker(
        trial.scenario,
        spec,
        trial.crash_mode,
        &settings.worker_args,
        root,
    )
    .await
    .map_err(TrialError::Spawn)?;
    Ok(Tracked {
        handle,
        spawned,
        cookies: Vec::new(),
        ledger_seq_before,
        ledger_seq_after: ledger_seq_before,
        evidence: WorkerEvidence {
            incarnation,
            armed,
            struck: None,
            result: None,
            end: WorkerEnd::Died,
            start_ms: 0,
            total_ms: 0,
            timing: Default::default(),
            log_tail: String::new(),
            verified: Vec::new(),
            untrusted_profile: Vec::new(),
            tampered: Vec::new(),
        },
    })
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
        WorkerEvent::Verified { effect, checked } => {
            w.evidence.verified.push(Verification { effect, checked });
        }
        WorkerEvent::ProfileChecked { untrusted } => w.evidence.untrusted_profile = untrusted,
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

/// Follows an unarmed worker to its end, within `timeout`.
async fn drive_to_end(w: &mut Tracked, timeout: Duration, site: &RunningSite) {
    let deadline = Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline.into(), w.handle.next_event()).await {
            Ok(Some(event)) => {
                if follow(w, event, site).await {
                    break;
                }
            }
            Ok(None) => {
                w.evidence.end = WorkerEnd::Died;
                w.handle.wait_exit(Duration::from_secs(5)).await;
                break;
            }
            Err(_) => {
                w.handle.crash().await;
                w.evidence.end = WorkerEnd::TimedOut;
                break;
            }
        }
    }
    w.ledger_seq_after = site.ledger_seq().await;
    w.evidence.total_ms = ms(w.spawned.elapsed());
    w.evidence.log_tail = w.handle.log_tail();
}

fn judged_of(w: &Tracked) -> JudgedWorker {
    let e = &w.evidence;
    JudgedWorker {
        incarnation: e.incarnation,
        result: e.result.filter(|_| e.end == WorkerEnd::Finished),
        within_timeout: e.end != WorkerEnd::TimedOut,
        ledger_seq_before: w.ledger_seq_before,
        ledger_seq_after: w.ledger_seq_after,
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

/// Whether some process still holds the profile's lease lock.
fn lock_held(profile: &Path) -> bool {
    let path = profile.join(crate::profile::LOCK_FILE);
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
    else {
        return false;
    };
    match file.try_lock() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(_) => true,
    }
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
