//! An existing browser agent, as one is written without browser-fault: plain thirtyfour, a
//! WebDriver URL from its configuration (a chromedriver it was pointed at), its own JSON
//! state file and its own request key. It posts "hello" on a thread once: it signs in,
//! checks who it is and where it is, records that it is submitting, sends with its key, and
//! waits for its own message to appear. On a restart it finds "submitting" in its state
//! file, reads the thread, and either finds its message (done) or sends again *under the
//! same key*.
//!
//! It reports its progress to an [`Observer`] (its telemetry hook; the default one does
//! nothing). Nothing in this crate knows browser-fault: `tests/browser_fault.rs` adopts it by
//! handing it the worker's WebDriver URL and an observer that journals its progress.

use std::path::{Path, PathBuf};
use std::time::Duration;

use thirtyfour::prelude::*;

/// What the agent is told.
#[derive(Clone, Debug)]
pub struct Config {
    /// The WebDriver server it drives its browser through.
    pub webdriver_url: String,
    /// The site, e.g. `http://127.0.0.1:8080`.
    pub origin: String,
    /// Where its state file lives (kept across restarts).
    pub state_dir: PathBuf,
    /// The account to sign in as, and the id the site shows for it.
    pub username: String,
    /// The account's password.
    pub password: String,
    /// The id the site shows for the account (`data-account-id`).
    pub account_id: String,
    /// The tenant the site shows for it (`data-tenant-id`), on a site with tenants.
    pub tenant: Option<String>,
    /// The thread to post on.
    pub thread: String,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Done {
    /// Its message is on the thread (sent now, or found there after a restart).
    Sent,
    /// It sent, got no answer, and its message is not on the thread: whether the site took
    /// it is unknown. It does not guess, and does not send again on its own.
    Unknown,
}

/// Why the agent stopped without posting.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The site serves another account.
    #[error("signed in as another account")]
    WrongAccount,
    /// The site serves the account in another tenant.
    #[error("signed in to another tenant")]
    WrongTenant,
    /// Its observer asked it to stop.
    #[error("stopped by its observer")]
    Stopped(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The page is not the thread it was told to post on.
    #[error("not the thread it was told to post on")]
    WrongThread,
    /// The sign-in did not take.
    #[error("not signed in")]
    NotSignedIn,
    /// A sign-in or consent page stands between it and the thread.
    #[error("an interstitial page is in the way")]
    Interstitial,
    /// The thread is stale (the site says so).
    #[error("the thread is stale")]
    Stale,
    /// The browser.
    #[error(transparent)]
    Browser(#[from] WebDriverError),
    /// Its state file.
    #[error("state file {path}: {source}")]
    State {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// What the agent tells its observer, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// Its sign-in was answered with the thread.
    SignedIn,
    /// It is about to check its target (identity, thread).
    Verifying {
        /// Its request key.
        key: &'a str,
    },
    /// Identity and thread checked: the account, the tenant, the object.
    Verified {
        /// Its request key.
        key: &'a str,
    },
    /// Its state file says "submitting"; the click comes next.
    Submitting {
        /// Its request key.
        key: &'a str,
    },
    /// A restart found its message absent; it sends again under the same key.
    Resending {
        /// Its request key.
        key: &'a str,
    },
    /// The send button was clicked.
    Clicked,
    /// Its message is on the thread.
    Confirmed {
        /// Its request key.
        key: &'a str,
    },
    /// Its send got no answer and its message is not on the thread.
    Unknown {
        /// Its request key.
        key: &'a str,
    },
}

/// What an observer may answer: go on, or stop the agent with this error.
pub type Verdict = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// The agent's telemetry hook.
pub trait Observer: Sync {
    /// Called at each step of [`Event`]; the agent goes on once it returns `Ok`, and stops
    /// with [`AgentError::Stopped`] otherwise.
    fn on(&self, event: Event<'_>) -> impl std::future::Future<Output = Verdict> + Send;
}

/// An observer that does nothing.
#[derive(Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {
    async fn on(&self, _: Event<'_>) -> Verdict {
        Ok(())
    }
}

/// How long it waits for an element or an answer.
const WAIT: Duration = Duration::from_secs(20);

/// Its state file: the key it minted, and how far it got.
#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    key: String,
    phase: Phase,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    New,
    Submitting,
    Sent,
    Unknown,
}

impl State {
    fn path(dir: &Path) -> PathBuf {
        dir.join("hello-agent.json")
    }

    fn load_or_mint(dir: &Path) -> Result<State, AgentError> {
        let path = State::path(dir);
        let err = |source| AgentError::State {
            path: path.clone(),
            source,
        };
        match std::fs::read(&path) {
            Ok(bytes) => {
                let v: serde_json::Value =
                    serde_json::from_slice(&bytes).map_err(|e| err(std::io::Error::other(e)))?;
                let phase = match v["phase"].as_str() {
                    Some("submitting") => Phase::Submitting,
                    Some("sent") => Phase::Sent,
                    Some("unknown") => Phase::Unknown,
                    _ => Phase::New,
                };
                let key = v["key"].as_str().unwrap_or_default().to_owned();
                Ok(State { key, phase })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let state = State {
                    key: format!("hello-{:016x}", rand::random::<u64>()),
                    phase: Phase::New,
                };
                state.save(dir)?;
                Ok(state)
            }
            Err(e) => Err(err(e)),
        }
    }

    /// Written to a temporary file, synced, renamed: a crash leaves the old or the new.
    fn save(&self, dir: &Path) -> Result<(), AgentError> {
        use std::io::Write;
        let path = State::path(dir);
        let err = |source| AgentError::State {
            path: path.clone(),
            source,
        };
        let phase = match self.phase {
            Phase::New => "new",
            Phase::Submitting => "submitting",
            Phase::Sent => "sent",
            Phase::Unknown => "unknown",
        };
        let json = serde_json::json!({ "key": self.key, "phase": phase });
        let tmp = path.with_extension("json.tmp");
        let mut file = std::fs::File::create(&tmp).map_err(err)?;
        file.write_all(json.to_string().as_bytes()).map_err(err)?;
        file.sync_all().map_err(err)?;
        std::fs::rename(&tmp, &path).map_err(err)
    }
}

/// Posts "hello" on the thread once.
pub async fn post_hello(config: &Config, observer: &impl Observer) -> Result<Done, AgentError> {
    let mut state = State::load_or_mint(&config.state_dir)?;
    match state.phase {
        Phase::Sent => return Ok(Done::Sent),
        Phase::Unknown => return Ok(Done::Unknown),
        Phase::New | Phase::Submitting => {}
    }
    let driver = WebDriver::new(&config.webdriver_url, DesiredCapabilities::chrome()).await?;
    let result = post_on(&driver, config, observer, &mut state).await;
    // Its browser is the driver's to end: a quit (an endpoint may keep it for its owner).
    let _ = driver.quit().await;
    result
}

async fn post_on(
    driver: &WebDriver,
    config: &Config,
    observer: &impl Observer,
    state: &mut State,
) -> Result<Done, AgentError> {
    let url = format!("{}/threads/{}", config.origin, config.thread);
    driver.goto(&url).await?;
    match page_kind(driver).await?.as_str() {
        "login" => {
            sign_in(driver, config).await?;
            observer
                .on(Event::SignedIn)
                .await
                .map_err(AgentError::Stopped)?;
        }
        "login-interstitial" | "consent" => return Err(AgentError::Interstitial),
        _ => {}
    }
    check_identity(driver, config).await?;
    if state.phase == Phase::Submitting {
        // A restart: the last run may or may not have sent. Read, never guess.
        if mine_on_thread(driver, &url, config, &state.key).await? {
            return sent(config, observer, state).await;
        }
        observer
            .on(Event::Resending { key: &state.key })
            .await
            .map_err(AgentError::Stopped)?;
    } else {
        observer
            .on(Event::Verifying { key: &state.key })
            .await
            .map_err(AgentError::Stopped)?;
        driver.goto(&url).await?;
        check_identity(driver, config).await?;
        if attribute(driver, "main", "data-object-id")
            .await?
            .as_deref()
            != Some(config.thread.as_str())
        {
            return Err(AgentError::WrongThread);
        }
        observer
            .on(Event::Verified { key: &state.key })
            .await
            .map_err(AgentError::Stopped)?;
        state.phase = Phase::Submitting;
        state.save(&config.state_dir)?;
        observer
            .on(Event::Submitting { key: &state.key })
            .await
            .map_err(AgentError::Stopped)?;
    }
    driver
        .find(By::Id("request-key"))
        .await?
        .send_keys(&state.key)
        .await?;
    driver
        .find(By::Id("body"))
        .await?
        .send_keys("hello")
        .await?;
    driver.find(By::Css("button#send")).await?.click().await?;
    observer
        .on(Event::Clicked)
        .await
        .map_err(AgentError::Stopped)?;
    if answered_with_mine(driver, &state.key).await?
        || mine_on_thread(driver, &url, config, &state.key).await?
    {
        return sent(config, observer, state).await;
    }
    observer
        .on(Event::Unknown { key: &state.key })
        .await
        .map_err(AgentError::Stopped)?;
    state.phase = Phase::Unknown;
    state.save(&config.state_dir)?;
    Ok(Done::Unknown)
}

async fn sent(
    config: &Config,
    observer: &impl Observer,
    state: &mut State,
) -> Result<Done, AgentError> {
    observer
        .on(Event::Confirmed { key: &state.key })
        .await
        .map_err(AgentError::Stopped)?;
    state.phase = Phase::Sent;
    state.save(&config.state_dir)?;
    Ok(Done::Sent)
}

/// The page's kind: its body's `data-page`, or `""` (not the site's page).
async fn page_kind(driver: &WebDriver) -> Result<String, AgentError> {
    Ok(attribute(driver, "body", "data-page")
        .await?
        .unwrap_or_default())
}

async fn attribute(
    driver: &WebDriver,
    css: &str,
    name: &str,
) -> Result<Option<String>, AgentError> {
    let element = driver
        .query(By::Css(css))
        .wait(WAIT, Duration::from_millis(50))
        .first()
        .await?;
    Ok(element.attr(name).await?)
}

async fn sign_in(driver: &WebDriver, config: &Config) -> Result<(), AgentError> {
    driver
        .find(By::Css("#login-form input[name=username]"))
        .await?
        .send_keys(&config.username)
        .await?;
    driver
        .find(By::Css("#login-form input[name=password]"))
        .await?
        .send_keys(&config.password)
        .await?;
    driver.find(By::Id("login")).await?.click().await?;
    let answered = driver
        .query(By::Css("body[data-page=thread], #login-error"))
        .wait(WAIT, Duration::from_millis(50))
        .first()
        .await?;
    if answered.id().await?.as_deref() == Some("login-error") {
        return Err(AgentError::NotSignedIn);
    }
    Ok(())
}

async fn check_identity(driver: &WebDriver, config: &Config) -> Result<(), AgentError> {
    match page_kind(driver).await?.as_str() {
        "login" => return Err(AgentError::NotSignedIn),
        "login-interstitial" | "consent" => return Err(AgentError::Interstitial),
        "stale" => return Err(AgentError::Stale),
        _ => {}
    }
    if attribute(driver, "body", "data-account-id")
        .await?
        .as_deref()
        != Some(config.account_id.as_str())
    {
        return Err(AgentError::WrongAccount);
    }
    if config.tenant.is_some()
        && attribute(driver, "body", "data-tenant-id").await? != config.tenant
    {
        return Err(AgentError::WrongTenant);
    }
    Ok(())
}

/// Reloads the thread and looks for its own message.
async fn mine_on_thread(
    driver: &WebDriver,
    url: &str,
    config: &Config,
    key: &str,
) -> Result<bool, AgentError> {
    driver.goto(url).await?;
    check_identity(driver, config).await?;
    let mine = format!("li.message[data-sent-key=\"{key}\"]");
    Ok(!driver.find_all(By::Css(mine.as_str())).await?.is_empty())
}

/// Waits for the answer to its send: its own message (`true`) or any other page, a
/// success notice without its own message among them (another send's answer). The first
/// match in document order is taken: the site lists its messages before its notice.
async fn answered_with_mine(driver: &WebDriver, key: &str) -> Result<bool, AgentError> {
    let sent = format!("[data-sent-key=\"{key}\"]");
    let answers = format!(
        "{sent}, body[data-page=stale], body[data-page=unavailable], body:not([data-page]), #sent-notice"
    );
    let answer = driver
        .query(By::Css(answers.as_str()))
        .wait(WAIT, Duration::from_millis(50))
        .first()
        .await?;
    if answer.attr("data-page").await?.as_deref() == Some("stale") {
        return Err(AgentError::Stale);
    }
    Ok(answer.attr("data-sent-key").await?.is_some())
}
