//! The worker's CDP endpoint: a protocol proxy on loopback between an agent's own Chrome
//! DevTools Protocol client (chromiumoxide, Playwright's `connectOverCDP`, puppeteer, a raw
//! WebSocket) and the worker's browser, as [the WebDriver endpoint](super::endpoint) is for
//! WebDriver clients.
//!
//! What it answers:
//! - `GET /json/version`, `/json`, `/json/list` (and `PUT /json/new`): the browser's own
//!   answers, with every `webSocketDebuggerUrl` pointing at this endpoint (and the DevTools
//!   front-end links, which point at the browser, left out).
//! - A WebSocket upgrade of `/devtools/…` (the browser, or one page): a connection to the
//!   same path on the browser, every message passed both ways as it is.
//!
//! Every method call of the agent is a step: when the browser answers call `id`, the call is
//! numbered and timed (the worker's browser time, a trace line under `BROWSER_FAULT_TRACE=1`),
//! named by its method only (`Page.navigate`, step label `cdp_page_navigate`: never its
//! parameters, never its result), and counted by the fault hook, so an `every_step` trial
//! crashes the worker right after the browser answered the agent's N-th call, before the
//! answer reaches the agent. Events pass as they come and count nothing.
//!
//! `browser_crash` is read here as at the WebDriver endpoint: the browser is killed under the
//! live agent at its first call once a side effect is `TARGET_VERIFIED` or `ACTION_SUBMITTED`.
//!
//! The browser's DevTools address is the one chromedriver reports
//! (`goog:chromeOptions.debuggerAddress`); on a Selenium Grid, the session's `se:cdp`
//! WebSocket, which serves the browser target only.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use super::Shared;
use crate::browser::SessionToken;

/// The largest CDP message either way (a full-page screenshot's base64 fits).
const MAX_MESSAGE: usize = 256 << 20;

/// Where the browser's DevTools are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Upstream {
    /// A local browser's DevTools server, `host:port`.
    Local(String),
    /// A grid's WebSocket for the session's browser target (`se:cdp`).
    Grid(String),
}

impl Upstream {
    /// The DevTools address of a session, from its capabilities: on a remote endpoint the
    /// grid's `se:cdp` (the node's `debuggerAddress` is the node's own loopback), else the
    /// browser's `debuggerAddress`.
    pub(crate) fn of_session(capabilities: &serde_json::Value, remote: bool) -> Option<Upstream> {
        let grid = capabilities["se:cdp"]
            .as_str()
            .map(|ws| Upstream::Grid(ws.to_owned()));
        if remote && grid.is_some() {
            return grid;
        }
        capabilities["goog:chromeOptions"]["debuggerAddress"]
            .as_str()
            .map(|address| Upstream::Local(address.to_owned()))
            .or(grid)
    }
}

/// The worker's CDP endpoint while it runs; dropped, it stops.
#[derive(Debug)]
pub(crate) struct CdpEndpoint {
    url: String,
    task: JoinHandle<()>,
}

impl Drop for CdpEndpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CdpEndpoint {
    /// Listens on a free loopback port and serves the browser's DevTools at `upstream`.
    pub(crate) async fn start(
        shared: Arc<Shared>,
        upstream: Upstream,
    ) -> std::io::Result<CdpEndpoint> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let address = listener.local_addr()?.to_string();
        let client = reqwest::Client::builder()
            .timeout(shared.spec.step_timeout + Duration::from_secs(5))
            .build()
            .map_err(std::io::Error::other)?;
        let proxy = Arc::new(CdpProxy {
            shared,
            client,
            upstream,
            address: address.clone(),
        });
        let task = tokio::spawn(accept_loop(listener, proxy));
        Ok(CdpEndpoint {
            url: format!("http://{address}"),
            task,
        })
    }

    /// The URL a CDP client connects to (`http://127.0.0.1:PORT`; its `/json/version` names
    /// the browser's WebSocket).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }
}

async fn accept_loop(listener: TcpListener, proxy: Arc<CdpProxy>) {
    super::endpoint::serve(listener, move |req| proxy.clone().handle(req)).await;
}

#[derive(Debug)]
struct CdpProxy {
    shared: Arc<Shared>,
    client: reqwest::Client,
    upstream: Upstream,
    /// This endpoint's `host:port`.
    address: String,
}

/// A call sent and not answered yet: its method and when it went out.
type Pending = Arc<Mutex<HashMap<CallKey, (String, Instant)>>>;

/// A call's id within its session (`sessionId`, for a flattened target session).
type CallKey = (Option<String>, u64);

impl CdpProxy {
    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Result<Response<Full<Bytes>>, Infallible> {
        let path = req.uri().path().to_owned();
        if path.starts_with("/devtools/") && is_upgrade(&req) {
            return Ok(self.upgrade(req, path).await);
        }
        let method = req.method().clone();
        match (&method, path.as_str()) {
            (&Method::GET, "/json/version" | "/json/version/") => Ok(self.json(&path, None).await),
            (&Method::GET, "/json" | "/json/" | "/json/list" | "/json/list/")
            | (&Method::PUT, "/json/new") => {
                let query = req.uri().query().map(str::to_owned);
                Ok(self.json(&path, query.as_deref()).await)
            }
            _ => Ok(text(
                StatusCode::NOT_FOUND,
                "not a DevTools endpoint of the worker's browser",
            )),
        }
    }

    /// A DevTools HTTP answer of the browser, its WebSocket URLs pointing here.
    async fn json(&self, path: &str, query: Option<&str>) -> Response<Full<Bytes>> {
        let upstream = match &self.upstream {
            Upstream::Local(address) => address,
            Upstream::Grid(_) => {
                // A grid serves the browser target only, through its own WebSocket.
                if !path.starts_with("/json/version") {
                    return json(StatusCode::OK, serde_json::json!([]));
                }
                return json(
                    StatusCode::OK,
                    serde_json::json!({
                        "Browser": "Chrome",
                        "Protocol-Version": "1.3",
                        "webSocketDebuggerUrl": format!("ws://{}/devtools/browser/grid", self.address),
                    }),
                );
            }
        };
        let mut url = format!("http://{upstream}{path}");
        if let Some(query) = query {
            url.push('?');
            url.push_str(query);
        }
        let request = if path.starts_with("/json/new") {
            self.client.put(url)
        } else {
            self.client.get(url)
        };
        let answer = match request.send().await {
            Ok(a) => a,
            Err(_) => {
                return text(
                    StatusCode::BAD_GATEWAY,
                    "the browser's DevTools did not answer (the browser is gone?)",
                );
            }
        };
        let status = answer.status().as_u16();
        let Ok(mut value) = answer.json::<serde_json::Value>().await else {
            return text(StatusCode::BAD_GATEWAY, "the browser's answer was not JSON");
        };
        rewrite_urls(&mut value, upstream, &self.address);
        json(
            StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
            value,
        )
    }

    /// Accepts the agent's WebSocket and joins it to the same path on the browser.
    async fn upgrade(
        self: Arc<Self>,
        req: Request<Incoming>,
        path: String,
    ) -> Response<Full<Bytes>> {
        let Some(key) = req.headers().get("sec-websocket-key").cloned() else {
            return text(StatusCode::BAD_REQUEST, "a WebSocket upgrade needs its key");
        };
        let Some((token, _)) = self.shared.registry.with_current(|_| ()) else {
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                "the worker has no live browser (it crashed or its step timed out)",
            );
        };
        let target = match &self.upstream {
            Upstream::Local(address) => format!("ws://{address}{path}"),
            Upstream::Grid(ws) => ws.clone(),
        };
        let config = ws_config();
        let browser =
            match tokio_tungstenite::connect_async_with_config(target, Some(config), true).await {
                Ok((ws, _)) => ws,
                Err(_) => {
                    return text(
                        StatusCode::BAD_GATEWAY,
                        "the browser's DevTools refused the connection (the browser is gone?)",
                    );
                }
            };
        let proxy = self.clone();
        tokio::spawn(async move {
            let Ok(upgraded) = hyper::upgrade::on(req).await else {
                return;
            };
            let agent = tokio_tungstenite::WebSocketStream::from_raw_socket(
                TokioIo::new(upgraded),
                Role::Server,
                Some(config),
            )
            .await;
            proxy.pump(token, agent, browser).await;
        });
        Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header("upgrade", "websocket")
            .header("connection", "Upgrade")
            .header("sec-websocket-accept", derive_accept_key(key.as_bytes()))
            .body(Full::default())
            .unwrap_or_else(|_| Response::new(Full::default()))
    }

    /// Passes messages both ways until either side closes; counts each answered call.
    async fn pump<A, B>(
        &self,
        token: SessionToken,
        agent: tokio_tungstenite::WebSocketStream<A>,
        browser: tokio_tungstenite::WebSocketStream<B>,
    ) where
        A: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
        B: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        let pending: Pending = Arc::default();
        let (mut to_agent, mut from_agent) = agent.split();
        let (mut to_browser, mut from_browser) = browser.split();
        let calls = async {
            while let Some(Ok(message)) = from_agent.next().await {
                if self.shared.fault.halted() {
                    // A step struck: this worker is being crashed; nothing more goes out.
                    std::future::pending::<()>().await;
                }
                let close = message.is_close();
                if let Message::Text(text) = &message
                    && let Some((key, method)) = call(text.as_str())
                {
                    if super::endpoint::cross_browser_crash(&self.shared, token).await
                        && self.shared.fault.armed() == Some(crate::plan::FaultPoint::BrowserCrash)
                    {
                        // The browser was killed under the agent: its connection dies with it
                        // (a grid's CDP proxy would keep it open on a dead browser).
                        break;
                    }
                    super::endpoint::cross_network_boundary(&self.shared, token).await;
                    lock(&pending).insert(key, (method, Instant::now()));
                }
                if to_browser.send(message).await.is_err() || close {
                    break;
                }
            }
            let _ = to_browser.close().await;
        };
        let answers = async {
            while let Some(Ok(message)) = from_browser.next().await {
                let close = message.is_close();
                let answered = match &message {
                    Message::Text(text) => {
                        answer(text.as_str()).and_then(|key| lock(&pending).remove(&key))
                    }
                    _ => None,
                };
                if let Some((method, sent)) = answered {
                    self.shared
                        .agent_drove
                        .store(true, std::sync::atomic::Ordering::Release);
                    let took = sent.elapsed();
                    self.shared.fault.add_browser_time(took);
                    super::trace(&self.shared.log, || {
                        format!("cdp {method} {} ms", took.as_millis())
                    });
                    // At the armed step the worker is crashed here, before the agent has
                    // the answer.
                    self.shared
                        .browser_step(Some(token), &step_label(&method))
                        .await;
                }
                if to_agent.send(message).await.is_err() || close {
                    break;
                }
            }
            let _ = to_agent.close().await;
        };
        // Either side's end ends both.
        tokio::select! {
            () = calls => {}
            () = answers => {}
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE))
}

fn is_upgrade<T>(req: &Request<T>) -> bool {
    req.headers()
        .get("upgrade")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// The head of a CDP message: enough to tell a call, an answer and an event apart.
#[derive(serde::Deserialize)]
struct Head {
    id: Option<u64>,
    method: Option<String>,
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

fn head(text: &str) -> Option<Head> {
    serde_json::from_str(text).ok()
}

/// A call of the agent: its key and method.
fn call(text: &str) -> Option<(CallKey, String)> {
    let h = head(text)?;
    Some(((h.session_id, h.id?), h.method?))
}

/// An answer of the browser (an `id` and no `method`; an event has a method and no id).
fn answer(text: &str) -> Option<CallKey> {
    let h = head(text)?;
    if h.method.is_some() {
        return None;
    }
    Some((h.session_id, h.id?))
}

/// `Runtime.callFunctionOn` → `cdp_runtime_call_function_on`.
fn step_label(method: &str) -> String {
    let mut label = String::from("cdp_");
    let mut prev_lower = false;
    for c in method.chars() {
        if c == '.' {
            label.push('_');
            prev_lower = false;
        } else if c.is_ascii_uppercase() {
            if prev_lower {
                label.push('_');
            }
            label.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_alphanumeric() {
            label.push(c);
            prev_lower = true;
        }
    }
    label
}

/// Points every `webSocketDebuggerUrl` of a DevTools answer at this endpoint, and drops the
/// front-end links (they point at the browser's own port).
fn rewrite_urls(value: &mut serde_json::Value, upstream: &str, ours: &str) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("devtoolsFrontendUrl");
            map.remove("devtoolsFrontendUrlCompat");
            if let Some(serde_json::Value::String(ws)) = map.get_mut("webSocketDebuggerUrl") {
                *ws = ws.replacen(&format!("ws://{upstream}"), &format!("ws://{ours}"), 1);
                if let Some(rest) = ws.strip_prefix("ws://")
                    && !rest.starts_with(ours)
                {
                    // chromedriver's `localhost:PORT` against the browser's `127.0.0.1:PORT`.
                    if let Some(i) = rest.find('/') {
                        *ws = format!("ws://{ours}{}", &rest[i..]);
                    }
                }
            }
            for v in map.values_mut() {
                rewrite_urls(v, upstream, ours);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                rewrite_urls(v, upstream, ours);
            }
        }
        _ => {}
    }
}

fn json(status: StatusCode, value: serde_json::Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=UTF-8")
        .body(Full::new(Bytes::from(value.to_string())))
        .unwrap_or_else(|_| Response::new(Full::default()))
}

fn text(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(message.to_owned())))
        .unwrap_or_else(|_| Response::new(Full::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_method_as_a_step_label() {
        assert_eq!(step_label("Page.navigate"), "cdp_page_navigate");
        assert_eq!(
            step_label("Runtime.callFunctionOn"),
            "cdp_runtime_call_function_on"
        );
        assert_eq!(
            step_label("Input.dispatchMouseEvent"),
            "cdp_input_dispatch_mouse_event"
        );
        assert_eq!(step_label("DOM.getDocument"), "cdp_dom_get_document");
    }

    #[test]
    fn tells_calls_answers_and_events_apart() {
        let call_text = r#"{"id":7,"method":"Runtime.evaluate","params":{"expression":"secret"},"sessionId":"S1"}"#;
        assert_eq!(
            call(call_text),
            Some(((Some("S1".into()), 7), "Runtime.evaluate".into()))
        );
        assert_eq!(
            answer(r#"{"id":7,"result":{"value":1},"sessionId":"S1"}"#),
            Some((Some("S1".into()), 7))
        );
        assert_eq!(
            answer(r#"{"method":"Page.loadEventFired","params":{}}"#),
            None
        );
        assert_eq!(call(r#"{"method":"Page.loadEventFired"}"#), None);
    }

    #[test]
    fn points_websocket_urls_here_and_drops_front_end_links() {
        let mut v = serde_json::json!([{
            "id": "T1",
            "webSocketDebuggerUrl": "ws://localhost:9222/devtools/page/T1",
            "devtoolsFrontendUrl": "/devtools/inspector.html?ws=localhost:9222/devtools/page/T1",
        }]);
        rewrite_urls(&mut v, "localhost:9222", "127.0.0.1:5000");
        assert_eq!(
            v,
            serde_json::json!([{
                "id": "T1",
                "webSocketDebuggerUrl": "ws://127.0.0.1:5000/devtools/page/T1",
            }])
        );
        let mut other = serde_json::json!({
            "webSocketDebuggerUrl": "ws://127.0.0.1:9222/devtools/browser/B"
        });
        rewrite_urls(&mut other, "localhost:9222", "127.0.0.1:5000");
        assert_eq!(
            other["webSocketDebuggerUrl"],
            "ws://127.0.0.1:5000/devtools/browser/B"
        );
    }

    #[test]
    fn finds_the_devtools_address_locally_and_on_a_grid() {
        let local =
            serde_json::json!({ "goog:chromeOptions": { "debuggerAddress": "localhost:40001" } });
        assert_eq!(
            Upstream::of_session(&local, false),
            Some(Upstream::Local("localhost:40001".into()))
        );
        let grid = serde_json::json!({
            "se:cdp": "ws://127.0.0.1:4444/session/x/se/cdp",
            "goog:chromeOptions": { "debuggerAddress": "localhost:40001" },
        });
        assert_eq!(
            Upstream::of_session(&grid, true),
            Some(Upstream::Grid(
                "ws://127.0.0.1:4444/session/x/se/cdp".into()
            ))
        );
        assert_eq!(
            Upstream::of_session(&grid, false),
            Some(Upstream::Local("localhost:40001".into()))
        );
        assert_eq!(Upstream::of_session(&serde_json::json!({}), true), None);
    }
}
