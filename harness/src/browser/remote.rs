//! A remote WebDriver endpoint (a Selenium Grid hub, or any WebDriver server) as the harness
//! sees it: whether a session it journaled is still open there, ending one, and the
//! sessions a grid lists.
//!
//! On a grid a browser outlives the agent that drove it: SIGKILLing a worker kills nothing on
//! the node. A journaled WebDriver session id is how the harness and the next worker find
//! such an orphan, and the endpoint's own API is how it is ended and *proven* gone: the
//! endpoint answers "invalid session id" for it and, on a grid, `/status` no longer lists it.

use std::time::{Duration, Instant};

/// What a remote endpoint says about one session.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum SessionState {
    /// The endpoint answers commands for it, or a grid lists it in a slot.
    Live,
    /// The endpoint answers "invalid session id" and no grid slot lists it.
    Gone,
    /// The endpoint could not be asked (unreachable, an unexpected answer): neither live nor
    /// gone is proven.
    Unknown(String),
}

/// A WebDriver endpoint reached over HTTP.
#[derive(Clone, Debug)]
pub(crate) struct RemoteEndpoint {
    url: String,
    client: reqwest::Client,
}

/// How long one request to the endpoint may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

impl RemoteEndpoint {
    /// The endpoint at `url` (`http://127.0.0.1:4444`, with or without a trailing `/`).
    pub(crate) fn new(url: &str) -> RemoteEndpoint {
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .no_proxy()
            .build()
            .unwrap_or_default();
        RemoteEndpoint {
            url: url.trim_end_matches('/').to_owned(),
            client,
        }
    }

    /// Whether the endpoint runs on this machine (its host is loopback): then its browsers
    /// are processes the harness can see and kill, and its profiles are this machine's.
    pub(crate) fn is_on_this_host(&self) -> bool {
        is_loopback_url(&self.url)
    }

    /// The session ids a Selenium Grid's `/status` lists in its nodes' slots; `None` when the
    /// endpoint is not a grid (no `nodes` in its status) or cannot be read.
    pub(crate) async fn grid_sessions(&self) -> Option<Vec<String>> {
        let status = self.get_json("/status").await.ok()?;
        let nodes = status["value"]["nodes"].as_array()?;
        Some(
            nodes
                .iter()
                .flat_map(|n| n["slots"].as_array().cloned().unwrap_or_default())
                .filter_map(|slot| slot["session"]["sessionId"].as_str().map(str::to_owned))
                .collect(),
        )
    }

    /// What the endpoint says about session `id`. A read-only command (`GET /url`) asks the
    /// session itself; on a grid, its `/status` must agree that it is gone.
    pub(crate) async fn session_state(&self, id: &str) -> SessionState {
        let response = self
            .client
            .get(format!("{}/session/{id}/url", self.url))
            .send()
            .await;
        let by_command = match response {
            Ok(r) if r.status().is_success() => return SessionState::Live,
            Ok(r) => {
                let code = r.status().as_u16();
                let body: serde_json::Value = r
                    .bytes()
                    .await
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .unwrap_or_default();
                match body["value"]["error"].as_str() {
                    Some("invalid session id") => SessionState::Gone,
                    // A live session whose command failed for another reason (an alert, a
                    // dead tab) still holds its browser.
                    Some(other) if code != 404 => {
                        return SessionState::Unknown(format!("the endpoint answered {other}"));
                    }
                    _ => SessionState::Unknown(format!("the endpoint answered HTTP {code}")),
                }
            }
            Err(e) => {
                return SessionState::Unknown(format!(
                    "the endpoint could not be reached ({})",
                    error_kind(&e)
                ));
            }
        };
        match self.grid_sessions().await {
            Some(listed) if listed.iter().any(|s| s == id) => SessionState::Live,
            _ => by_command,
        }
    }

    /// Whether session `id` answers a command (`GET /session/{id}/url` succeeds): it is live
    /// and holds its browser, whatever a grid's slots say.
    pub(crate) async fn answers_commands(&self, id: &str) -> bool {
        self.client
            .get(format!("{}/session/{id}/url", self.url))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    }

    /// Ends session `id` (`DELETE /session/{id}`), then waits until the endpoint proves it
    /// gone ([`SessionState::Gone`]) or `within` passes. Ending a session that is already
    /// gone is not an error. Returns the last state seen.
    pub(crate) async fn end_session(&self, id: &str, within: Duration) -> SessionState {
        let _ = self
            .client
            .delete(format!("{}/session/{id}", self.url))
            .send()
            .await;
        self.wait_gone(id, within).await
    }

    /// Waits until the endpoint proves session `id` gone, or `within` passes.
    pub(crate) async fn wait_gone(&self, id: &str, within: Duration) -> SessionState {
        let deadline = Instant::now() + within;
        let mut backoff = Duration::from_millis(10);
        loop {
            let state = self.session_state(id).await;
            if state == SessionState::Gone || Instant::now() >= deadline {
                return state;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(250));
        }
    }

    async fn get_json(&self, path: &str) -> Result<serde_json::Value, String> {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .map_err(|e| error_kind(&e))?;
        let bytes = response.bytes().await.map_err(|e| error_kind(&e))?;
        serde_json::from_slice(&bytes).map_err(|_| "not JSON".to_owned())
    }
}

/// Whether `url`'s host is loopback (`127.0.0.0/8`, `::1`, `localhost`).
pub(crate) fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The WebDriver endpoint of `BROWSER_FAULT_WEBDRIVER_URL`, when set and not empty.
pub(crate) fn endpoint_from_env() -> Option<String> {
    std::env::var(super::WEBDRIVER_URL_ENV)
        .ok()
        .filter(|u| !u.trim().is_empty())
}

fn error_kind(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "connection refused or unreachable".to_owned()
    } else {
        "request failed".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_a_loopback_endpoint_from_another_host() {
        assert!(is_loopback_url("http://127.0.0.1:4444"));
        assert!(is_loopback_url("http://localhost:4444/wd/hub"));
        assert!(is_loopback_url("http://[::1]:4444/"));
        assert!(is_loopback_url("http://user:pw@127.0.0.2:1"));
        assert!(!is_loopback_url("http://grid.internal:4444"));
        assert!(!is_loopback_url("http://10.0.0.5:4444"));
    }
}
