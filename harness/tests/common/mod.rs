//! Shared setup of the real-browser tests (`tests/browser_*.rs`): a short trial root under
//! `/tmp`, a journal with its run, a profile store with one profile, the fixture site, and
//! the `WorkerSpec` of a standalone worker on all of it. Plus the process accounting every
//! test ends with.
//!
//! Paths stay short on purpose: Chromium puts a Unix socket in its `TMPDIR`, and socket
//! paths are limited to 107 bytes.

#![allow(
    dead_code,
    reason = "each tests/browser_*.rs target uses a different part of this module"
)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use browser_fault::_internal::browser::process::{processes_using_profile, wait_dead};
use browser_fault::_internal::worker::WorkerSpec;
use browser_fault::BrowserBinaries;
use browser_fault::fixtures::{DEMO_ACCOUNTS, FixtureSite, SiteConfig};
use browser_fault::journal::{Checkpoint, Journal, NewRun};
use browser_fault::profile::{Profile, ProfileSpec, ProfileStore};
use browser_fault::worker::{Account, Page, Secret, TaskError, Worker};

/// How long a SIGKILLed process may take to be gone. Generous: it is a limit, not a guess;
/// the wait ends as soon as the process is dead.
pub(crate) const DEATH_LIMIT: Duration = Duration::from_secs(10);

/// The thread the tests write to.
pub(crate) const ROUTE: &str = "/threads/42";

/// One test's world: trial root, site, journal, profile, and the spec of its worker.
pub(crate) struct Rig {
    /// Kept alive for the test; removed on drop.
    pub(crate) root: tempfile::TempDir,
    pub(crate) site: FixtureSite,
    pub(crate) journal: Journal,
    pub(crate) store: ProfileStore,
    pub(crate) profile: Profile,
    pub(crate) run_id: String,
    pub(crate) spec: WorkerSpec,
}

impl Rig {
    /// A rig on a fresh fixture site with the default configuration.
    pub(crate) async fn new(name: &str) -> Rig {
        let site = FixtureSite::start(SiteConfig::default())
            .await
            .expect("start the fixture site");
        Rig::on_site(name, site)
    }

    /// A rig on `site` (several rigs may share one site, each with its own root).
    pub(crate) fn on_site(name: &str, site: FixtureSite) -> Rig {
        let root = tempfile::Builder::new()
            .prefix("bf")
            .tempdir_in("/tmp")
            .expect("create the trial root");
        let run_id = format!("run-{name}");
        let journal_path = root.path().join("journal.sqlite3");
        let journal = Journal::open(&journal_path).expect("open the journal");
        journal
            .create_run(&NewRun::new(&run_id, "s", "t"))
            .expect("create the run");
        let store = ProfileStore::open(root.path().join("profiles")).expect("open the store");
        let version = BrowserBinaries::discover()
            .expect("chromium and chromedriver (run `cargo xtask drill` to install them)")
            .major_version()
            .to_owned();
        let profile = store
            .create(&ProfileSpec::new(
                "p",
                "browser-fault-tests",
                name,
                &run_id,
                version,
            ))
            .expect("create the profile");
        let spec = WorkerSpec::new(
            &run_id,
            journal_path,
            store.root(),
            profile.path(),
            root.path().join("tmp"),
            site.base_url(),
            account(),
        );
        Rig {
            root,
            site,
            journal,
            store,
            profile,
            run_id,
            spec,
        }
    }

    /// The profile's directory.
    pub(crate) fn profile_dir(&self) -> &Path {
        self.profile.path()
    }

    /// The run's checkpoint history as (from, to) pairs.
    pub(crate) fn history(&self) -> Vec<(Option<Checkpoint>, Checkpoint)> {
        self.journal
            .history(&self.run_id)
            .expect("read the history")
            .into_iter()
            .map(|t| (t.from, t.to))
            .collect()
    }

    /// Proves that nothing of the worker's browser is left: every process with the profile
    /// on its command line dies within [`DEATH_LIMIT`] of the kill that was already sent,
    /// none remains after, and chromedriver's pid is dead.
    pub(crate) async fn assert_no_browser_left(&self, driver_pid: Option<u32>) {
        assert_no_browser_left(self.profile_dir(), driver_pid).await;
    }
}

/// See [`Rig::assert_no_browser_left`].
pub(crate) async fn assert_no_browser_left(profile: &Path, driver_pid: Option<u32>) {
    for pid in processes_using_profile(profile) {
        assert!(
            wait_dead(pid, DEATH_LIMIT).await,
            "process {pid} still uses {} {DEATH_LIMIT:?} after its worker ended",
            profile.display()
        );
    }
    assert_eq!(
        processes_using_profile(profile),
        Vec::<u32>::new(),
        "no process may use the profile after its worker ended"
    );
    if let Some(pid) = driver_pid {
        assert!(
            wait_dead(pid, DEATH_LIMIT).await,
            "chromedriver {pid} outlived its worker"
        );
    }
}

/// The first demo account, as a worker's account.
pub(crate) fn account() -> Account {
    let demo = &DEMO_ACCOUNTS[0];
    Account {
        id: demo.id.to_owned(),
        tenant: Some(demo.tenant.to_owned()),
        username: demo.username.to_owned(),
        password: Secret::new(demo.password),
    }
}

/// Opens `route`, signing in through the login form when the site asks for it. Returns the
/// page, on `route`.
pub(crate) async fn open_signed_in(w: &mut Worker, route: &str) -> Result<Page, TaskError> {
    let page = w.open(route).await?;
    if page.is_sign_in().await? {
        let account = w.account().clone();
        page.sign_in(&account).await?;
    }
    Ok(w.page())
}

/// The link Chromium leaves as its profile lock, if any (`<host>-<pid>`).
pub(crate) fn singleton_lock(profile: &Path) -> Option<PathBuf> {
    std::fs::read_link(profile.join("SingletonLock")).ok()
}
