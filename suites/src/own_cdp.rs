//! An agent that drives the browser over the Chrome DevTools Protocol with a client of its
//! own (a raw WebSocket, as chromiumoxide, puppeteer or Playwright's `connectOverCDP` do
//! underneath), connected to [`Worker::cdp_url`]. Everything it does in the browser goes
//! through its own calls: the harness sees them only at the worker's CDP endpoint, counts
//! each as a step of `every_step`, and judges what the site's ledger holds.
//!
//! It never polls: it waits for the page's load event, so its calls (and so its step
//! numbers) are the same in every run.

use std::time::Duration;

use browser_fault::prelude::*;
use browser_fault::worker::BrowserError;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

use crate::THREAD;

/// How long it waits for a page or an answer.
const WAIT: Duration = Duration::from_secs(20);

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The agent's CDP connection, attached to one page.
struct Cdp {
    socket: Socket,
    session: String,
    next_id: u64,
    /// A load event that came while it waited for an answer.
    loaded: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("cdp: {0}")]
struct CdpError(String);

fn agent(what: impl Into<String>) -> TaskError {
    TaskError::scenario(CdpError(what.into()))
}

impl Cdp {
    /// Connects to the browser behind `http_url` (its `/json/version`) and attaches to its
    /// page.
    async fn connect(http_url: &str) -> Result<Cdp, TaskError> {
        let version = http_get_json(http_url, "/json/version").await?;
        let ws = version["webSocketDebuggerUrl"]
            .as_str()
            .ok_or_else(|| agent("no webSocketDebuggerUrl"))?;
        let (socket, _) = tokio_tungstenite::connect_async(ws)
            .await
            .map_err(|e| agent(format!("connect: {e}")))?;
        let mut cdp = Cdp {
            socket,
            session: String::new(),
            next_id: 0,
            loaded: false,
        };
        let targets = cdp.call("Target.getTargets", serde_json::json!({})).await?;
        let page = targets["targetInfos"]
            .as_array()
            .and_then(|all| all.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["targetId"].as_str())
            .ok_or_else(|| agent("no page target"))?
            .to_owned();
        let attached = cdp
            .call(
                "Target.attachToTarget",
                serde_json::json!({ "targetId": page, "flatten": true }),
            )
            .await?;
        cdp.session = attached["sessionId"]
            .as_str()
            .ok_or_else(|| agent("no session"))?
            .to_owned();
        cdp.call("Page.enable", serde_json::json!({})).await?;
        Ok(cdp)
    }

    /// One call; its result. Events that come meanwhile are seen (a load) and dropped.
    async fn call(
        &mut self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, TaskError> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = serde_json::json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            message["sessionId"] = serde_json::json!(self.session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .await
            .map_err(|_| gone())?;
        loop {
            let got = self.next_message().await?;
            if got["id"] == id {
                if let Some(error) = got.get("error") {
                    return Err(agent(format!("{method}: {}", error["message"])));
                }
                return Ok(got["result"].clone());
            }
        }
    }

    async fn next_message(&mut self) -> Result<serde_json::Value, TaskError> {
        loop {
            let message = tokio::time::timeout(WAIT, self.socket.next())
                .await
                .map_err(|_| agent("no answer"))?
                .ok_or_else(gone)?
                .map_err(|_| gone())?;
            let Message::Text(text) = message else {
                continue;
            };
            let value: serde_json::Value =
                serde_json::from_str(text.as_str()).map_err(|e| agent(e.to_string()))?;
            if value["method"] == "Page.loadEventFired" {
                self.loaded = true;
            }
            return Ok(value);
        }
    }

    /// Waits for the page's next load event (one that came during the last call counts).
    async fn load(&mut self) -> Result<(), TaskError> {
        while !std::mem::take(&mut self.loaded) {
            self.next_message().await?;
        }
        Ok(())
    }

    async fn navigate(&mut self, url: &str) -> Result<(), TaskError> {
        self.loaded = false;
        self.call("Page.navigate", serde_json::json!({ "url": url }))
            .await?;
        self.load().await
    }

    /// Evaluates `expression` in the page; its value.
    async fn eval(&mut self, expression: &str) -> Result<serde_json::Value, TaskError> {
        let result = self
            .call(
                "Runtime.evaluate",
                serde_json::json!({ "expression": expression, "returnByValue": true }),
            )
            .await?;
        Ok(result["result"]["value"].clone())
    }

    /// What the page shows: its kind, account, tenant, object, and the keys of the
    /// messages on it.
    async fn facts(&mut self) -> Result<Facts, TaskError> {
        let v = self
            .eval(
                "JSON.stringify({ page: document.body?.dataset.page ?? '', \
                 account: document.body?.dataset.accountId ?? null, \
                 tenant: document.body?.dataset.tenantId ?? null, \
                 object: document.querySelector('main')?.dataset.objectId ?? null, \
                 sent: [...document.querySelectorAll('[data-sent-key]')].map(e => e.dataset.sentKey) })",
            )
            .await?;
        serde_json::from_str(v.as_str().unwrap_or("{}")).map_err(|e| agent(e.to_string()))
    }

    /// Types `value` into the field `css` (its value, as a user's typing leaves it).
    async fn fill(&mut self, css: &str, value: &str) -> Result<(), TaskError> {
        let expression = format!(
            "document.querySelector({}).value = {}; true",
            serde_json::json!(css),
            serde_json::json!(value)
        );
        self.eval(&expression).await.map(drop)
    }

    /// Clicks `css`; the navigation it starts is waited for with [`Cdp::load`].
    async fn click(&mut self, css: &str) -> Result<(), TaskError> {
        self.loaded = false;
        let expression = format!(
            "document.querySelector({}).click(); true",
            serde_json::json!(css)
        );
        self.eval(&expression).await.map(drop)
    }
}

#[derive(Debug, Default, serde::Deserialize)]
struct Facts {
    page: String,
    account: Option<String>,
    tenant: Option<String>,
    object: Option<String>,
    sent: Vec<String>,
}

/// The connection closed under it: the browser is gone (the agent noticed).
fn gone() -> TaskError {
    TaskError::Browser(BrowserError::Crashed)
}

/// `GET path` of a DevTools HTTP endpoint, as JSON.
async fn http_get_json(http_url: &str, path: &str) -> Result<serde_json::Value, TaskError> {
    let host = http_url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = tokio::net::TcpStream::connect(host)
        .await
        .map_err(|e| agent(format!("connect {host}: {e}")))?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| agent(e.to_string()))?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .await
        .map_err(|e| agent(e.to_string()))?;
    let text = String::from_utf8_lossy(&answer);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).map_err(|e| agent(format!("{path}: {e}")))
}

/// The careful agent over its own CDP connection.
pub async fn send_hello(w: &mut Worker) -> TaskResult {
    w.require_trusted_profile()?;
    let mut cdp = Cdp::connect(&w.cdp_url().await?).await?;
    let url = format!("{}/threads/{THREAD}", w.origin());
    cdp.navigate(&url).await?;
    match cdp.facts().await?.page.as_str() {
        "login" => {
            sign_in(&mut cdp, w.account()).await?;
            w.fault_point(Boundary::AfterLogin).await;
        }
        "login-interstitial" | "consent" => return Err(SafeStop::Interstitial.into()),
        _ => {}
    }
    check_identity(&cdp.facts().await?, w.account())?;
    let record = w
        .journal()
        .record_intent("send-hello", &format!("thread={THREAD};body=hello"))?;
    let key = record.request_key.clone();
    match record.state {
        Checkpoint::RemoteConfirmed => return Ok(Outcome::Confirmed),
        Checkpoint::Unknown => return Ok(Outcome::Unknown),
        Checkpoint::ActionSubmitted => return reconcile(w, &mut cdp, &url, &key).await,
        Checkpoint::IntentRecorded | Checkpoint::TargetVerified => {}
    }
    w.fault_point(FaultPoint::BeforeVerify).await;
    cdp.navigate(&url).await?;
    let facts = cdp.facts().await?;
    check_identity(&facts, w.account())?;
    if facts.object.as_deref() != Some(THREAD) {
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
    w.journal().transition(
        &key,
        Checkpoint::TargetVerified,
        Checkpoint::ActionSubmitted,
    )?;
    cdp.fill("#request-key", key.as_str()).await?;
    cdp.fill("#body", "hello").await?;
    cdp.click("button#send").await?;
    w.fault_point(Boundary::AfterClick).await;
    cdp.load().await?;
    let answer = cdp.facts().await?;
    if answer.page == "stale" {
        return Err(SafeStop::StaleTarget.into());
    }
    if !answer.sent.iter().any(|k| k == key.as_str()) {
        return reconcile(w, &mut cdp, &url, &key).await;
    }
    w.fault_point(Boundary::AfterRemoteEffect).await;
    w.journal().transition(
        &key,
        Checkpoint::ActionSubmitted,
        Checkpoint::RemoteConfirmed,
    )?;
    Ok(Outcome::Confirmed)
}

async fn sign_in(cdp: &mut Cdp, account: &Account) -> Result<(), TaskError> {
    cdp.fill("#login-form input[name=username]", &account.username)
        .await?;
    cdp.fill(
        "#login-form input[name=password]",
        account.password.expose(),
    )
    .await?;
    cdp.click("#login").await?;
    cdp.load().await?;
    match cdp.facts().await?.page.as_str() {
        "thread" => Ok(()),
        _ => Err(SafeStop::NotSignedIn.into()),
    }
}

fn check_identity(facts: &Facts, account: &Account) -> Result<(), TaskError> {
    match facts.page.as_str() {
        "login" => return Err(SafeStop::NotSignedIn.into()),
        "login-interstitial" | "consent" => return Err(SafeStop::Interstitial.into()),
        _ => {}
    }
    if facts.account.as_deref() != Some(account.id.as_str()) {
        return Err(SafeStop::WrongAccount.into());
    }
    if account.tenant.is_some() && facts.tenant != account.tenant {
        return Err(SafeStop::WrongTenant.into());
    }
    Ok(())
}

/// Settles an `ACTION_SUBMITTED` read-only: present is confirmed, absent is `UNKNOWN`.
async fn reconcile(w: &Worker, cdp: &mut Cdp, url: &str, key: &RequestKey) -> TaskResult {
    cdp.navigate(url).await?;
    let facts = cdp.facts().await?;
    check_identity(&facts, w.account())?;
    if facts.sent.iter().any(|k| k == key.as_str()) {
        w.journal().transition(
            key,
            Checkpoint::ActionSubmitted,
            Checkpoint::RemoteConfirmed,
        )?;
        return Ok(Outcome::Confirmed);
    }
    w.journal()
        .transition(key, Checkpoint::ActionSubmitted, Checkpoint::Unknown)?;
    Ok(Outcome::Unknown)
}
