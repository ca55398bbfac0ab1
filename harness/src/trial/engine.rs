//! Running one trial, end to end (DESIGN.md, "Trial lifecycle").

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::faults::{self, AtStrike, FaultUnit, Strike};
use super::spawn::{WorkerHandle, spawn_worker};
use super::{FaultPlan, Trial, TrialSettings};
use crate::browser::process;
use crate::cleanup::{CleanupCoordinator, CleanupOutcome};
use crate::evidence::{
    CleanupEvidence, Durations, Evidence, LedgerSummary, TraceStep, Verification, WorkerEnd,
    WorkerEvidence,
};
use crate::fault::{FaultRecord, ScheduledFault, ScreenshotRef, Step, WorkerEvent, ms};
use crate::journal::{Journal, NewRun};
use crate::oracle::{Facts, JudgedWorker, LeakedProfile, judge};
use crate::plan::Boundary;
use crate::profile::{Profile, ProfileBackup, ProfileSpec, ProfileStore};
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
    /// What each worker did, step by step, when the trial was recorded.
    pub(crate) recordings: Vec<WorkerRecording>,
}

/// One worker's steps and the fault points it crossed, in a recorded trial.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct WorkerRecording {
    pub(crate) incarnation: u32,
    pub(crate) steps: Vec<Step>,
    pub(crate) crossed: Vec<Boundary>,
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
            (Some(Boundary::AfterStep), _) => match step {
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
    /// The trial's fault plan pairs a boundary with a variant it does not have.
    #[error(
        "trial `{0}` has a fault plan no fault unit runs (a boundary with a variant it does not have)"
    )]
    UnknownPlan(String),
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

/// One worker, as the trial follows it.
pub(super) struct Tracked {
    pub(super) handle: WorkerHandle,
    pub(super) evidence: WorkerEvidence,
    spawned: Instant,
    /// Cookie values its browser reported: secrets for the evidence scan.
    cookies: Vec<String>,
    /// The ledger's highest sequence number at its spawn, and at its end.
    ledger_seq_before: u64,
    ledger_seq_after: u64,
    /// What a recording worker reported: its steps and the fault points it crossed.
    steps: Vec<Step>,
    crossed: Vec<Boundary>,
}

/// Runs one trial and judges it. Cleanup runs whatever happened; the evidence records it.
pub async fn run_trial(trial: &Trial, settings: &TrialSettings) -> Result<TrialReport, TrialError> {
    run_trial_with(trial, settings, false).await
}

/// [`run_trial`], with every worker reporting its steps and crossings when `record`.
/// Never starts, and never completes, once the run is being interrupted: the stop drops it.
pub(crate) async fn run_trial_with(
    trial: &Trial,
    settings: &TrialSettings,
    record: bool,
) -> Result<TrialReport, TrialError> {
    super::interrupt::unless_stopped(run_trial_unguarded(trial, settings, record)).await
}

async fn run_trial_unguarded(
    trial: &Trial,
    settings: &TrialSettings,
    record: bool,
) -> Result<TrialReport, TrialError> {
    let started = Instant::now();
    let name = trial.name();
    let scenario = trial.scenario;
    let unit = faults::unit(trial.plan).ok_or_else(|| TrialError::UnknownPlan(name.clone()))?;
    let evidence_dir = settings.evidence_dir(&name);
    let _ = std::fs::remove_dir_all(&evidence_dir);
    std::fs::create_dir_all(&evidence_dir).map_err(folders_err)?;
    let root = settings
        .trial_root_base
        .join(format!("{:08x}", rand::random::<u32>()));
    // Known to an interrupt of the runner for as long as the trial runs; refused after it.
    let _live = super::interrupt::LiveRoot::create(&root).map_err(folders_err)?;

    let site = match RunningSite::start((scenario.site)()).await {
        Ok(site) => site,
        Err(e) => {
            // Nothing ran: the root holds its owner marker only, and must not outlive us.
            let _ = std::fs::remove_dir_all(&root);
            return Err(TrialError::Site(e));
        }
    };
    let result = match Engine::prepare(trial, settings, &site, &root, started).await {
        Ok(mut engine) => {
            engine.record = record;
            engine.run(&*unit, &evidence_dir).await
        }
        Err(e) => Err(e),
    };
    site.shutdown().await;
    let _ = std::fs::remove_dir_all(&root);
    result
}

/// A trial in progress: what its fault unit may use and change. The engine runs the same
/// steps for every trial; a unit (`faults/`) says where worker 1 is armed, what happens when
/// it gets there, and how the world changes while it is down.
pub(super) struct Engine<'a> {
    pub(super) trial: &'a Trial,
    settings: &'a TrialSettings,
    pub(super) site: &'a RunningSite,
    pub(super) root: &'a Path,
    started: Instant,
    pub(super) journal: Journal,
    pub(super) store: ProfileStore,
    pub(super) run_id: String,
    pub(super) profile: Profile,
    pub(super) browser_version: String,
    pub(super) account: Account,
    /// Worker 1's spec; later workers differ in incarnation, arming and temp folder.
    pub(super) base: WorkerSpec,
    /// How long one worker may take.
    pub(super) timeout: Duration,
    /// The older copy a stale restore swaps in.
    pub(super) backup: Option<ProfileBackup>,
    /// Every worker so far, in spawn order.
    pub(super) workers: Vec<Tracked>,
    /// The workers whose results the oracle judges (not the ones crashed on purpose).
    pub(super) judged: Vec<JudgedWorker>,
    pub(super) fault: FaultRecord,
    pub(super) screenshot: Option<ScreenshotRef>,
    /// Cookie values of the harness's own browsers (an account switch): secrets too.
    pub(super) harness_cookies: Vec<String>,
    setup_ms: u64,
    /// Every worker reports its steps and crossings (a recording run).
    record: bool,
}

impl<'a> Engine<'a> {
    async fn prepare(
        trial: &'a Trial,
        settings: &'a TrialSettings,
        site: &'a RunningSite,
        root: &'a Path,
        started: Instant,
    ) -> Result<Engine<'a>, TrialError> {
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
        let base = WorkerSpec {
            run_id: run_id.clone(),
            incarnation: 1,
            journal_path: journal.path().to_owned(),
            profile_root: store.root().to_owned(),
            profile_path: profile.path().to_owned(),
            tmp_dir: root.join("tmp-w1"),
            evidence_dir: Some(settings.evidence_dir(&name)),
            origin: site.origin(),
            account: account.clone(),
            armed: None,
            armed_step: None,
            record_steps: false,
            step_timeout: settings.step_timeout.min(scenario.timeout),
            lease_ttl: settings.lease_ttl,
            webdriver_url: settings.webdriver_url.clone(),
            proxy: site.proxy_url(),
            own_process_group: true,
            fast_first_navigation: settings.fast_first_navigation,
            start_gate: false,
            discard_profile_after: false,
            binaries,
        };
        Ok(Engine {
            trial,
            settings,
            site,
            root,
            started,
            journal,
            store,
            run_id,
            profile,
            browser_version,
            account,
            base,
            timeout: scenario.timeout,
            backup: None,
            workers: Vec::new(),
            judged: Vec::new(),
            fault: FaultRecord::default(),
            screenshot: None,
            harness_cookies: Vec::new(),
            setup_ms: ms(started.elapsed()),
            record: false,
        })
    }

    /// The whole trial: the unit's preparation, worker 1 up to its fault, the world changed
    /// while it is down, the recovery worker, then facts, cleanup and verdicts.
    async fn run(
        mut self,
        unit: &dyn FaultUnit,
        evidence_dir: &Path,
    ) -> Result<TrialReport, TrialError> {
        self.fault.planned = unit.planned();
        unit.prepare(&mut self).await?;
        self.setup_ms = ms(self.started.elapsed());
        let phase1 = Instant::now();
        if !unit.own_first_phase(&mut self).await? {
            self.run_first(unit).await?;
        }
        let first_crashed = self
            .workers
            .first()
            .is_some_and(|w| w.evidence.end == WorkerEnd::Crashed);
        if first_crashed && self.settings.webdriver_url.is_some() && !unit.keeps_orphan() {
            // On a grid the killed worker's browser lives on: the pool's reaper, at once.
            super::remote::end_sessions(&self.journal, &self.run_id, Some(1)).await;
        }
        if self.fault.struck
            && first_crashed
            && let Err(why) = unit.while_down(&mut self).await
        {
            self.not_struck(why);
        }
        if let Some(then) = self.trial.then {
            self.crash_recovery_at(then).await?;
        } else if self.trial.seeded.is_some() || unit.strike_step().is_some() {
            // The name of a seeded or step trial does not tell the story: the evidence does.
            self.fault.schedule.push(ScheduledFault {
                worker: 1,
                at: self.fault.planned.clone(),
                struck: self.fault.struck,
            });
        }
        let scenario_ms = ms(phase1.elapsed());

        // The recovery worker: the same scenario on the same run and profile.
        let phase2 = Instant::now();
        if unit.recovers() {
            let incarnation = self.next_incarnation();
            let mut spec = self.spec_for(incarnation, None);
            // The last worker: its profile is removed after it, so its browser need not quit.
            spec.discard_profile_after = true;
            // The account as its source says now (a rotated password is the new one).
            if let Some(now) = self.site.account(self.trial.scenario.account) {
                spec.account = now;
            }
            let mut recovery = self.spawn_spec(spec).await?;
            self.drive_to_end(&mut recovery).await;
            self.judge_worker(&recovery);
            self.workers.push(recovery);
        }
        let recovery_ms = ms(phase2.elapsed());
        self.conclude(unit, evidence_dir, scenario_ms, recovery_ms)
            .await
    }

    /// The remote WebDriver endpoint the workers' browsers run on, if any.
    pub(super) fn webdriver_url(&self) -> Option<&str> {
        self.settings.webdriver_url.as_deref()
    }

    /// Milliseconds since the trial started.
    pub(super) fn elapsed_ms(&self) -> u64 {
        ms(self.started.elapsed())
    }

    /// The fault did not strike after all: `why` says what happened instead.
    pub(super) fn not_struck(&mut self, why: impl Into<String>) {
        self.fault.struck = false;
        self.fault.instead = Some(why.into());
    }

    /// The spec of worker `incarnation`, armed at `armed`.
    pub(super) fn spec_for(&self, incarnation: u32, armed: Option<Boundary>) -> WorkerSpec {
        let mut spec = self.base.clone();
        spec.incarnation = incarnation;
        spec.armed = armed;
        spec.tmp_dir = self.root.join(format!("tmp-w{incarnation}"));
        spec.record_steps = self.record;
        spec
    }

    /// The incarnation the next spawned worker gets.
    pub(super) fn next_incarnation(&self) -> u32 {
        self.workers.len() as u32 + 1
    }

    /// Runs worker 1 to its armed fault point and lets `unit` strike there; a worker that
    /// never gets there is followed to its end. Worker 1 is recorded in `workers`.
    pub(super) async fn run_first(&mut self, unit: &dyn FaultUnit) -> Result<(), TrialError> {
        let armed = unit.strike_point();
        let mut spec = self.spec_for(1, armed);
        spec.armed_step = unit.strike_step();
        let mut first = self.spawn_spec(spec).await?;
        // Workers that arrive while worker 1 lives (a mid-task claimant) are kept aside so
        // that worker 1 stays first.
        let mut later: Vec<Tracked> = Vec::new();
        let deadline = Instant::now() + self.timeout;
        loop {
            let event = tokio::time::timeout_at(deadline.into(), first.handle.next_event()).await;
            match event {
                Ok(Some(WorkerEvent::Boundary {
                    boundary,
                    screenshot,
                    browser_pid,
                    timing,
                    cookie_values,
                    step,
                })) => {
                    first.evidence.struck = Some(boundary);
                    first.evidence.struck_step = step.clone();
                    first.evidence.timing = timing;
                    first.cookies.extend(cookie_values);
                    self.fault.struck = true;
                    self.fault.worker = Some(1);
                    self.fault.at_ms = Some(self.elapsed_ms());
                    self.screenshot = screenshot;
                    let strike = Strike { browser_pid, step };
                    match unit.at_strike(self, &mut first, strike, &mut later).await? {
                        AtStrike::Resumed => continue,
                        AtStrike::Crash => {
                            first.handle.crash().await;
                            first.evidence.end = WorkerEnd::Crashed;
                            break;
                        }
                    }
                }
                Ok(Some(event)) => {
                    if self.follow(&mut first, event).await {
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
        let untaken = self.site.disarm();
        self.site.release_held();
        if unit.struck_by_site() {
            // The site's fault strikes the request itself, under a worker that lives on.
            self.fault.struck = !untaken;
            self.fault.worker = self.fault.struck.then_some(1);
        }
        first.evidence.total_ms = ms(first.spawned.elapsed());
        first.evidence.log_tail = first.handle.log_tail();
        first.ledger_seq_after = self.site.ledger_seq().await;
        if !self.fault.struck && self.fault.instead.is_none() {
            self.fault.instead = Some(if armed.is_some() || unit.strike_step().is_some() {
                faults::missed(&first.evidence, armed, unit.strike_step())
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
            self.judge_worker(&first);
        }
        self.workers.push(first);
        self.workers.append(&mut later);
        Ok(())
    }

    /// Depth 2: once worker 1's fault struck, the recovery worker is armed at `then` of its
    /// own and crashed there; the next worker is the one that must recover. A recovery that
    /// never gets to `then` means the fault did not strike: the trial says so.
    async fn crash_recovery_at(&mut self, then: Boundary) -> Result<(), TrialError> {
        let first = ScheduledFault {
            worker: 1,
            at: self.fault.planned.clone(),
            struck: self.fault.struck,
        };
        self.fault.schedule.push(first);
        let incarnation = self.next_incarnation();
        if !self.fault.struck {
            self.fault.schedule.push(ScheduledFault {
                worker: incarnation,
                at: then.to_string(),
                struck: false,
            });
            return Ok(());
        }
        let mut spec = self.spec_for(incarnation, Some(then));
        if let Some(now) = self.site.account(self.trial.scenario.account) {
            spec.account = now;
        }
        if then == Boundary::AfterClick {
            // As for worker 1: the request lands, and its response is held until the crash.
            faults::after_click::arm_effect(self, crate::site::EffectArm::Landed)?;
        }
        let mut second = self.spawn_spec(spec).await?;
        let deadline = Instant::now() + self.timeout;
        let struck = loop {
            match tokio::time::timeout_at(deadline.into(), second.handle.next_event()).await {
                Ok(Some(WorkerEvent::Boundary {
                    boundary,
                    timing,
                    cookie_values,
                    ..
                })) => {
                    second.evidence.struck = Some(boundary);
                    second.evidence.timing = timing;
                    second.cookies.extend(cookie_values);
                    if boundary == Boundary::AfterClick {
                        self.site.wait_armed_reached(self.timeout).await;
                    }
                    second.handle.crash().await;
                    second.evidence.end = WorkerEnd::Crashed;
                    if self.settings.webdriver_url.is_some() {
                        // As after worker 1's crash: its grid session lives on otherwise.
                        super::remote::end_sessions(&self.journal, &self.run_id, Some(incarnation))
                            .await;
                    }
                    break true;
                }
                Ok(Some(event)) => {
                    if follow(&mut second, event, self.site).await {
                        break false;
                    }
                }
                Ok(None) => {
                    second.evidence.end = WorkerEnd::Died;
                    second.handle.wait_exit(Duration::from_secs(5)).await;
                    break false;
                }
                Err(_) => {
                    second.handle.crash().await;
                    second.evidence.end = WorkerEnd::TimedOut;
                    break false;
                }
            }
        };
        self.site.disarm();
        self.site.release_held();
        second.evidence.total_ms = ms(second.spawned.elapsed());
        second.evidence.log_tail = second.handle.log_tail();
        second.ledger_seq_after = self.site.ledger_seq().await;
        self.fault.schedule.push(ScheduledFault {
            worker: incarnation,
            at: then.to_string(),
            struck,
        });
        if struck {
            self.fault.worker = Some(incarnation);
        } else {
            let missed = faults::missed(&second.evidence, Some(then), None);
            self.not_struck(format!("the recovery's fault: {missed}"));
            self.judge_worker(&second);
        }
        self.workers.push(second);
        Ok(())
    }

    /// Spawns worker `incarnation`, armed at `armed`.
    pub(super) async fn spawn(
        &self,
        incarnation: u32,
        armed: Option<Boundary>,
    ) -> Result<Tracked, TrialError> {
        self.spawn_spec(self.spec_for(incarnation, armed)).await
    }

    pub(super) async fn spawn_spec(&self, spec: WorkerSpec) -> Result<Tracked, TrialError> {
        let armed = spec.armed;
        let incarnation = spec.incarnation;
        let ledger_seq_before = self.site.ledger_seq().await;
        let spawned = Instant::now();
        let handle = spawn_worker(
            self.trial.scenario,
            spec,
            self.trial.crash_mode,
            &self.settings.worker_args,
            self.root,
        )
        .await
        .map_err(TrialError::Spawn)?;
        Ok(Tracked {
            handle,
            spawned,
            cookies: Vec::new(),
            ledger_seq_before,
            ledger_seq_after: ledger_seq_before,
            steps: Vec::new(),
            crossed: Vec::new(),
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
                struck_step: None,
            },
        })
    }

    /// The oracle judges `w`'s result.
    pub(super) fn judge_worker(&mut self, w: &Tracked) {
        let e = &w.evidence;
        self.judged.push(JudgedWorker {
            incarnation: e.incarnation,
            result: e.result.filter(|_| e.end == WorkerEnd::Finished),
            within_timeout: e.end != WorkerEnd::TimedOut,
            ledger_seq_before: w.ledger_seq_before,
            ledger_seq_after: w.ledger_seq_after,
        });
    }

    /// Takes in one event of a worker that is not at its armed fault point. Returns whether
    /// the worker has ended.
    pub(super) async fn follow(&self, w: &mut Tracked, event: WorkerEvent) -> bool {
        follow(w, event, self.site).await
    }

    /// Follows an unarmed worker to its end, within the scenario's timeout.
    pub(super) async fn drive_to_end(&self, w: &mut Tracked) {
        let deadline = Instant::now() + self.timeout;
        loop {
            match tokio::time::timeout_at(deadline.into(), w.handle.next_event()).await {
                Ok(Some(event)) => {
                    if follow(w, event, self.site).await {
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
        w.ledger_seq_after = self.site.ledger_seq().await;
        w.evidence.total_ms = ms(w.spawned.elapsed());
        w.evidence.log_tail = w.handle.log_tail();
    }

    /// Signs the trial's profile in as the site's other account, with a browser of the
    /// harness's own; its cookies become secrets of the trial.
    pub(super) async fn switch_profile_account(&mut self) -> Result<(), String> {
        let cookies = self
            .site
            .switch_profile_account(&self.base, self.root)
            .await?;
        self.harness_cookies.extend(cookies);
        Ok(())
    }

    /// Facts, cleanup, verdicts and the evidence file.
    async fn conclude(
        self,
        unit: &dyn FaultUnit,
        evidence_dir: &Path,
        scenario_ms: u64,
        recovery_ms: u64,
    ) -> Result<TrialReport, TrialError> {
        let Engine {
            trial,
            site,
            root,
            started,
            journal,
            store,
            run_id,
            profile,
            account,
            workers,
            judged,
            fault,
            screenshot,
            harness_cookies,
            setup_ms,
            ..
        } = self;
        let name = trial.name();
        let scenario = trial.scenario;
        let recordings = workers
            .iter()
            .map(|w| WorkerRecording {
                incarnation: w.evidence.incarnation,
                steps: w.steps.clone(),
                crossed: w.crossed.clone(),
                finished: w.evidence.end == WorkerEnd::Finished,
            })
            .collect();
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
        let open_remote_sessions = super::remote::open_sessions(&journal, &run_id).await;
        let oracle_ms_before_cleanup = ms(oracle_started.elapsed());

        // Cleanup: every profile of the trial, failed or not, with proof.
        let cleanup_started = Instant::now();
        super::remote::end_sessions(&journal, &run_id, None).await;
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
        let planned_tamper = unit.tampers();
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
                _ => None,
            },
            crash_mode: trial.crash_mode,
            workers: workers.iter().map(|w| w.evidence.clone()).collect(),
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
            open_remote_sessions,
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
            recordings,
        })
    }
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
