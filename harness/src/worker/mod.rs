//! One incarnation of the agent: a browser session on a profile, and the journal.
//!
//! A [`Worker`] is what a scenario gets. It holds the profile's lease, runs a real Chromium
//! on the profile, and writes the journal. The fault points of the eight boundaries live in
//! its primitives (its start, [`Page::sign_in`], [`SideEffect::run`]), so a scenario
//! crosses them without naming them.

mod account;
pub(crate) mod adapter;
mod cdp;
pub mod command;
mod effect;
mod endpoint;
mod fault_point;
pub(crate) mod hook;
mod journal_handle;
mod launch;
mod locks;
mod log;
mod orphans;
mod page;
pub(crate) mod spec;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use account::{Account, Secret};
pub use command::{AgentCommand, CommandLineError};
pub use journal_handle::JournalHandle;
pub(crate) use log::{LogSink, trace};
pub(crate) use spec::WorkerSpec;

/// Why the browser under a worker failed ([`TaskError::Browser`]).
pub use crate::browser::BrowserError;
/// A profile's lease (one live worker per profile) refused or lost, and the holder's row
/// ([`TaskError::Lease`]).
pub use crate::lease::{LeaseError, LeaseErrorKind, LeaseRecord};
pub use crate::outcome::{
    AgentError, AgentFailure, FailureKind, Outcome, SafeStop, TaskError, TaskResult, WorkerResult,
};
pub use effect::{EffectStatus, SideEffect};
pub use page::{Page, Target, TargetCheck};

pub(crate) use fault_point::strike;
use fault_point::{cookie_values, cookies_at, report_strike, take_screenshot};
/// The worker's side of the fault engine (its fault hook).
pub(crate) use hook::FaultHook;
use launch::short;
use locks::singleton_lock_owner;

use crate::browser::{Browser, BrowserBinaries, SessionRegistry, SessionToken};
use crate::fault::{Shot, WorkerEvent};
use crate::journal::Journal;
use crate::lease::{Lease, LeaseHolder};
use crate::logtail::LogTail;
use crate::plan::{Boundary, FaultPoint};
use crate::profile::{PolicyFinding, Profile, ProfilePolicy, ProfileStore};

/// What pages share with their worker.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) spec: WorkerSpec,
    pub(crate) registry: SessionRegistry,
    pub(crate) fault: Arc<FaultHook>,
    pub(crate) log: LogSink,
    pub(crate) journal: Journal,
    /// The site's adapter: its sign-in, page facts, identity and effect status.
    pub(crate) site: Arc<dyn adapter::Site>,
    /// What the checks run since the last side effect's verify step began actually checked
    /// (see [`Page::expect_target`]).
    pub(crate) checks: Mutex<Vec<&'static str>>,
    /// A click was dispatched and no page step has waited for what it started yet (see
    /// [`Page::click`]).
    pub(crate) click_pending: std::sync::atomic::AtomicBool,
    /// A click was dispatched in this worker: its end waits for the requests clicks started.
    pub(crate) clicked: std::sync::atomic::AtomicBool,
    /// `browser_crash` was crossed at an endpoint (it is crossed once per worker).
    pub(crate) browser_crash_crossed: std::sync::atomic::AtomicBool,
    /// The agent sent a command through one of the worker's endpoints (an agent command
    /// that ends with no claim and never did is told apart from one that failed).
    pub(crate) agent_drove: std::sync::atomic::AtomicBool,
    /// The proxy's notes of what the site answered, as they stood when this worker
    /// started: the boundaries its endpoints read from the network.
    pub(crate) network: Option<crate::network_marks::Marks>,
}

impl Shared {
    /// Records that a target check passed.
    pub(crate) fn record_checks(&self, checks: &[&'static str]) {
        let mut all = self.checks.lock().unwrap_or_else(|p| p.into_inner());
        for c in checks {
            if !all.contains(c) {
                all.push(c);
            }
        }
    }

    /// Counts a completed browser command: recording, it is reported; at the armed step the
    /// worker is crashed here.
    pub(crate) async fn browser_step(&self, token: Option<SessionToken>, label: &str) {
        let pid = token.and_then(|t| {
            self.registry
                .with_browser(t, crate::browser::Browser::browser_pid)
                .ok()
                .flatten()
        });
        self.fault.browser_step(label, pid).await;
    }

    /// Takes the checks recorded so far.
    pub(crate) fn take_checks(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.checks.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// One incarnation of the agent.
#[derive(Debug)]
pub struct Worker {
    shared: Arc<Shared>,
    store: ProfileStore,
    profile: Profile,
    lease: Option<Lease>,
    token: Option<SessionToken>,
    session_id: String,
    sessions_started: u32,
    findings: Vec<PolicyFinding>,
    binaries: Option<BrowserBinaries>,
    /// The profile check refused the profile, so the browser was not launched at the start.
    launch_pending: bool,
    /// Live sessions of earlier workers of this run still holding the profile on a remote
    /// endpoint (a killed worker's browser lives on there). While any is left, no browser
    /// is launched on the profile.
    orphans: Vec<crate::journal::RemoteSession>,
    /// The WebDriver endpoint an agent's own client connects to, once asked for.
    endpoint: Option<endpoint::Endpoint>,
    /// The CDP endpoint an agent's own DevTools client connects to, once asked for.
    cdp: Option<cdp::CdpEndpoint>,
}

impl Worker {
    /// Starts a worker outside any trial: no fault point is armed, nobody listens, the log
    /// is kept in memory ([`Worker::log_tail`]). The run must exist in the journal and the
    /// profile in the store. For exploring a scenario, and for testing the browser layer.
    pub(crate) async fn start_standalone(
        spec: WorkerSpec,
        site: Arc<dyn adapter::Site>,
    ) -> Result<Worker, TaskError> {
        let tail = Arc::new(Mutex::new(LogTail::default()));
        Worker::start(
            spec,
            site,
            Arc::new(FaultHook::detached()),
            LogSink::Tail(tail),
        )
        .await
    }

    /// The rolling tail of this worker's log, when it keeps it in memory (a standalone or
    /// `abort`-mode worker); `None` for a worker process, whose trial keeps it.
    pub fn log_tail(&self) -> Option<String> {
        match &self.shared.log {
            LogSink::Tail(tail) => Some(tail.lock().unwrap_or_else(|p| p.into_inner()).text()),
            LogSink::Stderr => None,
        }
    }

    /// The browser's pid, and chromedriver's when the harness started it.
    pub fn browser_pids(&self) -> (Option<u32>, Option<u32>) {
        self.token
            .and_then(|t| {
                self.shared
                    .registry
                    .with_browser(t, |b| (b.browser_pid(), b.driver_pid()))
                    .ok()
            })
            .unwrap_or((None, None))
    }

    /// SIGKILLs the browser's main process under this live worker (what the `browser_crash`
    /// boundary does), leaving its stale `SingletonLock` in the profile.
    pub fn kill_browser(&self) {
        if let Some(token) = self.token {
            let _ = self
                .shared
                .registry
                .with_browser(token, Browser::kill_browser_only);
        }
    }

    /// Launches a new browser session on the same profile, after the old one died: the stale
    /// lock is recovered only when its owner is dead. A new browser-session record is written
    /// first.
    pub async fn relaunch_browser(&mut self) -> Result<(), TaskError> {
        if let Some(token) = self.token.take()
            && let Some(mut old) = self.shared.registry.retire(token)
        {
            old.kill();
        }
        self.launch_browser().await
    }

    /// Starts a worker: claims the profile's lease (a second worker is refused here, before
    /// anything launches), checks the profile against the journal, bumps its generation,
    /// writes the browser-session record, recovers a stale browser lock only when its owner is
    /// dead, and launches the browser (on a profile the check refused, only when the agent
    /// goes on to use it). Then the `after_profile_created` fault point.
    pub(crate) async fn start(
        spec: WorkerSpec,
        site: Arc<dyn adapter::Site>,
        fault: Arc<FaultHook>,
        log: LogSink,
    ) -> Result<Worker, TaskError> {
        trace(&log, || "worker start".to_owned());
        let journal = Journal::open(&spec.journal_path)?;
        let store = ProfileStore::open(&spec.profile_root)?;
        let profile = store.open_profile(&spec.profile_path)?;
        let holder = LeaseHolder::this_process(spec.run_id.clone(), spec.incarnation);
        let lease = match crate::lease::claim_lease(&journal, &profile, &holder, spec.lease_ttl) {
            Ok(lease) => lease,
            Err(e) if matches!(e.kind(), crate::lease::LeaseErrorKind::Held { .. }) => {
                return Err(SafeStop::LeaseHeld.into());
            }
            Err(e) => return Err(e.into()),
        };
        let binaries = match (&spec.webdriver_url, &spec.binaries) {
            (Some(_), _) => None,
            (None, Some(given)) => Some(given.clone()),
            (None, None) => Some(
                BrowserBinaries::discover_cached().map_err(crate::browser::BrowserError::from)?,
            ),
        };
        let previous = journal.browser_sessions(&spec.run_id)?;
        let expected_generation = previous.iter().map(|s| s.profile_generation).max();
        let policy = ProfilePolicy {
            expected_generation,
            expected_browser_version: binaries.as_ref().map(|b| b.major_version().to_owned()),
            ..ProfilePolicy::default()
        };
        let findings = store.check_policy(&profile, &policy)?;
        let network = spec
            .network_marks
            .clone()
            .map(crate::network_marks::Marks::from_now);
        let shared = Arc::new(Shared {
            registry: SessionRegistry::new(),
            fault,
            log: log.clone(),
            journal,
            site,
            spec,
            checks: Mutex::new(Vec::new()),
            click_pending: std::sync::atomic::AtomicBool::new(false),
            clicked: std::sync::atomic::AtomicBool::new(false),
            browser_crash_crossed: std::sync::atomic::AtomicBool::new(false),
            agent_drove: std::sync::atomic::AtomicBool::new(false),
            network,
        });
        let mut worker = Worker {
            shared,
            store,
            profile,
            lease: Some(lease),
            token: None,
            session_id: String::new(),
            sessions_started: 0,
            findings,
            binaries,
            launch_pending: false,
            orphans: Vec::new(),
            endpoint: None,
            cdp: None,
        };
        for finding in &worker.findings {
            worker.log(&format!("profile finding: {}", finding_name(finding)));
        }
        worker.report_profile_check().await;
        worker.orphans = worker.find_orphans().await?;
        if !worker.orphans.is_empty() {
            // No second browser on a profile a live one holds: the launch waits until the
            // orphans are proven gone (`Worker::open`) or the agent moves elsewhere.
            worker.log(&format!(
                "the profile is held by {} live orphaned browser session(s) of an earlier worker",
                worker.orphans.len()
            ));
            worker.strike(Boundary::AfterProfileCreated).await;
        } else if worker.require_trusted_profile().is_ok() {
            worker.launch_browser().await?;
            worker.strike(Boundary::AfterProfileCreated).await;
        } else {
            // The check refused the profile: an agent that checks it stops here without a
            // browser (one launched and quit for nothing cost a stale-restore trial about
            // 0.8 s). One that goes on anyway, or migrates, gets it at its first `open`,
            // identity probe or side effect, and the `after_profile_created` point with it.
            worker.launch_pending = true;
            worker.log("profile refused by its check: the browser starts only if used");
        }
        Ok(worker)
    }

    /// The page of the current browser session (whatever it shows). On a profile its check
    /// refused, there is no session until [`Worker::open`], [`Worker::probe_identity`] or a
    /// side effect starts one.
    pub fn page(&self) -> Page {
        Page::new(self.shared.clone(), self.token)
    }

    /// Navigates to `route` on the site (`/threads/42`) and waits until it loaded.
    ///
    /// On a profile still held by a live orphaned session of an earlier worker (a remote
    /// endpoint keeps a killed worker's browser), it first ends those sessions through the
    /// endpoint and launches only once the endpoint proves them gone
    /// ([`Worker::end_orphaned_sessions`]).
    pub async fn open(&mut self, route: &str) -> Result<Page, TaskError> {
        self.ensure_browser().await?;
        let page = self.page();
        page.goto(route).await?;
        Ok(page)
    }

    /// The WebDriver URL of this worker's browser, for an agent that drives the browser
    /// with a WebDriver client of its own (thirtyfour, fantoccini, …) instead of [`Page`].
    ///
    /// The URL is a protocol proxy on loopback, one per worker. Its `POST /session` returns
    /// the worker's own browser session (the real Chromium on the worker's profile, behind
    /// the fault proxy, with the harness's flags), whatever capabilities the client asks for:
    /// what it asked for is ignored, and the worker's log names it. Every command the agent
    /// sends is a step of `every_step` (the worker is crashed right after its N-th command,
    /// before the agent sees the answer), timed and logged by name only; an element click is
    /// answered once dispatched, so a site that holds the response never holds the agent
    /// inside its click; the agent's quit ends nothing (the harness ends the browser with
    /// the worker). On a profile its check refused, asking for the URL launches the browser.
    ///
    /// ```no_run
    /// # use browser_fault::prelude::*;
    /// # async fn agent(w: &mut Worker) -> Result<(), Box<dyn std::error::Error>> {
    /// use thirtyfour::prelude::*;
    /// // The one line that changes: the agent's own launch becomes a connect.
    /// let driver = WebDriver::new(w.webdriver_url().await?, DesiredCapabilities::chrome()).await?;
    /// driver.goto(&format!("{}/threads/42", w.origin())).await?;
    /// # Ok(()) }
    /// ```
    pub async fn webdriver_url(&mut self) -> Result<String, TaskError> {
        self.ensure_browser().await?;
        if self.endpoint.is_none() {
            let started = endpoint::Endpoint::start(self.shared.clone())
                .await
                .map_err(|e| TaskError::Browser(BrowserError::Endpoint(e)))?;
            self.endpoint = Some(started);
        }
        Ok(self
            .endpoint
            .as_ref()
            .map(|e| e.url().to_owned())
            .unwrap_or_default())
    }

    /// The worker's browser for an agent with its own Chrome DevTools Protocol client:
    /// `http://127.0.0.1:PORT`, whose `/json/version` names the browser's WebSocket
    /// (chromiumoxide's `Browser::connect`, Playwright's `chromium.connectOverCDP`,
    /// puppeteer's `browserURL` take it as it is).
    ///
    /// Like [`Worker::webdriver_url`], a protocol proxy on loopback, one per worker, to the
    /// real Chromium on the worker's profile: every method call the agent makes is a step of
    /// `every_step` (the worker is crashed right after the browser answered its N-th call,
    /// before the agent has the answer), timed and traced by method name only, and
    /// `browser_crash` strikes at its first call once a side effect is verified. The agent
    /// must not close the browser (`Browser.close`): the harness ends it with the worker.
    ///
    /// ```no_run
    /// # use browser_fault::prelude::*;
    /// # async fn agent(w: &mut Worker) -> Result<(), Box<dyn std::error::Error>> {
    /// let cdp = w.cdp_url().await?;
    /// // Node: `await chromium.connectOverCDP(process.env.CDP_URL)`, with CDP_URL = cdp.
    /// # let _ = cdp; Ok(()) }
    /// ```
    pub async fn cdp_url(&mut self) -> Result<String, TaskError> {
        self.ensure_browser().await?;
        if self.cdp.is_none() {
            let capabilities = self
                .token
                .and_then(|t| {
                    self.shared
                        .registry
                        .with_browser(t, Browser::session_capabilities)
                        .ok()
                })
                .unwrap_or_default();
            let remote = self.shared.spec.webdriver_url.is_some();
            let upstream = cdp::Upstream::of_session(&capabilities, remote).ok_or_else(|| {
                TaskError::Browser(BrowserError::Endpoint(std::io::Error::other(
                    "the browser's session names no DevTools address (no goog:chromeOptions.debuggerAddress, no se:cdp)",
                )))
            })?;
            let started = cdp::CdpEndpoint::start(self.shared.clone(), upstream)
                .await
                .map_err(|e| TaskError::Browser(BrowserError::Endpoint(e)))?;
            self.cdp = Some(started);
        }
        Ok(self
            .cdp
            .as_ref()
            .map(|e| e.url().to_owned())
            .unwrap_or_default())
    }

    /// The browser's own DevTools address (`goog:chromeOptions.debuggerAddress`), which the
    /// CDP endpoint forwards to.
    #[cfg_attr(
        not(feature = "_internal"),
        expect(dead_code, reason = "reached by the benches through _internal")
    )]
    pub(crate) fn devtools_address(&self) -> Option<String> {
        let token = self.token?;
        let caps = self
            .shared
            .registry
            .with_browser(token, Browser::session_capabilities)
            .ok()?;
        caps["goog:chromeOptions"]["debuggerAddress"]
            .as_str()
            .map(str::to_owned)
    }

    /// The WebDriver server of the current session (the harness's chromedriver, or a remote
    /// endpoint), which the worker's endpoint forwards to.
    #[cfg_attr(
        not(feature = "_internal"),
        expect(dead_code, reason = "reached by the benches through _internal")
    )]
    pub(crate) fn webdriver_server(&self) -> Option<String> {
        let token = self.token?;
        self.shared
            .registry
            .with_browser(token, Browser::server_url)
            .ok()
    }

    /// Records checks that the agent's own verify step passed (an agent that verifies its
    /// target with its own code instead of [`Page::expect_target`]). The next transition to
    /// `TARGET_VERIFIED` reports them in the evidence's `verified`; one with none recorded is
    /// flagged there as a verification that checked nothing.
    ///
    /// ```no_run
    /// # use browser_fault::prelude::*;
    /// # fn verified(w: &Worker, key: &RequestKey) -> Result<(), TaskError> {
    /// // The agent compared the page's account, tenant and object itself.
    /// w.record_checks(&[TargetCheck::Account, TargetCheck::Tenant, TargetCheck::Object]);
    /// w.journal().transition(key, Checkpoint::IntentRecorded, Checkpoint::TargetVerified)?;
    /// # Ok(()) }
    /// ```
    pub fn record_checks(&self, checks: &[TargetCheck]) {
        let names: Vec<&'static str> = checks.iter().map(|c| c.name()).collect();
        self.shared.record_checks(&names);
    }

    /// The account this worker must act as.
    pub fn account(&self) -> &Account {
        &self.shared.spec.account
    }

    /// The site's origin.
    pub fn origin(&self) -> &str {
        &self.shared.spec.origin
    }

    /// A target pre-filled with the expected account and, on a site with tenants, tenant.
    pub fn target(&self) -> Target {
        let account = &self.shared.spec.account;
        let target = Target::account(&account.id);
        match &account.tenant {
            Some(tenant) => target.tenant(tenant),
            None => target,
        }
    }

    /// This worker's incarnation: 1 for the first, 2 for the recovery worker, …
    pub fn incarnation(&self) -> u32 {
        self.shared.spec.incarnation
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.shared.spec.run_id
    }

    /// The run's scratch folder, created `0700` on first use: where an agent keeps its own
    /// state file, its own downloads, anything that must survive a crash into the next
    /// worker of the same run. Every worker of the run gets the same folder; the trial
    /// removes it with everything else once the run is judged. (Each worker's `TMPDIR` is a
    /// folder of its own beside it, so an agent's own temporary files and its own browser's
    /// leftovers stay inside the trial too.)
    pub fn scratch_dir(&self) -> Result<PathBuf, TaskError> {
        use std::os::unix::fs::DirBuilderExt;
        let spec = &self.shared.spec;
        let dir = spec.scratch_dir.clone().unwrap_or_else(|| {
            spec.tmp_dir
                .parent()
                .unwrap_or(&spec.tmp_dir)
                .join("scratch")
        });
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(TaskError::scenario)?;
        Ok(dir)
    }

    /// The profile this worker runs on.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// What the profile check found when this worker started (a rollback, a browser change…).
    pub fn profile_findings(&self) -> &[PolicyFinding] {
        &self.findings
    }

    /// Tells the trial what makes this worker's profile untrustworthy (the oracle's
    /// `profile_trusted` verdict holds a worker that acts on such a profile to account).
    async fn report_profile_check(&self) {
        let untrusted = self
            .findings
            .iter()
            .filter(|f| refusal(f).is_some())
            .map(|f| finding_name(f).to_owned())
            .collect();
        self.shared
            .fault
            .report(WorkerEvent::ProfileChecked { untrusted })
            .await;
    }

    /// Migrates a profile last written by another browser version to this one, by the
    /// agent's explicit policy: the owner marker records this browser's version and the
    /// finding is cleared, so [`Worker::require_trusted_profile`] passes and acting on the
    /// profile is no longer held against the worker. A rollback cannot be migrated.
    pub async fn migrate_browser_version(&mut self) -> Result<(), TaskError> {
        let Some(current) = self.binaries.as_ref().map(|b| b.major_version().to_owned()) else {
            return Ok(());
        };
        let before = self.findings.len();
        self.findings
            .retain(|f| !matches!(f, PolicyFinding::BrowserVersionChanged { .. }));
        if self.findings.len() != before {
            self.store.record_browser_version(&self.profile, &current)?;
            self.log(&format!(
                "profile migrated to browser version {current} by explicit policy"
            ));
            self.report_profile_check().await;
        }
        Ok(())
    }

    /// Refuses to go on when the profile check found a rollback or a browser change: the
    /// profile cannot be trusted, so nothing may be done with it.
    pub fn require_trusted_profile(&self) -> Result<(), TaskError> {
        match self.findings.iter().find_map(refusal) {
            Some(stop) => Err(stop.into()),
            None => Ok(()),
        }
    }

    /// Asks the site who this session is ([`Site::identity`]) and refuses to go on unless it is the
    /// expected account in the expected tenant. Run it after every login and before any side
    /// effect: a profile's login is never trusted from its directory name or its history.
    ///
    /// [`Site::identity`]: crate::site::Site::identity
    pub async fn probe_identity(&mut self) -> Result<adapter::Identity, TaskError> {
        self.ensure_browser().await?;
        let page = self.page();
        let identity = page.identity().await?;
        let expected = &self.shared.spec.account;
        if identity.account_id != expected.id {
            self.log("identity probe: another account");
            return Err(SafeStop::WrongAccount.into());
        }
        if expected.tenant.is_some() && identity.tenant_id != expected.tenant {
            self.log("identity probe: another tenant");
            return Err(SafeStop::WrongTenant.into());
        }
        Ok(identity)
    }

    /// Starts the checkpoint protocol of one side effect (see [`SideEffect`]).
    pub fn side_effect(&mut self, name: &str) -> SideEffect<'_> {
        SideEffect::new(self, name)
    }

    /// The lower-level journal API, for agents that write their own protocol.
    pub fn journal(&self) -> JournalHandle<'_> {
        JournalHandle { worker: self }
    }

    /// Appends a line to the worker's log (kept as a rolling 8 KiB tail in evidence). Never
    /// log secrets: evidence is scanned for them.
    pub fn log(&self, line: &str) {
        self.shared.log.line(line);
    }

    /// Whether the browser process is still alive.
    pub fn browser_alive(&self) -> bool {
        self.token
            .and_then(|t| self.shared.registry.with_browser(t, Browser::is_alive).ok())
            .unwrap_or(false)
    }

    /// Replaces the worker's profile with a fresh one and removes the old one through the
    /// cleanup coordinator (containment proven first). For a recovery worker that does not
    /// trust the profile it found.
    pub async fn replace_profile(&mut self) -> Result<(), TaskError> {
        let old = self.adopt_fresh_profile().await?;
        let coordinator =
            crate::cleanup::CleanupCoordinator::new(&self.shared.journal, &self.store);
        let report = coordinator.remove_profile(&old);
        self.log(&format!("old profile removed: {:?}", report.outcome));
        Ok(())
    }

    /// Switches to a fresh profile and returns the old one's path WITHOUT removing it: the
    /// caller owns its cleanup. (The bug zoo's leaky agent forgets exactly that.)
    pub async fn adopt_fresh_profile(&mut self) -> Result<PathBuf, TaskError> {
        self.quit_browser().await;
        self.release_lease();
        let old = self.profile.path().to_owned();
        let spec = &self.shared.spec;
        let name = format!(
            "{}-w{}-fresh{}",
            short(&spec.run_id),
            spec.incarnation,
            self.sessions_started + 1
        );
        let marker = self.store.marker(&self.profile)?;
        self.profile = self.store.create(&crate::profile::ProfileSpec {
            name,
            owner: marker.owner,
            purpose: marker.purpose,
            run_id: spec.run_id.clone(),
            browser_version: marker.browser_version,
        })?;
        let holder = LeaseHolder::this_process(spec.run_id.clone(), spec.incarnation);
        self.lease = Some(crate::lease::claim_lease(
            &self.shared.journal,
            &self.profile,
            &holder,
            spec.lease_ttl,
        )?);
        self.findings.clear();
        // The old profile's orphans are left where they are: the caller abandoned it.
        self.orphans.clear();
        self.report_profile_check().await;
        self.launch_browser().await?;
        Ok(old)
    }

    /// Ends the worker well: lets what its last click started be answered (see
    /// [`Page::click`]), quits the browser (and makes sure nothing of its process tree is
    /// left), releases the lease.
    pub async fn finish(mut self) {
        self.page().settle_last_click().await;
        self.quit_browser().await;
        self.release_lease();
    }

    /// Releases the profile's lease, if this worker holds it.
    fn release_lease(&mut self) {
        if let Some(lease) = self.lease.take() {
            let _ = lease.release();
        }
    }

    /// The fault point `point`: when armed, screenshot first, then report and wait.
    pub(crate) async fn strike(&self, point: impl Into<FaultPoint>) {
        strike(&self.shared, self.token, point.into()).await;
    }

    /// Marks a fault point in the agent's own code, fail-rs style: when this worker is armed
    /// with `boundary`, the fault engine strikes here (for a crash boundary this call never
    /// returns: the worker is killed). Unarmed, it costs one comparison.
    ///
    /// The harness's own helpers mark their points ([`Page::sign_in`] marks `after_login`,
    /// [`SideEffect::run`] marks `after_target_verified`, `browser_crash`, `after_click` and
    /// `after_remote_effect`, [`Worker`]'s start marks `after_profile_created`). An agent
    /// that signs in or acts through its own code marks the same points itself, or its
    /// trials fail with the `fault_struck` verdict: a fault that never strikes tests nothing.
    ///
    /// ```no_run
    /// # use browser_fault::prelude::*;
    /// # async fn f(w: &mut Worker) -> TaskResult {
    /// let page = w.open("/login").await?;
    /// page.fill("#user", "me").await?; // the agent's own sign-in
    /// page.click("#go").await?;
    /// w.fault_point(Boundary::AfterLogin).await;
    /// # Ok(Outcome::Completed) }
    /// ```
    pub async fn fault_point(&self, boundary: impl Into<FaultPoint>) {
        self.strike(boundary).await;
    }

    /// What of this worker's locks someone removed or replaced while it held them: the
    /// lease's lock file (compared by the file it holds open, not by its path) and, while
    /// its local browser lives, Chromium's `SingletonLock` naming that browser.
    pub(crate) fn tampering(&self) -> Vec<String> {
        let mut found = Vec::new();
        if let Some(lease) = &self.lease
            && !lease.lock_intact()
        {
            found.push("lease lock file removed or replaced".to_owned());
        }
        if self.shared.spec.webdriver_url.is_none() && self.browser_alive() {
            let host = crate::liveness::host_name();
            match (
                singleton_lock_owner(self.profile.path()),
                self.browser_pids().0,
            ) {
                (None, _) => found.push("browser profile lock removed".to_owned()),
                (Some(owner), Some(pid)) if owner != (host, pid) => {
                    found.push("browser profile lock replaced".to_owned());
                }
                _ => {}
            }
        }
        found
    }

    /// The values of the cookies the browser holds now (bounded by a short timeout; empty
    /// when the browser cannot answer). The trial treats them as secrets: they are counted
    /// and redacted in every piece of evidence.
    pub(crate) async fn cookie_values(&self) -> Vec<String> {
        // A dead browser cannot answer; asking would only wait out the read's bound.
        if !self.browser_alive() {
            return Vec::new();
        }
        cookie_values(&self.shared, self.token).await
    }

    /// Takes the screenshot of `boundary`'s fault point now, when it is armed: for a point
    /// that follows an action whose navigation the site may hold (a screenshot then would
    /// wait on that navigation). [`Worker::strike_with`] reports it.
    pub(crate) async fn screenshot_ahead(&self, boundary: Boundary) -> Shot {
        let boundary = FaultPoint::from(boundary);
        if !self.shared.fault.is_armed_for(boundary) {
            return Shot::default();
        }
        let cookies = cookies_at(&self.shared, self.token, boundary).await;
        take_screenshot(&self.shared, self.token, boundary, &cookies).await
    }

    /// The fault point of `boundary` with a screenshot taken ahead.
    pub(crate) async fn strike_with(&self, boundary: Boundary, screenshot: Shot) {
        let boundary = FaultPoint::from(boundary);
        self.shared.fault.crossed(boundary).await;
        if self.shared.fault.is_armed_for(boundary) {
            let cookies = cookies_at(&self.shared, self.token, boundary).await;
            report_strike(&self.shared, self.token, boundary, screenshot, cookies).await;
        }
    }
}

/// The safe stop a finding calls for: the ones that make the profile untrustworthy (what
/// `require_trusted_profile` refuses, and what the trial's `profile_trusted` verdict holds
/// against a worker that acts anyway).
fn refusal(finding: &PolicyFinding) -> Option<SafeStop> {
    match finding {
        PolicyFinding::GenerationRolledBack { .. } => Some(SafeStop::ProfileRolledBack),
        PolicyFinding::BrowserVersionChanged { .. } => Some(SafeStop::BrowserVersionChanged),
        _ => None,
    }
}

fn finding_name(finding: &PolicyFinding) -> &'static str {
    match finding {
        PolicyFinding::TooOld { .. } => "too old",
        PolicyFinding::GenerationTooHigh { .. } => "generation too high",
        PolicyFinding::BrowserVersionChanged { .. } => "browser version changed",
        PolicyFinding::GenerationRolledBack { .. } => "generation rolled back",
        PolicyFinding::GenerationAdvanced { .. } => "generation advanced",
    }
}
