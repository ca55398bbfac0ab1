//! An agent that drives the browser with a WebDriver client of its own (plain thirtyfour),
//! as an existing Rust agent does, adopted by one changed line: its own browser launch
//! becomes a connect to [`Worker::webdriver_url`]. Everything it does in the browser (its
//! sign-in, its identity and target checks, its send, its read-only reconciliation) goes
//! through its own client: the harness sees its commands only at the endpoint, counts each
//! as a step of `every_step`, and judges what the site's ledger holds.
//!
//! It journals through [`Worker::journal`] and marks the boundaries that exist only in its
//! head with [`Worker::fault_point`].

use std::time::Duration;

use browser_fault::prelude::*;
use browser_fault::worker::BrowserError;
use thirtyfour::prelude::*;

use crate::THREAD;

/// How the agent journals its send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Journaling {
    /// `ACTION_SUBMITTED` is durable before the click.
    Careful,
    /// The bug: the click goes out before `ACTION_SUBMITTED` is durable, so a crash right
    /// after the click leaves `TARGET_VERIFIED`, and the recovery sends again.
    Late,
}

/// Which boundaries the agent marks with [`Worker::fault_point`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marking {
    /// Every boundary it crosses.
    All,
    /// Only those that exist in its head (`before_verify`, `after_target_verified`): the
    /// harness reads `after_login`, `after_click` and `after_remote_effect` from the network.
    HeadOnly,
}

/// How long the agent waits for an element or an answer.
const WAIT: Duration = Duration::from_secs(20);

fn agent(e: WebDriverError) -> TaskError {
    TaskError::scenario(e)
}

/// A command that failed: the browser crashed (the agent noticed: a typed stop, and the next
/// worker verifies again), or the agent's own error.
fn failed(w: &Worker) -> impl Fn(WebDriverError) -> TaskError + '_ {
    move |e| {
        if w.browser_alive() {
            TaskError::scenario(e)
        } else {
            TaskError::Browser(BrowserError::Crashed)
        }
    }
}

/// The careful agent on its own client.
pub async fn send_hello(w: &mut Worker) -> TaskResult {
    send_hello_journaling(w, Journaling::Careful).await
}

/// The agent on its own client, journaling as `journaling` says.
pub async fn send_hello_journaling(w: &mut Worker, journaling: Journaling) -> TaskResult {
    send_hello_marking(w, journaling, Marking::All).await
}

/// The agent on its own client, journaling as `journaling` says and marking the boundaries
/// `marking` names.
pub async fn send_hello_marking(
    w: &mut Worker,
    journaling: Journaling,
    marking: Marking,
) -> TaskResult {
    let marks_all = marking == Marking::All;
    w.require_trusted_profile()?;
    // The one changed line: `WebDriver::new("http://localhost:9515", caps)` before.
    let driver = WebDriver::new(w.webdriver_url().await?, DesiredCapabilities::chrome())
        .await
        .map_err(agent)?;
    let route = format!("/threads/{THREAD}");
    let url = format!("{}{route}", w.origin());
    driver.goto(&url).await.map_err(agent)?;
    match page_kind(&driver).await?.as_str() {
        "login" => {
            sign_in(&driver, w.account()).await?;
            if marks_all {
                w.fault_point(Boundary::AfterLogin).await;
            }
        }
        "login-interstitial" | "consent" => return Err(SafeStop::Interstitial.into()),
        _ => {}
    }
    check_identity(&driver, w.account()).await?;
    let record = w
        .journal()
        .record_intent("send-hello", &format!("thread={THREAD};body=hello"))?;
    let key = record.request_key.clone();
    match record.state {
        Checkpoint::RemoteConfirmed => return Ok(Outcome::Confirmed),
        Checkpoint::Unknown => return Ok(Outcome::Unknown),
        Checkpoint::ActionSubmitted => return reconcile(w, &driver, &url, &key).await,
        Checkpoint::IntentRecorded | Checkpoint::TargetVerified => {}
    }
    w.fault_point(FaultPoint::BeforeVerify).await;
    // Verified in every incarnation: the page it acts on, now.
    driver.goto(&url).await.map_err(agent)?;
    check_identity(&driver, w.account()).await?;
    let object = attribute(&driver, "main", "data-object-id").await?;
    if object.as_deref() != Some(THREAD) {
        return Err(SafeStop::WrongObject.into());
    }
    w.record_checks(&[
        TargetCheck::NoInterstitial,
        TargetCheck::Account,
        TargetCheck::Tenant,
        TargetCheck::Object,
    ]);
    w.journal()
        .transition(&key, record.state, Checkpoint::TargetVerified)?;
    w.fault_point(Boundary::AfterTargetVerified).await;
    if journaling == Journaling::Careful {
        w.journal().transition(
            &key,
            Checkpoint::TargetVerified,
            Checkpoint::ActionSubmitted,
        )?;
    }
    let field = driver
        .find(By::Id("request-key"))
        .await
        .map_err(failed(w))?;
    field.send_keys(key.as_str()).await.map_err(failed(w))?;
    let body = driver.find(By::Id("body")).await.map_err(failed(w))?;
    body.send_keys("hello").await.map_err(failed(w))?;
    driver
        .find(By::Css("button#send"))
        .await
        .map_err(failed(w))?
        .click()
        .await
        .map_err(failed(w))?;
    if journaling == Journaling::Late {
        w.journal().transition(
            &key,
            Checkpoint::TargetVerified,
            Checkpoint::ActionSubmitted,
        )?;
    }
    if marks_all {
        w.fault_point(Boundary::AfterClick).await;
    }
    if !observed(&driver, &key).await? {
        return reconcile(w, &driver, &url, &key).await;
    }
    if marks_all {
        w.fault_point(Boundary::AfterRemoteEffect).await;
    }
    w.journal().transition(
        &key,
        Checkpoint::ActionSubmitted,
        Checkpoint::RemoteConfirmed,
    )?;
    Ok(Outcome::Confirmed)
}

/// The page's kind: its body's `data-page`, or `""` (not the site's page: a proxy's error).
async fn page_kind(driver: &WebDriver) -> Result<String, TaskError> {
    Ok(attribute(driver, "body", "data-page")
        .await?
        .unwrap_or_default())
}

async fn attribute(driver: &WebDriver, css: &str, name: &str) -> Result<Option<String>, TaskError> {
    let element = driver
        .query(By::Css(css))
        .wait(WAIT, Duration::from_millis(50))
        .first()
        .await
        .map_err(agent)?;
    element.attr(name).await.map_err(agent)
}

async fn sign_in(driver: &WebDriver, account: &Account) -> Result<(), TaskError> {
    let user = driver
        .find(By::Css("#login-form input[name=username]"))
        .await
        .map_err(agent)?;
    user.send_keys(&account.username).await.map_err(agent)?;
    let password = driver
        .find(By::Css("#login-form input[name=password]"))
        .await
        .map_err(agent)?;
    password
        .send_keys(account.password.expose())
        .await
        .map_err(agent)?;
    driver
        .find(By::Id("login"))
        .await
        .map_err(agent)?
        .click()
        .await
        .map_err(agent)?;
    // Back on the thread once the site took the login; still the form when it refused it.
    let answered = driver
        .query(By::Css("body[data-page=thread], #login-error"))
        .wait(WAIT, Duration::from_millis(50))
        .first()
        .await
        .map_err(agent)?;
    if answered.id().await.map_err(agent)?.as_deref() == Some("login-error") {
        return Err(SafeStop::NotSignedIn.into());
    }
    Ok(())
}

/// Who the site serves this session as, against the expected account and tenant.
async fn check_identity(driver: &WebDriver, account: &Account) -> Result<(), TaskError> {
    match page_kind(driver).await?.as_str() {
        "login" => return Err(SafeStop::NotSignedIn.into()),
        "login-interstitial" | "consent" => return Err(SafeStop::Interstitial.into()),
        _ => {}
    }
    let id = attribute(driver, "body", "data-account-id").await?;
    if id.as_deref() != Some(account.id.as_str()) {
        return Err(SafeStop::WrongAccount.into());
    }
    let tenant = attribute(driver, "body", "data-tenant-id").await?;
    if account.tenant.is_some() && tenant != account.tenant {
        return Err(SafeStop::WrongTenant.into());
    }
    Ok(())
}

/// Waits for the site's answer to the send: its own message on the page (`true`), or any
/// other answer (`false`: an error, or a success notice without its own message, which
/// say nothing of whether the effect happened). The first match in document order is
/// taken: the site's message list comes before its notice.
async fn observed(driver: &WebDriver, key: &RequestKey) -> Result<bool, TaskError> {
    let sent = format!("[data-sent-key=\"{key}\"]");
    let answers = format!(
        "{sent}, body[data-page=stale], body[data-page=unavailable], body:not([data-page]), #sent-notice"
    );
    let answer = driver
        .query(By::Css(answers.as_str()))
        .wait(WAIT, Duration::from_millis(50))
        .first()
        .await
        .map_err(agent)?;
    if answer.attr("data-page").await.map_err(agent)?.as_deref() == Some("stale") {
        return Err(SafeStop::StaleTarget.into());
    }
    Ok(answer.attr("data-sent-key").await.map_err(agent)?.is_some())
}

/// Settles an `ACTION_SUBMITTED` read-only: reloads the thread and looks for its own
/// message. Present is confirmed, absent is `UNKNOWN`: never a resend.
async fn reconcile(w: &Worker, driver: &WebDriver, url: &str, key: &RequestKey) -> TaskResult {
    driver.goto(url).await.map_err(agent)?;
    check_identity(driver, w.account()).await?;
    let mine = format!("li.message[data-sent-key=\"{key}\"]");
    let found = driver
        .find_all(By::Css(mine.as_str()))
        .await
        .map_err(agent)?;
    if found.is_empty() {
        w.journal()
            .transition(key, Checkpoint::ActionSubmitted, Checkpoint::Unknown)?;
        return Ok(Outcome::Unknown);
    }
    w.journal().transition(
        key,
        Checkpoint::ActionSubmitted,
        Checkpoint::RemoteConfirmed,
    )?;
    Ok(Outcome::Confirmed)
}
