//! What the engine and the fault units share: the trial's fixed surroundings ([`World`]),
//! its workers ([`Crew`]), and the narrow view a unit gets of both ([`UnitCtx`]). A leaf: it
//! imports neither the engine nor the units.

use std::path::Path;
use std::time::{Duration, Instant};

use super::drive::{Tracked, Until, drive, settle};
use super::error::TrialError;
use super::spawn::spawn_worker;
use super::{Trial, TrialSettings};
use crate::evidence::{WorkerEnd, WorkerEvidence};
use crate::fault::ms;
use crate::journal::Journal;
use crate::oracle::{FaultRecord, JudgedWorker};
use crate::plan::FaultPoint;
use crate::profile::{Profile, ProfileBackup, ProfileStore};
use crate::site::RunningSite;
use crate::worker::{Account, WorkerSpec};

/// What a trial runs in, fixed once it is prepared.
pub(super) struct World<'a> {
    pub(super) trial: &'a Trial,
    pub(super) settings: &'a TrialSettings,
    pub(super) site: &'a RunningSite,
    pub(super) root: &'a Path,
    pub(super) started: Instant,
    pub(super) journal: Journal,
    pub(super) store: ProfileStore,
    pub(super) run_id: String,
    pub(super) profile: Profile,
    pub(super) browser_version: String,
    pub(super) account: Account,
    /// How long one worker may take.
    pub(super) timeout: Duration,
}

impl World<'_> {
    /// The remote WebDriver endpoint the workers' browsers run on, if any.
    pub(super) fn webdriver_url(&self) -> Option<&str> {
        self.settings.webdriver_url.as_deref()
    }

    /// Milliseconds since the trial started.
    pub(super) fn elapsed_ms(&self) -> u64 {
        ms(self.started.elapsed())
    }
}

/// The trial's workers: how they are spawned, and which of them the oracle judges.
pub(super) struct Crew {
    /// Worker 1's spec; later workers differ in incarnation, arming and temp folder.
    pub(super) base: WorkerSpec,
    /// Every worker reports its steps and crossings (a recording run).
    pub(super) record: bool,
    /// Every worker so far, in spawn order.
    pub(super) workers: Vec<Tracked>,
    /// The workers whose results the oracle judges (not the ones crashed on purpose).
    pub(super) judged: Vec<JudgedWorker>,
}

impl Crew {
    /// The spec of worker `incarnation`, armed at `armed`.
    pub(super) fn spec_for(
        &self,
        root: &Path,
        incarnation: u32,
        armed: Option<FaultPoint>,
    ) -> WorkerSpec {
        let mut spec = self.base.clone();
        spec.incarnation = incarnation;
        spec.armed = armed;
        spec.tmp_dir = root.join(format!("tmp-w{incarnation}"));
        spec.record_steps = self.record;
        spec
    }

    /// The incarnation the next spawned worker gets.
    pub(super) fn next_incarnation(&self) -> u32 {
        self.workers.len() as u32 + 1
    }

    /// The oracle judges `w`'s result.
    pub(super) fn judge(&mut self, w: &Tracked) {
        let e = &w.evidence;
        self.judged.push(JudgedWorker {
            incarnation: e.incarnation,
            result: e.result.filter(|_| e.end == WorkerEnd::Finished),
            within_timeout: e.end != WorkerEnd::TimedOut,
            ledger_seq_before: w.ledger_seq_before,
            ledger_seq_after: w.ledger_seq_after,
        });
    }
}

/// Spawns the worker `spec` describes.
pub(super) async fn spawn(world: &World<'_>, spec: WorkerSpec) -> Result<Tracked, TrialError> {
    let armed = spec.armed;
    let incarnation = spec.incarnation;
    let ledger_seq_before = world.site.ledger_seq().await;
    let spawned = Instant::now();
    let handle = spawn_worker(
        world.trial.scenario,
        spec,
        world.trial.crash_mode,
        &world.settings.worker_args,
        world.root,
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
            stray_processes: Vec::new(),
            scenario_began: false,
        },
    })
}

/// Follows an unarmed worker to its end, within the scenario's timeout.
pub(super) async fn drive_to_end(world: &World<'_>, w: &mut Tracked) {
    let deadline = Instant::now() + world.timeout;
    drive(w, Until::End, deadline, world.site).await;
    settle(w, world.site).await;
}

/// What a unit did to worker 1 at its fault point.
pub(super) enum AtStrike {
    /// Crash it (SIGKILL of its process group, or an abort): the default.
    Crash,
    /// It was let go and lives on; the engine follows it further.
    Resumed,
}

/// What a fault unit may use and change: the world (read through `Deref`), the trial's
/// workers, its fault record, the backup a stale restore swaps in, and the secrets of the
/// harness's own browsers.
pub(super) struct UnitCtx<'e, 'a> {
    pub(super) world: &'e World<'a>,
    pub(super) crew: &'e mut Crew,
    pub(super) fault: &'e mut FaultRecord,
    /// The older copy a stale restore swaps in.
    pub(super) backup: &'e mut Option<ProfileBackup>,
    /// Cookie values of the harness's own browsers (an account switch): secrets too.
    pub(super) harness_cookies: &'e mut Vec<String>,
}

impl<'a> std::ops::Deref for UnitCtx<'_, 'a> {
    type Target = World<'a>;

    fn deref(&self) -> &World<'a> {
        self.world
    }
}

impl UnitCtx<'_, '_> {
    /// The fault did not strike after all: `why` says what happened instead.
    pub(super) fn not_struck(&mut self, why: impl Into<String>) {
        self.fault.struck = false;
        self.fault.instead = Some(why.into());
    }

    /// The spec of worker `incarnation`, armed at `armed`.
    pub(super) fn spec_for(&self, incarnation: u32, armed: Option<FaultPoint>) -> WorkerSpec {
        self.crew.spec_for(self.world.root, incarnation, armed)
    }

    /// Spawns the worker `spec` describes.
    pub(super) async fn spawn_spec(&self, spec: WorkerSpec) -> Result<Tracked, TrialError> {
        spawn(self.world, spec).await
    }

    /// Spawns worker `incarnation`, armed at `armed`.
    pub(super) async fn spawn(
        &self,
        incarnation: u32,
        armed: Option<FaultPoint>,
    ) -> Result<Tracked, TrialError> {
        self.spawn_spec(self.spec_for(incarnation, armed)).await
    }

    /// Follows an unarmed worker to its end, within the scenario's timeout.
    pub(super) async fn drive_to_end(&self, w: &mut Tracked) {
        drive_to_end(self.world, w).await;
    }

    /// The oracle judges `w`'s result.
    pub(super) fn judge_worker(&mut self, w: &Tracked) {
        self.crew.judge(w);
    }
}
