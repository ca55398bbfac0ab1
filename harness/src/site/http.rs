//! A small async HTTP client for site adapters (ledgers, resets), so a user's adapter needs
//! no HTTP dependency of its own.

use std::time::Duration;

use serde::de::DeserializeOwned;

use super::SiteError;
use crate::worker::Secret;

/// An async HTTP client for a [`Site`](super::Site)'s harness-side calls. Cheap to clone;
/// connections are kept alive. Every call has a 10 s limit.
#[derive(Clone, Debug)]
pub struct Http {
    client: reqwest::Client,
}

impl Default for Http {
    fn default() -> Self {
        Http::new()
    }
}

/// A URL without its query string or credentials, for messages: a token in a URL is a
/// secret.
fn shown(url: &str) -> String {
    let no_query = url.split(['?', '#']).next().unwrap_or(url);
    match no_query.split_once("://") {
        Some((scheme, rest)) => {
            let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            format!("{scheme}://{rest}")
        }
        None => no_query.to_owned(),
    }
}

impl Http {
    /// A client that never uses a proxy from the environment.
    pub fn new() -> Self {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Http { client }
    }

    /// `GET url`, parsed as JSON into `T`.
    pub async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, SiteError> {
        self.send_json(url, self.client.get(url)).await
    }

    /// `GET url` with HTTP basic authentication, parsed as JSON into `T`.
    pub async fn get_json_as<T: DeserializeOwned>(
        &self,
        url: &str,
        user: &str,
        password: &Secret,
    ) -> Result<T, SiteError> {
        let request = self
            .client
            .get(url)
            .basic_auth(user, Some(password.expose()));
        self.send_json(url, request).await
    }

    /// `POST url` with a form body and, when given, HTTP basic authentication; returns the
    /// status. For resets and set-up.
    pub async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        auth: Option<(&str, &Secret)>,
    ) -> Result<u16, SiteError> {
        let body: String = form
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let mut request = self
            .client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some((user, password)) = auth {
            request = request.basic_auth(user, Some(password.expose()));
        }
        let response = request.send().await.map_err(|e| SiteError::Unreachable {
            url: shown(url),
            source: Box::new(e.without_url()),
        })?;
        Ok(response.status().as_u16())
    }

    async fn send_json<T: DeserializeOwned>(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, SiteError> {
        let response = request
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| SiteError::Unreachable {
                url: shown(url),
                source: Box::new(e.without_url()),
            })?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(SiteError::Status {
                url: shown(url),
                status,
            });
        }
        let bytes = response.bytes().await.map_err(|e| SiteError::Unreachable {
            url: shown(url),
            source: Box::new(e.without_url()),
        })?;
        serde_json::from_slice(&bytes).map_err(|e| SiteError::Reply {
            url: shown(url),
            why: e.to_string(),
        })
    }
}

/// Percent-encodes a form value (`application/x-www-form-urlencoded`).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{encode, shown};

    #[test]
    fn a_shown_url_has_no_query_and_no_credentials() {
        assert_eq!(
            shown("http://127.0.0.1:9/__ledger?token=s3cret"),
            "http://127.0.0.1:9/__ledger"
        );
        assert_eq!(shown("http://admin:pw@host/x#frag"), "http://host/x");
    }

    #[test]
    fn form_values_are_percent_encoded() {
        assert_eq!(encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
    }
}
