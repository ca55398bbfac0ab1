//! A real third-party web application under test: the Roundup issue tracker (PyPI
//! `roundup`, pinned in `apps/roundup/setup.sh`), not written here. The suite installs it,
//! starts it on 127.0.0.1 and stops it; [`Roundup`] is its [`Site`] adapter, written only
//! against browser-fault's public API, as a user would write one for their own site.
//!
//! Roundup's conventions, as the adapter reads them (details in `apps/roundup/FINDINGS.md`):
//! the sign-in form sits in the sidebar of every page while signed out; the sidebar greets the
//! signed-in user (`Hello, alice`); an issue is created from `issue?@template=item`; the
//! request key travels in the issue's title as `[rk:KEY]`; the ledger is the REST API's issue
//! collection, read with HTTP basic auth as the tracker's admin.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use browser_fault::prelude::*;
use browser_fault::serde_json::Value;
use browser_fault::site::{ChangeOf, Http, SiteChange};

use crate::https_front::{Authority, BoundFront, HttpsFront};

/// The tracker's path under its origin.
pub const TRACKER: &str = "/tracker";
/// The route of the new-issue form, with the priority preselected (Roundup requires one).
pub const NEW_ISSUE: &str = "/tracker/issue?@template=item&priority=3";
/// What the scenarios file: the issue's subject, the object of the side effect.
pub const SUBJECT: &str = "Printer on fire";

const ADMIN: (&str, &str) = ("admin", "admin-pw-Adm1n");
const ALICE: (&str, &str) = ("alice", "alice-pw-Al1ce");
const BOB: (&str, &str) = ("bob", "bob-pw-B0b");

fn account((name, password): (&str, &str)) -> Account {
    Account {
        id: name.to_owned(),
        tenant: None,
        username: name.to_owned(),
        password: Secret::new(password),
    }
}

/// Which tracker of this process an adapter drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tracker {
    /// [`server`]: `http://127.0.0.1:PORT`.
    #[default]
    Plain,
    /// [`https_server`]: `https://tracker.example.test:PORT` behind a TLS front.
    Https,
}

impl Tracker {
    /// The `slot`th tracker of this kind, started the first time.
    fn server(self, slot: usize) -> Result<&'static Server, SiteError> {
        match self {
            Tracker::Plain => server(slot),
            Tracker::Https => https_server(slot),
        }
    }

    fn pool(self) -> &'static Pool {
        static POOLS: [Pool; 2] = [Pool::new(), Pool::new()];
        &POOLS[self as usize]
    }

    /// Takes a tracker of this kind that no other trial holds, starting it the first time;
    /// waits while every one is held. Held until the lease is dropped.
    fn lease(self) -> Result<TrackerLease, SiteError> {
        let pool = self.pool();
        let mut busy = lock(&pool.busy);
        let deadline = Instant::now() + LEASE_WAIT;
        let slot = loop {
            if let Some(slot) = busy.iter().position(|b| !b) {
                break slot;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(SiteError::Unsupported(
                    "a Roundup tracker of its own: every one was held for too long",
                ));
            }
            busy = pool
                .freed
                .wait_timeout(busy, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        };
        busy[slot] = true;
        drop(busy);
        // Held from here on: a failed start frees the slot again.
        let lease = TrackerLease {
            tracker: self,
            slot,
        };
        self.server(slot)?;
        Ok(lease)
    }
}

/// How many trackers of each kind this process may run: one per trial at a time
/// ([`TRIALS_AT_ONCE`]), each trial holding its own for as long as it runs.
const TRACKERS: usize = 2;

/// How many trials may run at once: each holds a tracker of its own, so a trial's ledger,
/// its password rotation and its moved sessions are the trial's alone.
pub const TRIALS_AT_ONCE: usize = TRACKERS;

/// How long a trial waits for a tracker before it fails (only a trial run beside more
/// than [`TRIALS_AT_ONCE`] others waits at all).
const LEASE_WAIT: Duration = Duration::from_secs(300);

/// Which trackers of one kind are held.
struct Pool {
    busy: Mutex<[bool; TRACKERS]>,
    freed: Condvar,
}

impl Pool {
    const fn new() -> Pool {
        Pool {
            busy: Mutex::new([false; TRACKERS]),
            freed: Condvar::new(),
        }
    }
}

/// One trial's hold on one tracker: taken when the harness asks the site spec for its
/// origin (once per trial, in the test process only), given back when the spec is dropped
/// at the trial's end.
#[derive(Debug)]
struct TrackerLease {
    tracker: Tracker,
    slot: usize,
}

impl TrackerLease {
    fn server(&self) -> Result<&'static Server, SiteError> {
        self.tracker.server(self.slot)
    }
}

impl Drop for TrackerLease {
    fn drop(&mut self) {
        let pool = self.tracker.pool();
        lock(&pool.busy)[self.slot] = false;
        pool.freed.notify_one();
    }
}

/// The Roundup tracker as a [`Site`].
#[derive(Debug, Default)]
pub struct Roundup {
    tracker: Tracker,
    /// The tracker this trial holds, once the harness asked for the site's origin: the
    /// test-side methods (the ledger, the changes, the reset) read it; the browser-side ones
    /// use paths on the page's own origin and never need it.
    lease: Arc<OnceLock<TrackerLease>>,
    http: Http,
    /// The text of every note read so far, by message id: a note never changes, so each is
    /// fetched once (the REST collection gives a link to its content, not the content).
    notes: Mutex<std::collections::HashMap<String, String>>,
}

impl Roundup {
    /// The adapter of the tracker served over HTTPS: its ledger read through the front.
    pub fn over_https() -> Roundup {
        Roundup {
            tracker: Tracker::Https,
            lease: Arc::default(),
            http: https_authority().http(),
            notes: Mutex::default(),
        }
    }

    /// The tracker this trial holds.
    fn server(&self) -> Result<&'static Server, SiteError> {
        self.lease
            .get()
            .ok_or(SiteError::Unsupported(
                "reach the tracker before the trial took one",
            ))?
            .server()
    }

    /// The site spec's start: takes a tracker for the trial (once) and names its origin.
    fn starter(&self) -> impl Fn() -> Result<String, SiteError> + Send + Sync + 'static {
        let tracker = self.tracker;
        let lease = self.lease.clone();
        move || {
            if let Some(held) = lease.get() {
                return Ok(held.server()?.origin.clone());
            }
            let taken = tracker.lease()?;
            let origin = taken.server()?.origin.clone();
            // Called once per trial; a second call would find the first's lease above.
            let _ = lease.set(taken);
            Ok(origin)
        }
    }

    /// The text of every note of the issues in `issues` (a REST issue collection with
    /// their `messages`), fetching only those not read before.
    async fn notes(
        &self,
        origin: &str,
        issues: &Value,
    ) -> Result<std::collections::HashMap<String, String>, SiteError> {
        let ids: Vec<String> = issues["data"]["collection"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row["messages"].as_array().into_iter().flatten())
            .filter_map(|m| m["id"].as_str().map(str::to_owned))
            .collect();
        for id in ids {
            if self
                .notes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(&id)
            {
                continue;
            }
            let url = format!("{origin}{TRACKER}/rest/data/msg/{id}/content");
            let note: Value = self
                .http
                .get_json_as(&url, ADMIN.0, &Secret::new(ADMIN.1))
                .await?;
            let text = note["data"]["data"].as_str().unwrap_or_default().to_owned();
            self.notes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, text);
        }
        Ok(self.notes.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }
}

/// Reads the sidebar: who is signed in, and whether the sign-in form is there.
const SIDEBAR_JS: &str = r#"
const b = document.querySelector('nav p.userblock > b');
const m = /^Hello, (.+)$/.exec(b ? b.textContent.trim() : '');
const issue = /\/issue(\d+)$/.exec(location.pathname);
return { user: m ? m[1] : null,
  sign_in: !!document.querySelector('input[name="__login_name"]'),
  issue: issue ? issue[1] : null };
"#;

/// An issue's title and the text of its notes (`messages`: their ids), a line each.
fn payload(
    title: &str,
    messages: &Value,
    notes: &std::collections::HashMap<String, String>,
) -> String {
    let mut text = title.to_owned();
    for id in messages.as_array().into_iter().flatten() {
        if let Some(note) = id["id"].as_str().and_then(|id| notes.get(id)) {
            text.push('\n');
            text.push_str(note);
        }
    }
    text
}

/// The key of an issue title `… [rk:KEY]`, and the subject before it.
fn split_title(title: &str) -> (String, String) {
    match title.rfind("[rk:") {
        Some(at) if title.ends_with(']') => (
            title[..at].trim().to_owned(),
            title[at + 4..title.len() - 1].to_owned(),
        ),
        _ => (title.trim().to_owned(), String::new()),
    }
}

#[browser_fault::async_trait]
impl Site for Roundup {
    async fn sign_in(&self, page: &Page, account: &Account) -> Result<(), TaskError> {
        page.fill("input[name=\"__login_name\"]", &account.username)
            .await?;
        page.fill(
            "input[name=\"__login_password\"]",
            account.password.expose(),
        )
        .await?;
        // "Remember me": a session that outlives the browser, as a real user's would.
        page.click("#remember").await?;
        page.click("form:has(input[name=\"@action\"][value=\"Login\"]) input[type=\"submit\"]")
            .await?;
        // Roundup answers on a new page: the logout link, or the form with an error.
        match page
            .wait_for_any(&[
                "nav p.userblock a[href*=\"@action=logout\"]",
                "p.error-message",
            ])
            .await?
        {
            0 => Ok(()),
            _ => Err(SafeStop::NotSignedIn.into()),
        }
    }

    async fn read_page(&self, page: &Page) -> Result<PageFacts, TaskError> {
        let sidebar = page.script(SIDEBAR_JS).await?;
        let mut facts = if sidebar["sign_in"].as_bool().unwrap_or(true) {
            PageFacts::new(PageKind::SignIn)
        } else {
            PageFacts::new(PageKind::Content)
        };
        if let Some(user) = sidebar["user"].as_str() {
            facts = facts.account(user);
        }
        if let Some(issue) = sidebar["issue"].as_str() {
            facts = facts.object(issue).label("issue.item");
        }
        Ok(facts)
    }

    async fn identity(&self, page: &Page) -> Result<Identity, TaskError> {
        // Asked of the server, not read off the page the agent is on: the front page as the
        // server renders it for this session now.
        let (status, html) = page.fetch(&format!("{TRACKER}/")).await?;
        if status != 200 {
            return Err(TaskError::UnexpectedReply {
                what: "the tracker's front page",
            });
        }
        let greeting = html
            .split("class=\"userblock\"")
            .nth(1)
            .and_then(|rest| rest.split("Hello, ").nth(1))
            .and_then(|rest| rest.split('<').next());
        match greeting {
            Some(user) => Ok(Identity {
                account_id: user.trim().to_owned(),
                tenant_id: None,
            }),
            None => Err(SafeStop::NotSignedIn.into()),
        }
    }

    async fn effect_status(
        &self,
        page: &Page,
        key: &RequestKey,
    ) -> Result<EffectStatus, TaskError> {
        // A substring match on the title, brackets kept: `[rk:k-1]` never matches `[rk:k-10]`.
        let (status, body) = page
            .api_get(&format!(
                "{TRACKER}/rest/data/issue?title=%5Brk:{key}%5D&@fields=creator"
            ))
            .await?;
        match status {
            200 => {}
            401 | 403 => return Err(SafeStop::NotSignedIn.into()),
            _ => {
                return Err(TaskError::UnexpectedReply {
                    what: "the tracker's issue search",
                });
            }
        }
        match body["data"]["collection"].as_array() {
            Some(found) if found.is_empty() => Ok(EffectStatus::Absent),
            Some(_) => Ok(EffectStatus::Present),
            None => Err(TaskError::UnexpectedReply {
                what: "the tracker's issue search",
            }),
        }
    }

    async fn ledger(&self) -> Result<Vec<RemoteEffect>, SiteError> {
        let origin = self.server()?.origin.clone();
        let url =
            format!("{origin}{TRACKER}/rest/data/issue?@fields=title,creator,messages&@verbose=2");
        let body: Value = self
            .http
            .get_json_as(&url, ADMIN.0, &Secret::new(ADMIN.1))
            .await?;
        let notes = self.notes(&origin, &body).await?;
        let reply = |why: &str| SiteError::Reply {
            url: format!("{origin}{TRACKER}/rest/data/issue"),
            why: why.to_owned(),
        };
        let rows = body["data"]["collection"]
            .as_array()
            .ok_or_else(|| reply("no issue collection"))?;
        let mut effects = rows
            .iter()
            .map(|row| {
                let seq = row["id"]
                    .as_str()
                    .and_then(|id| id.parse().ok())
                    .ok_or_else(|| reply("an issue without a numeric id"))?;
                let title = row["title"].as_str().unwrap_or("");
                let (object, request_key) = split_title(title);
                Ok(RemoteEffect {
                    seq,
                    request_key,
                    account: row["creator"]["username"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    tenant: None,
                    object,
                    // What the effect carried: its title and the notes filed with it.
                    payload: Some(payload(title, &row["messages"], &notes)),
                })
            })
            .collect::<Result<Vec<_>, SiteError>>()?;
        effects.sort_by_key(|e| e.seq);
        Ok(effects)
    }

    fn home(&self) -> String {
        format!("{TRACKER}/")
    }

    fn is_sign_in_request(&self, method: &str, path: &str) -> bool {
        // Roundup's login form posts to the tracker's root (`@action=login` in its body); a
        // new issue posts to `/tracker/issue`.
        method == "POST" && path.trim_end_matches('/') == TRACKER
    }

    // `is_effect_request` keeps its default: the new issue is the first POST the agent sends
    // after journaling ACTION_SUBMITTED; its sign-in (a POST to the tracker's root) comes
    // before and never takes the fault.

    /// A rotation, a live account switch and a look-alike success, through the tracker's own
    /// API (the test hooks `set_password.py`, `move_sessions.py` and `look_alike.py`):
    /// Roundup keeps no tenants, interstitials or stale forms to show, and its new-issue form
    /// has no object to swap.
    fn can_change(&self, change: SiteChange) -> bool {
        matches!(
            change,
            SiteChange::RotatePassword | SiteChange::SessionToOtherAccount | SiteChange::LookAlike
        )
    }

    /// Files, through the tracker's own API (the test hook `look_alike.py`), an issue like the
    /// agent's (its account, its subject) under the look-alike's key, and names its page as
    /// Roundup shows a just-filed issue: with the "created" notice.
    async fn look_alike(&self, of: &ChangeOf<'_>) -> Result<String, SiteError> {
        let key = of
            .look_alike_key
            .ok_or(SiteError::Unsupported("a look-alike without its key"))?;
        let title = format!("{SUBJECT} [rk:{key}]");
        let out = run_hook(
            self.server()?,
            "look_alike.py",
            &[&of.account.username, &title],
            None,
        )
        .await?;
        let id = out.trim();
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SiteError::Reply {
                url: "look_alike.py".to_owned(),
                why: format!("printed {id:?}, not an issue id"),
            });
        }
        Ok(format!(
            "{TRACKER}/issue{id}?@ok_message=issue%20{id}%20created"
        ))
    }

    async fn change(&self, change: SiteChange, of: &ChangeOf<'_>) -> Result<(), SiteError> {
        match (change, of.new_password, of.other_account) {
            (SiteChange::RotatePassword, Some(new), _) => {
                // Marked first: a rotation that fails halfway is put back all the same.
                let server = self.server()?;
                *lock(&server.rotated) = Some(of.account.username.clone());
                set_password(server, &of.account.username, new).await
            }
            // A moved session needs no undoing: every trial signs in with a new profile.
            (SiteChange::SessionToOtherAccount, _, Some(other)) => run_hook(
                self.server()?,
                "move_sessions.py",
                &[&of.account.username, &other.username],
                None,
            )
            .await
            .map(drop),
            _ => Err(SiteError::Unsupported("make that change")),
        }
    }

    /// Puts back the password a rotation changed (nothing else of a trial lasts: each files
    /// its issues under its own keys, and every trial signs in with a new profile).
    async fn reset(&self) -> Result<(), SiteError> {
        let server = self.server()?;
        let Some(user) = lock(&server.rotated).take() else {
            return Ok(());
        };
        let Some((_, password)) = [ALICE, BOB].into_iter().find(|(name, _)| *name == user) else {
            return Ok(());
        };
        set_password(server, &user, &Secret::new(password)).await
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sets `user`'s password on the tracker and signs out every session of `user`, through
/// `set_password.py` (Roundup's own API, run with the tracker's Python): the password goes
/// on its standard input, never on its command line.
async fn set_password(server: &Server, user: &str, password: &Secret) -> Result<(), SiteError> {
    run_hook(server, "set_password.py", &[user], Some(password))
        .await
        .map(drop)
}

/// Runs the test hook `script` of `suites/apps/roundup` on `server`'s tracker with `args`,
/// `secret` (if any) on its standard input; returns what it printed.
async fn run_hook(
    server: &Server,
    script: &str,
    args: &[&str],
    secret: Option<&Secret>,
) -> Result<String, SiteError> {
    use tokio::io::AsyncWriteExt;
    let failed = |why: String| SiteError::Reply {
        url: format!("{script} {}", args.join(" ")),
        why,
    };
    let mut child = tokio::process::Command::new(server.dir.join("venv/bin/python"))
        .arg(apps().join(script))
        .arg(server.dir.join("tracker"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| failed(format!("could not run: {e}")))?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| failed("no standard input".to_owned()))?;
    if let Some(secret) = secret {
        stdin
            .write_all(secret.expose().as_bytes())
            .await
            .map_err(|e| failed(format!("could not write its standard input: {e}")))?;
    }
    drop(stdin);
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| failed(format!("could not wait: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        return Err(failed(format!(
            "{}: {}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A running tracker of this process.
#[derive(Debug)]
pub struct Server {
    /// `http://127.0.0.1:PORT`, or the front's `https://tracker.example.test:PORT`.
    pub origin: String,
    /// The TLS front before the tracker, if it is served over HTTPS.
    pub front: Option<HttpsFront>,
    /// `serve.sh`: the server stops when its standard input closes, so it never outlives
    /// this process.
    _serve: Mutex<Child>,
    /// The tracker's folder (`tracker/`, `venv/`), removed with this.
    dir: PathBuf,
    /// The account a rotation changed the password of, until a reset puts it back.
    rotated: Mutex<Option<String>>,
    _dir: tempfile::TempDir,
}

/// The `slot`th tracker of this process (`slot` below [`TRIALS_AT_ONCE`]), installed and
/// started the first time (installing takes about 10 s, starting about 1 s). Only the test
/// process calls it (through [`SiteSpec::started`]), never a worker.
pub fn server(slot: usize) -> Result<&'static Server, SiteError> {
    static SERVERS: [OnceLock<Result<Server, RoundupError>>; TRACKERS] =
        [const { OnceLock::new() }; TRACKERS];
    SERVERS[slot]
        .get_or_init(|| start(None))
        .as_ref()
        .map_err(|e| SiteError::adapter(e.clone()))
}

/// The host name of the tracker served over HTTPS.
pub const HTTPS_HOST: &str = "tracker.example.test";

/// The authority of the HTTPS tracker's front, made once per process (cheaply: the site
/// spec names it in worker processes too, where no tracker starts).
pub fn https_authority() -> &'static Authority {
    static AUTHORITY: OnceLock<Authority> = OnceLock::new();
    AUTHORITY.get_or_init(|| Authority::new(HTTPS_HOST).expect("the front's certificates"))
}

/// A second tracker of this process, served over HTTPS at `https://tracker.example.test:PORT`
/// as a staging deployment is: a TLS front on 127.0.0.1 (its certificate signed by an
/// authority of its own) before a tracker whose `web` setting is the front's URL, so every
/// URL Roundup builds, and every origin its CSRF check expects, is the HTTPS one.
pub fn https_server(slot: usize) -> Result<&'static Server, SiteError> {
    static SERVERS: [OnceLock<Result<Server, RoundupError>>; TRACKERS] =
        [const { OnceLock::new() }; TRACKERS];
    SERVERS[slot]
        .get_or_init(|| {
            let front = HttpsFront::bind(HTTPS_HOST).map_err(io("bind the TLS front"))?;
            start(Some(front))
        })
        .as_ref()
        .map_err(|e| SiteError::adapter(e.clone()))
}

/// Why the Roundup tracker could not be installed or started. Messages read after
/// "failed to …"; kept (cloned) for every later trial of the process.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RoundupError {
    /// A step of the installation or the start failed on the file system or a process.
    #[error("failed to {step} for Roundup")]
    Io {
        /// What was being done.
        step: &'static str,
        /// Why.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// `setup.sh` exited unsuccessfully.
    #[error("failed to install Roundup: setup.sh said {stderr}")]
    Setup {
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// The server never printed its ready line.
    #[error("failed to start Roundup: no ready line within {waited:?} (port {port})")]
    NotReady {
        /// How long it was waited for.
        waited: Duration,
        /// The port it was asked to serve on.
        port: u16,
    },
}

/// The `map_err` of one step of [`start`].
fn io(step: &'static str) -> impl FnOnce(std::io::Error) -> RoundupError {
    move |e| RoundupError::Io {
        step,
        source: Arc::new(e),
    }
}

fn apps() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("apps/roundup")
}

/// Where the installation is kept between runs: the workspace's target folder.
fn install_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("apps/roundup")
}

/// Installs (once) and starts a tracker; behind `front`, if given, whose URL becomes its
/// `web` setting.
fn start(front: Option<BoundFront>) -> Result<Server, RoundupError> {
    let install = install_dir();
    std::fs::create_dir_all(&install).map_err(io("make the installation folder"))?;
    // One installer at a time (nextest runs many test processes at once).
    let lock =
        std::fs::File::create(install.join(".setup.lock")).map_err(io("create the setup lock"))?;
    lock.lock().map_err(io("take the setup lock"))?;
    let setup = Command::new("bash")
        .arg(apps().join("setup.sh"))
        .arg(&install)
        .stdin(Stdio::null())
        .output()
        .map_err(io("run setup.sh"))?;
    drop(lock);
    if !setup.status.success() {
        return Err(RoundupError::Setup {
            stderr: String::from_utf8_lossy(&setup.stderr).trim().to_owned(),
        });
    }
    // A tracker of this process's own: its config names the port it serves on.
    let dir = tempfile::Builder::new()
        .prefix("roundup-")
        .tempdir()
        .map_err(io("make the tracker's folder"))?;
    copy_dir(&install.join("tracker"), &dir.path().join("tracker"))
        .map_err(io("copy the tracker"))?;
    std::os::unix::fs::symlink(install.join("venv"), dir.path().join("venv"))
        .map_err(io("link the virtualenv"))?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(io("pick a free port"))?
        .port();
    let mut serve = Command::new("bash");
    serve
        .arg(apps().join("serve.sh"))
        .arg(dir.path())
        .arg(port.to_string());
    if let Some(front) = &front {
        serve.arg(format!("{}{TRACKER}/", front.origin()));
    }
    let mut serve = serve
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(io("run serve.sh"))?;
    let stdout = serve.stdout.take().ok_or_else(|| {
        io("read serve.sh's output")(std::io::Error::other("serve.sh has no stdout"))
    })?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("Roundup server started on") {
                let _ = tx.send(());
            }
        }
    });
    let limit = Duration::from_secs(60);
    let started = Instant::now();
    if rx.recv_timeout(limit).is_err() {
        let _ = serve.kill();
        return Err(RoundupError::NotReady {
            waited: started.elapsed(),
            port,
        });
    }
    let front = match front {
        Some(front) => Some(
            front
                .forward_to(
                    std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port)),
                    https_authority(),
                )
                .map_err(io("start the TLS front"))?,
        ),
        None => None,
    };
    Ok(Server {
        origin: front
            .as_ref()
            .map_or_else(|| format!("http://127.0.0.1:{port}"), HttpsFront::origin),
        front,
        _serve: Mutex::new(serve),
        dir: dir.path().to_owned(),
        rotated: Mutex::default(),
        _dir: dir,
    })
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The scenarios' site: the tracker, acting as alice; bob is the other account an account
/// switch signs the profile in as.
pub fn roundup_site() -> SiteSpec {
    let site = Roundup::default();
    SiteSpec::started(site.starter(), site, account(ALICE))
        .other_account(account(BOB))
        .with_secrets([ADMIN.1.to_owned()])
}

/// The scenarios' site over HTTPS: the second tracker, at `https://tracker.example.test:PORT`,
/// which the fault proxy resolves to 127.0.0.1 and whose front's authority it trusts, as it
/// would a user's staging site.
pub fn roundup_https_site() -> SiteSpec {
    let site = Roundup::over_https();
    SiteSpec::started(site.starter(), site, account(ALICE))
        .resolve(
            HTTPS_HOST,
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        )
        .trust_root_pem(https_authority().ca_pem())
        .other_account(account(BOB))
        .with_secrets([ADMIN.1.to_owned()])
}

/// Opens the new-issue form, signing in first when the tracker shows its sign-in form; an
/// interstitial before it (the fault proxy's: Roundup has none) is a safe stop.
async fn open_form(w: &mut Worker) -> Result<Page, TaskError> {
    let page = w.open(NEW_ISSUE).await?;
    match page.read().await?.kind {
        PageKind::SignIn => {
            let account = w.account().clone();
            page.sign_in(&account).await?;
            w.open(NEW_ISSUE).await
        }
        PageKind::Interstitial => Err(SafeStop::Interstitial.into()),
        _ => Ok(page),
    }
}

/// Fills the new-issue form with the subject and the request key, and submits it.
pub async fn submit_issue(p: Page, key: RequestKey) -> Result<(), TaskError> {
    p.fill("#title", &format!("{SUBJECT} [rk:{key}]")).await?;
    p.fill("textarea[name=\"@note\"]", "It is on fire.").await?;
    p.click("#submit_button").await
}

/// Observes the tracker's answer: the new issue's page, whose title field carries the key;
/// or an error message, a page that is not the tracker's at all (a proxy's `502`), or
/// another issue's "created" notice (not this key's: a look-alike), which say nothing of
/// whether this issue exists: the caller reconciles.
pub async fn observe_created(p: Page, key: RequestKey) -> Result<(), TaskError> {
    match p
        .wait_for_any(&[
            &format!("body:has(p.ok-message) #title[value$=\"[rk:{key}]\"]"),
            "p.error-message",
            "body:not(:has(p.userblock))",
            "p.ok-message",
        ])
        .await?
    {
        0 => Ok(()),
        _ => Err(TaskError::UnexpectedReply {
            what: "the new issue (an error message)",
        }),
    }
}

/// What the careful agent does before its side effect: refuses an untrusted profile, opens
/// the form (signing in when needed), asks the server who it is, and names its target: the
/// form's route, its account, and the server's word on the account.
async fn careful_start(w: &mut Worker) -> Result<Target, TaskError> {
    w.require_trusted_profile()?;
    open_form(w).await?;
    w.probe_identity().await?;
    Ok(w.target().route(&format!("{TRACKER}/issue")).api())
}

/// The careful agent on Roundup: signs in when needed, asks the server who it is, verifies
/// the form's route and account in every incarnation, journals each step, and reconciles
/// read-only through the tracker's search instead of filing again.
pub async fn file_issue(w: &mut Worker) -> TaskResult {
    file_issue_as(w, "file-issue").await
}

/// [`file_issue`] with the side effect journaled under `effect`.
async fn file_issue_as(w: &mut Worker, effect: &str) -> TaskResult {
    let target = careful_start(w).await?;
    w.side_effect(effect)
        .args(format!("subject={SUBJECT}"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(submit_issue)
        .confirm(observe_created)
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// Bug zoo, on Roundup: keeps the password it first signed in with in a file of its own and
/// signs in with it again and again, a refusal never taken as an answer. Caught by
/// `recover_or_stop_safely` (timed out) at `hazard::credential_rotated`, where the tracker
/// changed the password and signed the session out; the careful agent is handed the new one.
pub async fn file_issue_stale_credential(w: &mut Worker) -> TaskResult {
    crate::sign_in_with_cached_password(w, NEW_ISSUE).await?;
    file_issue(w).await
}

/// Bug zoo, on Roundup: after a lost answer it files the issue again and calls it done.
/// Caught by `no_duplicate` at `after_click::landed`.
pub async fn file_issue_blind_retry(w: &mut Worker) -> TaskResult {
    let target = careful_start(w).await?;
    w.side_effect("file-issue")
        .args(format!("subject={SUBJECT}"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(submit_issue)
        .confirm(observe_created)
        .reconcile(|p, key| async move {
            // The bug: no read-only check, just file again.
            p.goto(NEW_ISSUE).await?;
            submit_issue(p.clone(), key.clone()).await?;
            observe_created(p, key).await?;
            Ok(EffectStatus::Present)
        })
        .run()
        .await
}

/// Bug zoo, on Roundup: a recovery that searches the tracker for its submitted key
/// (read-only, as it should) and, finding nothing, takes the filing for failed: it marks it
/// `UNKNOWN` and files again under a new intent. Right at `after_click::lost`, and at
/// `landed` it finds the issue; an issue whose request lands after the search
/// (`after_click::late_landing`, held by the fault proxy) is filed twice: caught by
/// `no_duplicate` there.
pub async fn file_issue_absent_means_failed(w: &mut Worker) -> TaskResult {
    if let Some(old) = w.journal().side_effect("file-issue")?
        && old.state == Checkpoint::ActionSubmitted
    {
        open_form(w).await?;
        let key = old.request_key.clone();
        if w.page().effect_status(key.clone()).await? == EffectStatus::Present {
            w.journal().transition(
                &key,
                Checkpoint::ActionSubmitted,
                Checkpoint::RemoteConfirmed,
            )?;
            return Ok(Outcome::Confirmed);
        }
        w.journal()
            .transition(&key, Checkpoint::ActionSubmitted, Checkpoint::Unknown)?;
        // The bug: "absent" is not "failed"; the request may still land.
        return file_issue_as(w, "file-issue-again").await;
    }
    file_issue(w).await
}

/// Bug zoo, on Roundup: careful in every way but its confirm step, which takes the
/// tracker's "created" notice for its own whatever issue it names. When its submission is
/// lost and answered with another issue's page (`after_click::live_look_alike`: the same
/// account and subject, another key), it journals `REMOTE_CONFIRMED` for an issue the
/// tracker never filed: caught by `ambiguity_visible` and `claims_match_facts`.
pub async fn file_issue_credulous(w: &mut Worker) -> TaskResult {
    let target = careful_start(w).await?;
    w.side_effect("file-issue")
        .args(format!("subject={SUBJECT}"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(submit_issue)
        // The bug: "issue N created" is taken as "my issue was filed".
        .confirm(|p, _key| p.wait_for("p.ok-message"))
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// Bug zoo, on Roundup: trusts whatever session its profile holds: no identity probe, and
/// a verification of the route only. When the profile comes back signed in as bob, it files
/// as bob. Caught by `no_wrong_account` at `after_target_verified::account_switched` and
/// `hazard::account_switch`.
pub async fn file_issue_trusting(w: &mut Worker) -> TaskResult {
    open_form(w).await?;
    let target = Target::default().route(&format!("{TRACKER}/issue"));
    w.side_effect("file-issue")
        .args(format!("subject={SUBJECT}"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(submit_issue)
        .confirm(observe_created)
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// Bug zoo, on Roundup: careful, but the note it files holds its password ("so support can
/// sign in"). Caught by `no_secret_sent` at `after_target_verified`, and by nothing else,
/// twice over: the fault proxy reads the password in the body of `POST /tracker/issue`, and
/// the adapter's ledger reads the note the tracker kept back as the effect's payload.
pub async fn file_issue_with_password(w: &mut Worker) -> TaskResult {
    let target = careful_start(w).await?;
    let password = w.account().password.expose().to_owned();
    w.side_effect("file-issue")
        .args(format!("subject={SUBJECT}"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(move |p, key| {
            let password = password.clone();
            async move {
                p.fill("#title", &format!("{SUBJECT} [rk:{key}]")).await?;
                let note = format!("It is on fire. Sign in as me with {password} to see it.");
                p.fill("textarea[name=\"@note\"]", &note).await?;
                p.click("#submit_button").await
            }
        })
        .confirm(observe_created)
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// Bug zoo, on Roundup: careful, but it waves through whatever stands before the new-issue
/// form: the fault proxy's sign-in or consent interstitial (Roundup shows none of its own)
/// is clicked through, and the issue filed. Caught by `recover_or_stop_safely` at
/// `hazard::login_interstitial` and `hazard::consent_interstitial`, and by nothing else.
pub async fn file_issue_click_through(w: &mut Worker) -> TaskResult {
    w.require_trusted_profile()?;
    w.open(NEW_ISSUE).await?;
    crate::wave_through(w).await?;
    file_issue(w).await
}

/// Careful the first time; restarted, it stops at once, sight unseen, saying an
/// interstitial stands before the form. At `hazard::login_interstitial` its recovery never
/// meets the fault proxy's interstitial, so the trial says the fault never struck and does
/// not pass (a hazard nobody met proves nothing).
pub async fn file_issue_stops_unseen(w: &mut Worker) -> TaskResult {
    if w.incarnation() > 1 {
        return Err(SafeStop::Interstitial.into());
    }
    file_issue(w).await
}

#[cfg(test)]
mod tests {
    use super::split_title;

    #[test]
    fn a_title_splits_into_subject_and_key() {
        assert_eq!(
            split_title("Printer on fire [rk:ab-12]"),
            ("Printer on fire".to_owned(), "ab-12".to_owned())
        );
        assert_eq!(
            split_title("no key here"),
            ("no key here".to_owned(), String::new())
        );
    }
}
