//! A small async HTTP client for site adapters (ledgers, resets), so a user's adapter needs
//! no HTTP dependency of its own.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::CertificateDer;
use serde::de::DeserializeOwned;

use super::SiteError;
use crate::tls::Resolver;
use crate::worker::Secret;

/// An async HTTP client for a [`Site`](super::Site)'s harness-side calls. Cheap to clone;
/// connections are kept alive. Every call has a 10 s limit. It speaks `http` and `https`
/// (HTTP/1.1), trusting the system's roots for a site's certificate ([`Http::trust_root_pem`]
/// adds more), never uses a proxy from the environment, and follows no redirect.
#[derive(Clone)]
pub struct Http {
    client: Client<HttpsConnector<HttpConnector<Resolver>>, Full<Bytes>>,
    /// Sent with every request ([`Http::header`]); values are marked sensitive.
    headers: HeaderMap,
    /// Roots trusted beside the system's ([`Http::trust_root_pem`]).
    roots: Vec<CertificateDer<'static>>,
    /// Host names resolved to these addresses ([`Http::resolve`]).
    names: HashMap<String, IpAddr>,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("headers", &self.headers)
            .field("roots", &self.roots.len())
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
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

/// How long one call may take, its answer's body included.
const CALL_LIMIT: Duration = Duration::from_secs(10);

fn invalid_input(why: String) -> SiteError {
    SiteError::adapter(std::io::Error::new(std::io::ErrorKind::InvalidInput, why))
}

impl Http {
    /// A client trusting the system's roots.
    pub fn new() -> Self {
        // The system's roots alone cannot be refused.
        Http::built(Vec::new(), HashMap::new()).unwrap_or_else(|_| unreachable!())
    }

    fn built(
        roots: Vec<CertificateDer<'static>>,
        names: HashMap<String, IpAddr>,
    ) -> Result<Self, SiteError> {
        let connector = crate::tls::connector(&roots, names.clone()).map_err(invalid_input)?;
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(Http {
            client,
            headers: HeaderMap::new(),
            roots,
            names,
        })
    }

    fn rebuilt(self) -> Result<Self, SiteError> {
        let headers = self.headers;
        let mut http = Http::built(self.roots, self.names)?;
        http.headers = headers;
        Ok(http)
    }

    /// The same client, trusting the certificates of `pem` (`-----BEGIN CERTIFICATE-----`
    /// blocks) as roots beside the system's: the authority of a staging site's own, or of a
    /// test's. Text that holds no certificate is refused.
    ///
    /// ```
    /// # use browser_fault::site::Http;
    /// assert!(Http::new().trust_root_pem("not a certificate").is_err());
    /// ```
    pub fn trust_root_pem(mut self, pem: &str) -> Result<Self, SiteError> {
        let certs = crate::tls::certificates_from_pem(pem).map_err(invalid_input)?;
        self.roots.extend(certs);
        self.rebuilt()
    }

    /// The same client, resolving `host` to `ip` instead of asking the system (a site on
    /// loopback under its real name, as [`SiteSpec::resolve`](super::SiteSpec::resolve)
    /// has the browsers' proxy do). The URL's port is used.
    pub fn resolve(mut self, host: &str, ip: IpAddr) -> Self {
        self.names.insert(host.to_ascii_lowercase(), ip);
        let connector = crate::tls::connector(&self.roots, self.names.clone())
            .expect("roots already accepted are accepted again");
        self.client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        self
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
        let invalid =
            |what: &str| invalid_input(format!("the header `{name}` has an invalid {what}"));
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid("name"))?;
        let mut value = HeaderValue::from_str(value.expose()).map_err(|_| invalid("value"))?;
        value.set_sensitive(true);
        self.headers.insert(header, value);
        Ok(self)
    }

    /// `GET url`, parsed as JSON into `T`.
    pub async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, SiteError> {
        self.json(url, None).await
    }

    /// `GET url` with HTTP basic authentication, parsed as JSON into `T`.
    pub async fn get_json_as<T: DeserializeOwned>(
        &self,
        url: &str,
        user: &str,
        password: &Secret,
    ) -> Result<T, SiteError> {
        self.json(url, Some((user, password))).await
    }

    /// `POST url` with a form body and, when given, HTTP basic authentication; returns the
    /// status of the site's answer (a redirect is not followed). For resets and set-up.
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
        let mut request = self.request(Method::POST, url, auth, Bytes::from(body))?;
        request.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        let (status, _) = self.send(url, request).await?;
        Ok(status)
    }

    async fn json<T: DeserializeOwned>(
        &self,
        url: &str,
        auth: Option<(&str, &Secret)>,
    ) -> Result<T, SiteError> {
        let mut request = self.request(Method::GET, url, auth, Bytes::new())?;
        request
            .headers_mut()
            .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let (status, bytes) = self.send(url, request).await?;
        if !(200..300).contains(&status) {
            return Err(SiteError::Status {
                url: shown(url),
                status,
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| SiteError::Reply {
            url: shown(url),
            why: e.to_string(),
        })
    }

    fn request(
        &self,
        method: Method,
        url: &str,
        auth: Option<(&str, &Secret)>,
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, SiteError> {
        let uri: hyper::Uri = url.parse().map_err(|_| SiteError::Reply {
            url: shown(url),
            why: "not a URL".to_owned(),
        })?;
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.headers_mut() = self.headers.clone();
        if let Some((user, password)) = auth {
            let token = base64::engine::general_purpose::STANDARD
                .encode(format!("{user}:{}", password.expose()));
            let mut value = HeaderValue::from_str(&format!("Basic {token}"))
                .map_err(|_| invalid_input("the user name cannot go in a header".to_owned()))?;
            value.set_sensitive(true);
            request.headers_mut().insert(header::AUTHORIZATION, value);
        }
        Ok(request)
    }

    /// Sends `request` and reads its answer whole, within [`CALL_LIMIT`].
    async fn send(
        &self,
        url: &str,
        request: Request<Full<Bytes>>,
    ) -> Result<(u16, Bytes), SiteError> {
        let unreachable =
            |source: Box<dyn std::error::Error + Send + Sync>| SiteError::Unreachable {
                url: shown(url),
                source,
            };
        let call = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| unreachable(Box::new(e)))?;
            let status = response.status().as_u16();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| unreachable(Box::new(e)))?;
            Ok((status, body.to_bytes()))
        };
        match tokio::time::timeout(CALL_LIMIT, call).await {
            Ok(answer) => answer,
            Err(_) => Err(unreachable(Box::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no whole answer within {} s", CALL_LIMIT.as_secs()),
            )))),
        }
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
