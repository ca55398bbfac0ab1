//! Running one trial, end to end (DESIGN.md, "Trial lifecycle"): prepare, worker 1 up to its
//! fault, the world changed while it is down, the recovery, then the conclusion
//! (`conclude.rs`). Every worker is followed by the one event loop in `drive.rs`; a fault unit
//! (`faults/`) says where worker 1 is armed and what happens there, through the narrow
//! context of `context.rs`.

use std::path::Path;
use std::time::Instant;

use super::conclude::{Ran, TrialReport, conclude};
use super::context::{AtStrike, Crew, UnitCtx, World, drive_to_end, spawn};
use super::drive::{Stop, Tracked, Until, crash, drive, settle};
use super::error::{TrialError, folders_err, setup_err};
use super::faults::{self, FaultUnit};
use super::{Trial, TrialSettings};
use crate::evidence::WorkerEnd;
use crate::fault::{ScreenshotRef, ms};
use crate::journal::{Journal, NewRun};
use crate::oracle::{FaultRecord, ScheduledFault};
use crate::plan::{Boundary, FaultPoint};
use crate::profile::{ProfileBackup, ProfileSpec, ProfileStore};
use crate::site::RunningSite;
use crate::worker::{Account, WorkerSpec};

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
    // The trial's evidence folder is its own until it ends: another run of the same trial
    // into the same out folder waits rather than writing over it.
    let _evidence_held = settings.hold(&name).await.map_err(folders_err)?;
    let _ = std::fs::remove_dir_all(&evidence_dir);
    std::fs::create_dir_all(&evidence_dir).map_err(folders_err)?;
    let root = settings
        .trial_root_base
        .join(format!("{:08x}", rand::random::<u32>()));
    // Known to an interrupt of the runner for as long as the trial runs; refused after it.
    let _live =
        super::interrupt::LiveRoot::create(&root, super::sweep::make_root).map_err(folders_err)?;

    let site = match RunningSite::start((scenario.site)()).await {
        Ok(site) => site,
        Err(e) => {
            // Nothing ran: the root holds its owner marker only, and must not outlive us.
            let _ = super::sweep::remove_root(&root);
            return Err(TrialError::Site(e));
        }
    };
    let result = match Engine::prepare(trial, settings, &site, &root, started, record).await {
        Ok(engine) => engine.run(&*unit, &evidence_dir).await,
        Err(e) => Err(e),
    };
    site.shutdown().await;
    let _ = super::sweep::remove_root(&root);
    result
}

/// A trial in progress. The engine runs the same steps for every trial; a unit (`faults/`)
/// says where worker 1 is armed, what happens when it gets there, and how the world changes
/// while it is down.
struct Engine<'a> {
    world: World<'a>,
    crew: Crew,
    fault: FaultRecord,
    /// The older copy a stale restore swaps in.
    backup: Option<ProfileBackup>,
    screenshot: Option<ScreenshotRef>,
    /// Why the fault point's screenshot was not kept.
    screenshot_withheld: Option<String>,
    /// Cookie values of the harness's own browsers (an account switch): secrets too.
    harness_cookies: Vec<String>,
    setup_ms: u64,
}

impl<'a> Engine<'a> {
    async fn prepare(
        trial: &'a Trial,
        settings: &'a TrialSettings,
        site: &'a RunningSite,
        root: &'a Path,
        started: Instant,
        record: bool,
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
        let network_marks = root.join("network");
        std::fs::create_dir_all(&network_marks).map_err(folders_err)?;
        site.note_network_in(&network_marks);
        let base = WorkerSpec {
            run_id: run_id.clone(),
            incarnation: 1,
            journal_path: journal.path().to_owned(),
            profile_root: store.root().to_owned(),
            profile_path: profile.path().to_owned(),
            tmp_dir: root.join("tmp-w1"),
            scratch_dir: Some(root.join("scratch")),
            network_marks: Some(network_marks),
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
            proxy_trust: site.proxy_trust(),
            own_process_group: true,
            fast_first_navigation: settings.fast_first_navigation,
            start_gate: false,
            discard_profile_after: false,
            binaries,
        };
        Ok(Engine {
            world: World {
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
                timeout: scenario.timeout,
            },
            crew: Crew {
                base,
                record,
                workers: Vec::new(),
                judged: Vec::new(),
            },
            fault: FaultRecord::default(),
            backup: None,
            screenshot: None,
            screenshot_withheld: None,
            harness_cookies: Vec::new(),
            setup_ms: ms(started.elapsed()),
        })
    }

    /// What a fault unit may use and change.
    fn cx(&mut self) -> UnitCtx<'_, 'a> {
        UnitCtx {
            world: &self.world,
            crew: &mut self.crew,
            fault: &mut self.fault,
            backup: &mut self.backup,
            harness_cookies: &mut self.harness_cookies,
        }
    }

    /// The whole trial: the unit's preparation, worker 1 up to its fault, the world changed
    /// while it is down, the recovery worker, then the conclusion.
    async fn run(
        mut self,
        unit: &dyn FaultUnit,
        evidence_dir: &Path,
    ) -> Result<TrialReport, TrialError> {
        self.fault.planned = unit.planned();
        unit.prepare(&mut self.cx()).await?;
        self.setup_ms = self.world.elapsed_ms();
        let phase1 = Instant::now();
        if !unit.own_first_phase(&mut self.cx()).await? {
            self.run_first(unit).await?;
        }
        self.while_down(unit).await;
        if let Some(then) = self.world.trial.then {
            self.crash_recovery_at(then).await?;
        } else if self.world.trial.seeded.is_some() || unit.strike_step().is_some() {
            // The name of a seeded or step trial does not tell the story: the evidence does.
            self.fault.schedule.push(ScheduledFault {
                worker: 1,
                at: self.fault.planned.clone(),
                struck: self.fault.struck,
            });
        }
        let scenario_ms = ms(phase1.elapsed());
        let phase2 = Instant::now();
        if unit.recovers() {
            self.recover().await?;
            if self.fault.struck
                && let Err(why) = unit.after_recovery(&mut self.cx()).await
            {
                self.cx().not_struck(why);
            }
        }
        let recovery_ms = ms(phase2.elapsed());
        // A request held to land late lands now, after every worker ended.
        self.world.site.release_late().await;
        // The trial's own tampering is subtracted only when it happened: an agent that had
        // removed the locks itself left the trial nothing to remove (not struck).
        let planned_tamper = unit.tampers() && self.fault.struck;
        let ran = Ran {
            world: self.world,
            crew: self.crew,
            fault: self.fault,
            screenshot: self.screenshot,
            screenshot_withheld: self.screenshot_withheld,
            harness_cookies: self.harness_cookies,
            planned_tamper,
            demands_stop: unit.demands_stop(),
            setup_ms: self.setup_ms,
            scenario_ms,
            recovery_ms,
        };
        conclude(ran, evidence_dir).await
    }

    /// Runs worker 1 to its armed fault point and lets `unit` strike there; a worker that
    /// never gets there is followed to its end. Worker 1 is recorded in `workers`.
    async fn run_first(&mut self, unit: &dyn FaultUnit) -> Result<(), TrialError> {
        let armed = unit.strike_point();
        let mut spec = self.crew.spec_for(self.world.root, 1, armed);
        spec.armed_step = unit.strike_step();
        let mut first = spawn(&self.world, spec).await?;
        // Workers that arrive while worker 1 lives (a mid-task claimant) are kept aside so
        // that worker 1 stays first.
        let mut later: Vec<Tracked> = Vec::new();
        let deadline = Instant::now() + self.world.timeout;
        while let Stop::Struck(strike) =
            drive(&mut first, Until::Strike, deadline, self.world.site).await
        {
            self.fault.struck = true;
            self.fault.worker = Some(1);
            self.fault.at_ms = Some(self.world.elapsed_ms());
            self.screenshot = strike.screenshot.clone();
            self.screenshot_withheld = strike.screenshot_withheld.clone();
            match unit
                .at_strike(&mut self.cx(), &mut first, strike, &mut later)
                .await?
            {
                AtStrike::Resumed => continue,
                AtStrike::Crash => {
                    crash(&mut first).await;
                    break;
                }
            }
        }
        // An arm that no request took must not catch the recovery's; a held one is let go.
        let site = self.world.site;
        let untaken = site.disarm();
        site.release_held();
        if unit.struck_by_site() && self.fault.instead.is_none() {
            // The site's fault strikes the request itself, under a worker that lives on
            // (unless the unit could not arm it, and said why).
            self.fault.struck = !untaken;
            self.fault.worker = self.fault.struck.then_some(1);
        }
        settle(&mut first, site).await;
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
            self.crew.judge(&first);
        }
        self.crew.workers.push(first);
        self.crew.workers.append(&mut later);
        Ok(())
    }

    /// Worker 1 is down: its grid session is ended (unless the unit keeps it), and, if the
    /// fault struck, the unit changes the world.
    async fn while_down(&mut self, unit: &dyn FaultUnit) {
        let first_crashed = self
            .crew
            .workers
            .first()
            .is_some_and(|w| w.evidence.end == WorkerEnd::Crashed);
        if first_crashed && self.world.webdriver_url().is_some() && !unit.keeps_orphan() {
            // On a grid the killed worker's browser lives on: the pool's reaper, at once.
            super::remote::end_sessions(&self.world.journal, &self.world.run_id, Some(1)).await;
        }
        if self.fault.struck
            && first_crashed
            && let Err(why) = unit.while_down(&mut self.cx()).await
        {
            self.cx().not_struck(why);
        }
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
        let incarnation = self.crew.next_incarnation();
        if !self.fault.struck {
            self.fault.schedule.push(ScheduledFault {
                worker: incarnation,
                at: then.to_string(),
                struck: false,
            });
            return Ok(());
        }
        let world = &self.world;
        let mut spec = self
            .crew
            .spec_for(world.root, incarnation, Some(then.into()));
        if let Some(now) = world.site.account(world.trial.scenario.account) {
            spec.account = now;
        }
        if then == Boundary::AfterClick {
            // As for worker 1: the request lands, and its response is held until the crash.
            faults::after_click::arm_effect(world, crate::site::EffectArm::Landed)?;
        }
        let mut second = spawn(world, spec).await?;
        let deadline = Instant::now() + world.timeout;
        let struck = match drive(&mut second, Until::Strike, deadline, world.site).await {
            Stop::Struck(strike) => {
                if strike.boundary == FaultPoint::AfterClick {
                    world.site.wait_armed_reached(world.timeout).await;
                }
                crash(&mut second).await;
                if world.webdriver_url().is_some() {
                    // As after worker 1's crash: its grid session lives on otherwise.
                    super::remote::end_sessions(&world.journal, &world.run_id, Some(incarnation))
                        .await;
                }
                true
            }
            Stop::Ended => false,
        };
        world.site.disarm();
        world.site.release_held();
        settle(&mut second, world.site).await;
        self.fault.schedule.push(ScheduledFault {
            worker: incarnation,
            at: then.to_string(),
            struck,
        });
        if struck {
            self.fault.worker = Some(incarnation);
        } else {
            let missed = faults::missed(&second.evidence, Some(then.into()), None);
            self.cx()
                .not_struck(format!("the recovery's fault: {missed}"));
            self.crew.judge(&second);
        }
        self.crew.workers.push(second);
        Ok(())
    }

    /// The recovery worker: the same scenario on the same run and profile.
    async fn recover(&mut self) -> Result<(), TrialError> {
        let world = &self.world;
        let incarnation = self.crew.next_incarnation();
        let mut spec = self.crew.spec_for(world.root, incarnation, None);
        // The last worker: its profile is removed after it, so its browser need not quit.
        spec.discard_profile_after = true;
        // The account as its source says now (a rotated password is the new one).
        if let Some(now) = world.site.account(world.trial.scenario.account) {
            spec.account = now;
        }
        let mut recovery = spawn(world, spec).await?;
        drive_to_end(world, &mut recovery).await;
        self.crew.judge(&recovery);
        self.crew.workers.push(recovery);
        Ok(())
    }
}
