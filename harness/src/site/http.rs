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
    /// Sent with every request ([`Http::header`]); values are marked sensitive.
    headers: reqwest::header::HeaderMap,
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
        Http {
            client,
            headers: reqwest::header::HeaderMap::new(),
        }
    }

    /// The same client, sending the header `name: value` with every request (an API token,
    /// a tenant header). The value is a [`Secret`]: it never reaches a message or a log.
    /// A name or value HTTP cannot carry is refused ([`SiteError::Adapter`], naming the
    /// header but not its value).
    ///
    /// ```
    /// # use browser_fault::site::Http;
    /// # use browser_fault::worker::Secret;
    /// let http = Http::new()
    ///     .header("x-api-token", &Secret::new("t0ken".to_owned()))
    ///     .expect("a valid header");
    /// ```
    pub fn header(mut self, name: &str, value: &Secret) -> Result<Self, SiteError> {
        let invalid = |what: &str| {
            SiteError::adapter(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("the header `{name}` has an invalid {what}"),
            ))
        };
        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid("name"))?;
        let mut value =
            reqwest::header::HeaderValue::from_str(value.expose()).map_err(|_| invalid("value"))?;
        value.set_sensitive(true);
        self.headers.insert(header, value);
        Ok(self)
    }

    fn get(&self, url: &str) -> reqwest::RequestBuilder {
        self.client.get(url).headers(self.headers.clone())
    }

    /// `GET url`, parsed as JSON into `T`.
    pub async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, SiteError> {
        self.send_json(url, self.get(url)).await
    }

    /// `GET url` with HTTP basic authentication, parsed as JSON into `T`.
    pub async fn get_json_as<T: DeserializeOwned>(
        &self,
        url: &str,
        user: &str,
        password: &Secret,
    ) -> Result<T, SiteError> {
        let request = self.get(url).basic_auth(user, Some(password.expose()));
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
            .headers(self.headers.clone())
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
    fn a_header_is_checked_and_its_value_never_shown() {
        use super::{Http, Secret};
        let secret = Secret::new("t0ken\nx".to_owned());
        let e = Http::new().header("x-api-token", &secret).unwrap_err();
        let shown = crate::error::error_chain(&e);
        assert!(
            shown.contains("`x-api-token` has an invalid value"),
            "{shown}"
        );
        assert!(!shown.contains("t0ken"), "{shown}");
        assert!(
            Http::new()
                .header("bad header", &Secret::new("v".to_owned()))
                .is_err()
        );
        let http = Http::new()
            .header("x-api-token", &Secret::new("t0ken".to_owned()))
            .unwrap();
        assert!(!format!("{http:?}").contains("t0ken"));
    }

    #[test]
    fn a_header_goes_with_every_request() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/api", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = stream.read(&mut buf).unwrap();
                request.extend_from_slice(&buf[..n]);
            }
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
                .unwrap();
            String::from_utf8_lossy(&request).to_ascii_lowercase()
        });
        let http = super::Http::new()
            .header("X-Api-Token", &super::Secret::new("t0ken".to_owned()))
            .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let answer: serde_json::Value = runtime.block_on(http.get_json(&url)).unwrap();
        assert_eq!(answer, serde_json::json!({}));
        let request = server.join().unwrap();
        assert!(request.contains("x-api-token: t0ken"), "{request}");
    }

    #[test]
    fn form_values_are_percent_encoded() {
        assert_eq!(encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
    }
}
