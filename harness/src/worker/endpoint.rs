//! The worker's WebDriver endpoint: a protocol proxy on loopback between an agent's own
//! WebDriver client (thirtyfour, fantoccini, Selenium, WebdriverIO …) and the worker's
//! browser, so that an agent that drives the browser itself is tested on the worker's
//! profile, behind the fault proxy, with the harness's flags, and crashed after its own
//! commands.
//!
//! What it answers:
//! - `POST /session` returns the worker's live session (the one the harness launched on the
//!   profile), whatever capabilities the client asks for. What the client asked for is
//!   ignored and said so in the worker's log, by capability name only: a `binary`, `args`,
//!   a profile or a proxy of its own would take the browser off the profile and the fault
//!   proxy under test.
//! - `DELETE /session/{id}` is answered at once and ends nothing: the harness owns the
//!   browser and ends it with the worker (so a client's quit on drop costs nothing).
//! - `POST /session/{id}/element/{id}/click` is dispatched from a timer of the page
//!   ([`Page::dispatch_click`](super::Page)) and answered once dispatched, as a page step's
//!   click is: chromedriver's own click waits for the navigation it starts, so a site
//!   holding the response would hold the agent inside its click until the trial's timeout.
//! - `GET /status` answers ready while the worker has a browser.
//! - Every other command is forwarded to the browser's WebDriver server as it is.
//!
//! Every command of a session is a step: numbered, timed (the worker's browser time, and a
//! line in its trace under `BROWSER_FAULT_TRACE=1`), named by its method and path with every
//! id replaced (`POST /session/{id}/element/{id}/click`; as a step label
//! `webdriver_post_element_click`), never with its values (no field text, no cookie value,
//! no URL), and counted by the fault hook, so an `every_step` trial crashes the agent right
//! after its own N-th command, before the agent sees the answer.
//!
//! A command that repeats the one before it, a read (a `GET` or a find), is a poll and
//! counts as the step it repeats: an agent's wait asks as often as its timing makes it, and
//! step numbers must not depend on that.
//!
//! `browser_crash` is read from here: the browser is killed under the live agent at its
//! first command once a side effect of the run is `TARGET_VERIFIED` or `ACTION_SUBMITTED`.
//!
//! After a browser crash or a step timeout the worker's session is gone, and so is the one
//! the agent was given: its commands get the server's `invalid session id`, the truth.

use std::convert::Infallible;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::{Page, Shared};
use crate::browser::SessionToken;
use crate::journal::Checkpoint;
use crate::network_marks::Mark;
use crate::plan::FaultPoint;

/// The W3C key of a web element reference.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The largest request body an agent may send (a file upload's base64 fits).
const MAX_BODY: usize = 64 << 20;

/// Path segments that are WebDriver vocabulary (W3C, and chromedriver's `goog` commands):
/// shown as they are in a command's name. Anything else is an id, a handle or a name and
/// shown as `{id}`.
const WORDS: &[&str] = &[
    "accept",
    "actions",
    "active",
    "alert",
    "async",
    "attribute",
    "back",
    "cast",
    "cdp",
    "clear",
    "click",
    "computedlabel",
    "computedrole",
    "context",
    "cookie",
    "css",
    "dismiss",
    "displayed",
    "element",
    "elements",
    "enabled",
    "execute",
    "forward",
    "frame",
    "fullscreen",
    "goog",
    "handle",
    "handles",
    "log",
    "maximize",
    "minimize",
    "name",
    "new",
    "parent",
    "print",
    "property",
    "rect",
    "refresh",
    "screenshot",
    "selected",
    "shadow",
    "source",
    "sync",
    "text",
    "timeouts",
    "title",
    "url",
    "value",
    "window",
];

/// The worker's endpoint while it runs; dropped, it stops.
#[derive(Debug)]
pub(crate) struct Endpoint {
    url: String,
    task: JoinHandle<()>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Endpoint {
    /// Listens on a free loopback port and serves the worker's browser there.
    pub(crate) async fn start(shared: Arc<Shared>) -> std::io::Result<Endpoint> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let client = reqwest::Client::builder()
            .timeout(shared.spec.step_timeout + Duration::from_secs(5))
            .build()
            .map_err(std::io::Error::other)?;
        let proxy = Proxy {
            shared,
            client,
            last_read: Mutex::new(None),
        };
        let task = tokio::spawn(accept_loop(listener, Arc::new(proxy)));
        Ok(Endpoint { url, task })
    }

    /// The URL a WebDriver client connects to.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }
}

async fn accept_loop(listener: TcpListener, proxy: Arc<Proxy>) {
    serve(listener, move |req| proxy.clone().handle(req)).await;
}

/// Serves HTTP/1.1 (with upgrades, for a WebSocket) on `listener` with `handle`, until
/// aborted; an aborted server drops its connections with it.
pub(super) async fn serve<H, F>(listener: TcpListener, handle: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: std::future::Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send + 'static,
{
    let mut conns = tokio::task::JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors: let it pass, don't spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let handle = handle.clone();
        // Held here, so that an aborted endpoint drops its connections with it.
        conns.spawn(async move {
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service_fn(handle))
                .with_upgrades()
                .await;
        });
        while conns.try_join_next().is_some() {}
    }
}

/// The worker's browser as the endpoint sees it at one command.
struct Current {
    token: SessionToken,
    server_url: String,
    session_id: String,
}

#[derive(Debug)]
struct Proxy {
    shared: Arc<Shared>,
    client: reqwest::Client,
    /// The fingerprint of the last command, when it was a read: the same read again at once
    /// is a poll, and the same step.
    last_read: Mutex<Option<u64>>,
}

impl Proxy {
    fn current(&self) -> Option<Current> {
        let (token, (server_url, session_id)) = self
            .shared
            .registry
            .with_current(|b| (b.server_url(), b.webdriver_session_id()))?;
        Some(Current {
            token,
            server_url,
            session_id,
        })
    }

    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Result<Response<Full<Bytes>>, Infallible> {
        if self.shared.fault.halted() {
            // A step struck: this worker is being crashed, and its browser is driven no more.
            std::future::pending::<()>().await;
        }
        let method = req.method().clone();
        let path = req.uri().path().to_owned();
        let query = req.uri().query().map(str::to_owned);
        let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
            Ok(body) => body.to_bytes(),
            Err(_) => {
                return Ok(error(
                    StatusCode::BAD_REQUEST,
                    "invalid argument",
                    "the request body could not be read",
                ));
            }
        };
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let Some(current) = self.current() else {
            return Ok(error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "session not created",
                "the worker has no live browser (it crashed or its step timed out)",
            ));
        };
        match (&method, segments.as_slice()) {
            (&Method::GET, ["status"]) => Ok(json(
                StatusCode::OK,
                serde_json::json!({ "value": { "ready": true, "message": "browser-fault worker endpoint" } }),
            )),
            (&Method::POST, ["session"]) => {
                self.shared.agent_drove.store(true, Ordering::Release);
                Ok(self.new_session(&current, &body))
            }
            (&Method::DELETE, ["session", _]) => {
                self.shared.log.line(
                    "webdriver: the agent ended its session; the harness ends the browser with the worker",
                );
                Ok(json(StatusCode::OK, serde_json::json!({ "value": null })))
            }
            (_, ["session", _, ..]) => {
                self.shared.agent_drove.store(true, Ordering::Release);
                let poll = self.is_poll(&method, &segments, &path, &body);
                // The command then meets the dead browser, as the agent's next one would.
                let _ = cross_browser_crash(&self.shared, current.token).await;
                // Timed as a page step is: from before the wait for a click's navigation, which
                // is the browser's time, not the harness's.
                let started = Instant::now();
                // As a page step after a click: never read the page the click is leaving.
                Page::new(self.shared.clone(), Some(current.token))
                    .settle_after_click()
                    .await;
                // Once the click's navigation is in, the site's answer to it is noted: the
                // command right after a sign-in's click sees it, whatever the load.
                cross_network_boundary(&self.shared, current.token).await;
                let response = match (&method, segments.as_slice()) {
                    (&Method::POST, ["session", _, "element", element, "click"]) => {
                        self.click(&current, element).await
                    }
                    _ => {
                        self.forward(&current, &method, &path, query.as_deref(), body)
                            .await
                    }
                };
                let took = started.elapsed();
                self.shared.fault.add_browser_time(took);
                super::trace(&self.shared.log, || {
                    let name = command_name(&method, &segments);
                    format!("webdriver {name} {} ms", took.as_millis())
                });
                if !poll {
                    // At the armed step the worker is crashed here, before the agent sees
                    // the answer.
                    self.shared
                        .browser_step(Some(current.token), &step_label(&method, &segments))
                        .await;
                }
                Ok(response)
            }
            _ => Ok(error(
                StatusCode::NOT_FOUND,
                "unknown command",
                "not a WebDriver command of a session",
            )),
        }
    }

    /// Whether this command repeats the one before it, a read (a `GET`, or a find): a poll
    /// (an agent's wait that asks again until an element is there). A poll is the step of
    /// the first read it repeats, so that step numbers do not depend on how often an agent's
    /// wait happened to ask.
    fn is_poll(&self, method: &Method, segments: &[&str], path: &str, body: &[u8]) -> bool {
        let read = method == Method::GET
            || (method == Method::POST
                && matches!(segments.last(), Some(&"element") | Some(&"elements")));
        let mut last = self.last_read.lock().unwrap_or_else(|p| p.into_inner());
        if !read {
            *last = None;
            return false;
        }
        let mut hasher = std::hash::DefaultHasher::new();
        (method.as_str(), path, body).hash(&mut hasher);
        let fingerprint = hasher.finish();
        last.replace(fingerprint) == Some(fingerprint)
    }

    /// Answers a new-session request with the worker's session.
    fn new_session(&self, current: &Current, body: &[u8]) -> Response<Full<Bytes>> {
        let asked: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let ignored = requested_capabilities(&asked);
        if !ignored.is_empty() {
            self.shared.log.line(&format!(
                "webdriver: new session: the worker's browser is given; requested capabilities ignored: {}",
                ignored.join(", ")
            ));
        }
        let capabilities = self
            .shared
            .registry
            .with_browser(current.token, crate::browser::Browser::session_capabilities)
            .unwrap_or_default();
        json(
            StatusCode::OK,
            serde_json::json!({ "value": {
                "sessionId": current.session_id,
                "capabilities": capabilities,
            }}),
        )
    }

    /// Dispatches the click from a timer of the page, and answers once it is dispatched.
    async fn click(&self, current: &Current, element: &str) -> Response<Full<Bytes>> {
        let page = Page::new(self.shared.clone(), Some(current.token));
        let target = serde_json::json!({ ELEMENT_KEY: element });
        match page.click_element(target).await {
            Ok(true) => json(StatusCode::OK, serde_json::json!({ "value": null })),
            // The page refused the element (gone with its document, or not an element).
            Ok(false) | Err(_) => error(
                StatusCode::NOT_FOUND,
                "stale element reference",
                "the element could not be clicked",
            ),
        }
    }

    /// Forwards a command to the browser's WebDriver server and returns its answer as it is.
    async fn forward(
        &self,
        current: &Current,
        method: &Method,
        path: &str,
        query: Option<&str>,
        body: Bytes,
    ) -> Response<Full<Bytes>> {
        let mut url = format!("{}{path}", current.server_url);
        if let Some(query) = query {
            url.push('?');
            url.push_str(query);
        }
        let Ok(method) = reqwest::Method::from_bytes(method.as_str().as_bytes()) else {
            return error(
                StatusCode::BAD_REQUEST,
                "unknown method",
                "not an HTTP method",
            );
        };
        let mut request = self.client.request(method, url);
        if !body.is_empty() {
            request = request
                .header("content-type", "application/json; charset=utf-8")
                .body(body);
        }
        match request.send().await {
            Ok(answer) => {
                let status = StatusCode::from_u16(answer.status().as_u16())
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                match answer.bytes().await {
                    Ok(bytes) => Response::builder()
                        .status(status)
                        .header("content-type", "application/json; charset=utf-8")
                        .body(Full::new(bytes))
                        .unwrap_or_else(|_| Response::new(Full::default())),
                    Err(_) => error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "unknown error",
                        "the browser's answer was cut off",
                    ),
                }
            }
            Err(_) => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "unknown error",
                "the browser's WebDriver server did not answer (the browser is gone?)",
            ),
        }
    }
}

/// `browser_crash`, read from outside the agent: its first command (WebDriver or CDP) once
/// one of the run's side effects is past its verification (`TARGET_VERIFIED`, or
/// `ACTION_SUBMITTED` by an agent that journals it at once), where the browser is killed
/// under the live agent. Returns whether it was crossed here (the browser is gone since, when
/// the worker was armed there).
pub(super) async fn cross_browser_crash(shared: &Arc<Shared>, token: SessionToken) -> bool {
    if shared.browser_crash_crossed.load(Ordering::Acquire)
        || !shared.fault.watches(FaultPoint::BrowserCrash)
    {
        return false;
    }
    let verified = shared
        .journal
        .side_effects(&shared.spec.run_id)
        .is_ok_and(|effects| {
            effects.iter().any(|e| {
                matches!(
                    e.state,
                    Checkpoint::TargetVerified | Checkpoint::ActionSubmitted
                )
            })
        });
    if verified && !shared.browser_crash_crossed.swap(true, Ordering::AcqRel) {
        super::strike(shared, Some(token), FaultPoint::BrowserCrash).await;
        return true;
    }
    false
}

/// The boundaries read from the network: each, the proxy's note that crosses it, and what
/// the note says.
const READ_FROM_THE_NETWORK: [(FaultPoint, Mark, &str); 3] = [
    (
        FaultPoint::AfterLogin,
        Mark::SignInAnswered,
        "the site answered the sign-in",
    ),
    (
        FaultPoint::AfterClick,
        Mark::EffectSent,
        "the effect's request reached the site's proxy",
    ),
    (
        FaultPoint::AfterRemoteEffect,
        Mark::EffectAnswered,
        "the site's answer to the effect reached the browser",
    ),
];

/// `after_login`, `after_click` and `after_remote_effect`, read from outside the agent: at
/// its first command (WebDriver or CDP) once the proxy noted the sign-in answered, the
/// effect's request sent, or the effect answered, the worker armed there strikes, before
/// the command goes to the browser. Whichever comes first strikes: this, or the agent's own
/// fault point for the boundary. Nothing when the worker is armed elsewhere (one
/// comparison per boundary).
pub(super) async fn cross_network_boundary(shared: &Arc<Shared>, token: SessionToken) {
    let Some(marks) = &shared.network else {
        return;
    };
    for (point, mark, what) in READ_FROM_THE_NETWORK {
        if shared.fault.is_armed_for(point) && marks.seen(mark) {
            shared.log.line(&format!(
                "fault point {point} read from the network: {what}; at the agent's next command"
            ));
            super::strike(shared, Some(token), point).await;
            return;
        }
    }
}

/// A command's name: its method and path with every id replaced by `{id}`.
fn command_name(method: &Method, segments: &[&str]) -> String {
    let mut name = format!("{method} /session/{{id}}");
    for s in segments.iter().skip(2) {
        name.push('/');
        name.push_str(if WORDS.contains(s) { s } else { "{id}" });
    }
    name
}

/// A command's step label, as step trials are named by it (`step::0012_webdriver_post_element_click`):
/// `webdriver_`, the method, and the path's WebDriver words, ids left out.
fn step_label(method: &Method, segments: &[&str]) -> String {
    let mut label = format!("webdriver_{}", method.as_str().to_ascii_lowercase());
    for s in segments.iter().skip(2).filter(|s| WORDS.contains(s)) {
        label.push('_');
        label.push_str(s);
    }
    label
}

/// The names of the capabilities a new-session request asked for (`alwaysMatch`, each of
/// `firstMatch`, and the legacy `desiredCapabilities`), sorted, without their values; with
/// `goog:chromeOptions` named by its keys (`goog:chromeOptions.args`).
fn requested_capabilities(asked: &serde_json::Value) -> Vec<String> {
    let caps = &asked["capabilities"];
    let mut sets: Vec<&serde_json::Value> =
        vec![&caps["alwaysMatch"], &asked["desiredCapabilities"]];
    if let Some(first) = caps["firstMatch"].as_array() {
        sets.extend(first);
    }
    let mut names = Vec::new();
    for set in sets {
        let Some(map) = set.as_object() else { continue };
        for (key, value) in map {
            match (key.as_str(), value.as_object()) {
                ("goog:chromeOptions", Some(options)) => {
                    names.extend(options.keys().map(|k| format!("{key}.{k}")));
                }
                // What any browser session asks for and this one has: not worth a word.
                ("browserName", _) => {}
                _ => names.push(key.clone()),
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

fn json(status: StatusCode, value: serde_json::Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=utf-8")
        .body(Full::new(Bytes::from(value.to_string())))
        .unwrap_or_else(|_| Response::new(Full::default()))
}

/// A W3C error answer.
fn error(status: StatusCode, code: &str, message: &str) -> Response<Full<Bytes>> {
    json(
        status,
        serde_json::json!({ "value": { "error": code, "message": message, "stacktrace": "" } }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_command_without_its_ids() {
        let segments = ["session", "abc123", "element", "f.1.2", "click"];
        assert_eq!(
            command_name(&Method::POST, &segments),
            "POST /session/{id}/element/{id}/click"
        );
        assert_eq!(
            step_label(&Method::POST, &segments),
            "webdriver_post_element_click"
        );
        let cookie = ["session", "abc", "cookie", "sid-secret-name"];
        assert_eq!(
            command_name(&Method::GET, &cookie),
            "GET /session/{id}/cookie/{id}"
        );
    }

    #[test]
    fn lists_the_requested_capabilities_by_name_only() {
        let asked = serde_json::json!({ "capabilities": {
            "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": { "args": ["--user-data-dir=/home/me"], "binary": "/opt/c" },
                "proxy": { "proxyType": "manual", "httpProxy": "10.0.0.1:3128" },
            },
            "firstMatch": [{ "acceptInsecureCerts": true }],
        }});
        let names = requested_capabilities(&asked);
        assert_eq!(
            names,
            [
                "acceptInsecureCerts",
                "goog:chromeOptions.args",
                "goog:chromeOptions.binary",
                "proxy"
            ]
        );
        assert!(!names.join(" ").contains("/home/me"));
    }
}
