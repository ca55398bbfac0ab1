//! What the proxy reads of every request for the trial's secrets: where each one may go,
//! and the findings, which name the kind of secret and where it was, never its value.
//!
//! The rules, for a request to the site's own origin:
//! - a password may travel only in the body of a sign-in request
//!   ([`Site::is_sign_in_request`](crate::site::Site::is_sign_in_request));
//! - a cookie's value, or a secret the suite named, may travel in a header (its Cookie
//!   header, an `X-CSRF-Token` that repeats a cookie), never in the URL or a body;
//! - nothing may travel in the URL (path or query string): it lands in the history, server
//!   logs and the next request's `Referer`.
//!
//! To any other origin, no secret may travel at all, the Cookie header included.
//!
//! A secret is looked for as it is, percent-encoded and form-encoded, ignoring ASCII case.
//! Bodies are read as they stream through, never kept. What goes inside an intercepted
//! `https` connection is read like plain requests (a WebSocket handshake's head included, not
//! its frames); an opaque tunnel (`CONNECT` to an undeclared loopback `https` or WebSocket
//! target) is not read.

use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, SizeHint};
use hyper::header::{self, HeaderMap};

/// The shortest cookie value looked for: shorter ones (`1`, `yes`, a consent flag) are
/// ordinary words, not secrets.
pub(crate) const MIN_COOKIE_LEN: usize = 8;
/// The shortest password looked for: a shorter one cannot be told apart from a word.
pub(crate) const MIN_PASSWORD_LEN: usize = 6;

/// What kind of secret a finding names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SecretKind {
    /// An account's password.
    Password,
    /// A secret the suite named ([`SiteSpec::with_secrets`](crate::site::SiteSpec::with_secrets)).
    Named,
    /// The value of a cookie the site set or a browser sent.
    Cookie,
}

impl SecretKind {
    fn phrase(self) -> &'static str {
        match self {
            SecretKind::Password => "an account's password",
            SecretKind::Named => "a secret the suite named",
            SecretKind::Cookie => "a cookie's value",
        }
    }
}

/// Decides whether a request (method, path without query) is a sign-in.
pub type SignInPredicate = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// The secrets to look for, where they may go, and what was found.
pub(super) struct SecretWatch {
    /// The site's own origin, as `host:port`.
    origin: String,
    is_sign_in: SignInPredicate,
    needles: Mutex<Vec<Needle>>,
    findings: Mutex<BTreeSet<String>>,
}

/// One secret, in the forms it may take on the wire, lowercased.
#[derive(Clone)]
struct Needle {
    kind: SecretKind,
    forms: Vec<Vec<u8>>,
}

impl Needle {
    fn new(kind: SecretKind, value: &str) -> Needle {
        let raw = value.as_bytes().to_ascii_lowercase();
        let mut forms = vec![raw];
        for form in [percent_encoded(value, false), percent_encoded(value, true)] {
            let form = form.to_ascii_lowercase();
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
        Needle { kind, forms }
    }

    fn longest(&self) -> usize {
        self.forms.iter().map(Vec::len).max().unwrap_or(0)
    }

    fn found_in(&self, haystack_lower: &[u8]) -> bool {
        self.forms.iter().any(|f| contains(haystack_lower, f))
    }
}

/// Every byte but the unreserved ones as `%XX`; in form encoding, a space as `+`.
fn percent_encoded(value: &str, form: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() * 3);
    for &b in value.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b),
            b' ' if form => out.push(b'+'),
            _ => out.extend_from_slice(format!("%{b:02X}").as_bytes()),
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// What a request may carry where, decided once its head is read.
pub(super) struct RequestScan {
    needles: Vec<Needle>,
    /// `METHOD /path` (no query), or `METHOD to another origin` for a foreign target.
    label: String,
    /// Whether a password may be in the body.
    body_may_hold_password: bool,
}

impl SecretWatch {
    pub(super) fn new(origin: String, is_sign_in: SignInPredicate) -> SecretWatch {
        SecretWatch {
            origin,
            is_sign_in,
            needles: Mutex::new(Vec::new()),
            findings: Mutex::new(BTreeSet::new()),
        }
    }

    /// Looks for `value` from now on, if it is long enough to be told from a word.
    pub(super) fn add(&self, kind: SecretKind, value: &str) {
        let min = match kind {
            SecretKind::Cookie => MIN_COOKIE_LEN,
            SecretKind::Password | SecretKind::Named => MIN_PASSWORD_LEN,
        };
        if value.len() < min {
            return;
        }
        let mut needles = lock(&self.needles);
        let lower = value.as_bytes().to_ascii_lowercase();
        if needles.iter().any(|n| n.forms[0] == lower) {
            return;
        }
        needles.push(Needle::new(kind, value));
    }

    /// What was found so far, sorted, each naming the kind and where.
    pub(super) fn findings(&self) -> Vec<String> {
        lock(&self.findings).iter().cloned().collect()
    }

    fn found(&self, kind: SecretKind, place: &str) {
        lock(&self.findings).insert(format!("{} in {place}", kind.phrase()));
    }

    /// Reads a request's target and headers; returns what its body must be read for.
    /// `authority` is the target's `host:port`, `path_and_query` its request target.
    pub(super) fn scan_head(
        &self,
        method: &str,
        authority: &str,
        path: &str,
        path_and_query: &str,
        headers: &HeaderMap,
    ) -> RequestScan {
        let own_origin = authority.eq_ignore_ascii_case(&self.origin);
        // The values of the cookies it sends are secrets from now on (set by a script,
        // they were never in a Set-Cookie).
        if own_origin {
            for value in headers.get_all(header::COOKIE) {
                for pair in value.as_bytes().split(|b| *b == b';') {
                    if let Some((_, v)) = split_pair(pair) {
                        self.add(SecretKind::Cookie, v);
                    }
                }
            }
        }
        let needles = lock(&self.needles).clone();
        let label = if own_origin {
            format!("{method} {}", path_label(path, &needles))
        } else {
            let host = authority.as_bytes().to_ascii_lowercase();
            let mut host_label = authority.to_owned();
            for n in needles.iter().filter(|n| n.found_in(&host)) {
                self.found(n.kind, &format!("the host name of a {method} request"));
                host_label = "a host name that holds a secret".to_owned();
            }
            format!("a {method} request to another origin ({host_label})")
        };
        let target = path_and_query.as_bytes().to_ascii_lowercase();
        let (path_part, query_part) = match target.iter().position(|b| *b == b'?') {
            Some(i) => target.split_at(i),
            None => (&target[..], &b""[..]),
        };
        for n in &needles {
            if n.found_in(query_part) {
                self.found(n.kind, &format!("the query string of {label}"));
            }
            if n.found_in(path_part) {
                self.found(n.kind, &format!("the path of {label}"));
            }
        }
        for (name, value) in headers {
            let value = value.as_bytes().to_ascii_lowercase();
            for n in &needles {
                let allowed = own_origin && n.kind != SecretKind::Password;
                if !allowed && n.found_in(&value) {
                    self.found(n.kind, &format!("the {name} header of {label}"));
                }
            }
        }
        RequestScan {
            needles,
            body_may_hold_password: own_origin && (self.is_sign_in)(method, path),
            label,
        }
    }

    /// Reads what the site stored of an effect (its payload): every secret there is a
    /// finding, for it has left the browser for good.
    pub(super) fn scan_stored(&self, place: &str, text: &str) {
        let lower = text.as_bytes().to_ascii_lowercase();
        for n in lock(&self.needles).iter() {
            if n.found_in(&lower) {
                self.found(n.kind, place);
            }
        }
    }

    /// Reads a whole chunk of a body (with the tail of the previous one before it).
    fn scan_body(&self, scan: &RequestScan, window: &[u8]) {
        let lower = window.to_ascii_lowercase();
        for n in &scan.needles {
            let allowed = match n.kind {
                SecretKind::Password => scan.body_may_hold_password,
                SecretKind::Cookie | SecretKind::Named => false,
            };
            if !allowed && n.found_in(&lower) {
                self.found(n.kind, &format!("the body of {}", scan.label));
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A cookie pair's name and value (unquoted), if it has one.
pub(super) fn split_pair(pair: &[u8]) -> Option<(&[u8], &str)> {
    let pair = pair.trim_ascii();
    let eq = pair.iter().position(|b| *b == b'=')?;
    let value = std::str::from_utf8(&pair[eq + 1..]).ok()?;
    Some((&pair[..eq], value.trim_matches('"')))
}

/// The path, unless a secret is in it (then only that it is a path).
fn path_label(path: &str, needles: &[Needle]) -> String {
    let lower = path.as_bytes().to_ascii_lowercase();
    if needles.iter().any(|n| n.found_in(&lower)) {
        "<a path that holds a secret>".to_owned()
    } else {
        path.to_owned()
    }
}

/// A request body read as it streams to the site.
pub(super) struct ScannedBody<B> {
    inner: B,
    watch: Arc<SecretWatch>,
    scan: RequestScan,
    /// The last bytes of the previous chunk, so a secret split across chunks is found.
    tail: Vec<u8>,
    keep: usize,
}

impl<B> ScannedBody<B> {
    pub(super) fn new(inner: B, watch: Arc<SecretWatch>, scan: RequestScan) -> Self {
        let keep = scan
            .needles
            .iter()
            .map(Needle::longest)
            .max()
            .unwrap_or(1)
            .saturating_sub(1);
        ScannedBody {
            inner,
            watch,
            scan,
            tail: Vec::new(),
            keep,
        }
    }
}

impl<B> ScannedBody<B> {
    /// Reads one chunk, after the tail of the one before it.
    fn read(&mut self, data: &[u8]) {
        if self.scan.needles.is_empty() {
            return;
        }
        let mut window = std::mem::take(&mut self.tail);
        window.extend_from_slice(data);
        self.watch.scan_body(&self.scan, &window);
        let from = window.len().saturating_sub(self.keep);
        self.tail = window.split_off(from);
    }
}

impl<B> Body for ScannedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            this.read(data);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn watch() -> SecretWatch {
        let w = SecretWatch::new(
            "127.0.0.1:8080".to_owned(),
            Arc::new(|m: &str, p: &str| m == "POST" && p == "/login"),
        );
        w.add(SecretKind::Password, "pw-CANARY 4f1c");
        w.add(SecretKind::Cookie, "sess-0123456789");
        w
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn a_password_belongs_only_in_a_sign_in_body_and_a_cookie_only_in_headers() {
        let w = watch();
        let login = w.scan_head("POST", "127.0.0.1:8080", "/login", "/login", &headers(&[]));
        w.scan_body(&login, b"username=alice&password=pw-CANARY+4f1c");
        let h = headers(&[
            ("cookie", "sid=sess-0123456789"),
            ("x-csrf", "sess-0123456789"),
        ]);
        let _ = w.scan_head("GET", "127.0.0.1:8080", "/threads/1", "/threads/1", &h);
        assert_eq!(w.findings(), Vec::<String>::new());

        let send = w.scan_head(
            "POST",
            "127.0.0.1:8080",
            "/threads/1/messages",
            "/threads/1/messages",
            &headers(&[]),
        );
        w.scan_body(&send, b"text=my+PW-canary%204F1C");
        let _ = w.scan_head(
            "GET",
            "127.0.0.1:8080",
            "/search",
            "/search?q=sess-0123456789",
            &headers(&[("referer", "http://127.0.0.1:8080/?p=pw-CANARY%204f1c")]),
        );
        let _ = w.scan_head(
            "GET",
            "evil.test:80",
            "/",
            "/",
            &headers(&[("cookie", "sid=sess-0123456789")]),
        );
        let found = w.findings();
        assert_eq!(
            found,
            [
                "a cookie's value in the cookie header of a GET request to another origin (evil.test:80)",
                "a cookie's value in the query string of GET /search",
                "an account's password in the body of POST /threads/1/messages",
                "an account's password in the referer header of GET /search",
            ]
        );
        assert!(
            found
                .iter()
                .all(|f| !f.to_lowercase().contains("4f1c") && !f.contains("0123456789"))
        );
    }

    #[test]
    fn a_secret_split_across_chunks_is_found_and_a_short_one_is_not_looked_for() {
        let w = Arc::new(watch());
        w.add(SecretKind::Cookie, "yes");
        let scan = w.scan_head("POST", "127.0.0.1:8080", "/m", "/m", &headers(&[]));
        let mut body = ScannedBody::new((), w.clone(), scan);
        body.read(b"yes, text=aaa sess-01234");
        assert!(w.findings().is_empty());
        body.read(b"56789 bbb");
        assert_eq!(w.findings(), ["a cookie's value in the body of POST /m"]);
    }

    #[test]
    fn every_secret_in_what_the_site_stored_is_found_and_named_by_place() {
        let w = watch();
        // Stored text is what the site decoded: no sign-in excuses it.
        w.scan_stored("the payload the site stored for effect 3", "hello");
        assert!(w.findings().is_empty());
        w.scan_stored(
            "the payload the site stored for effect 3",
            "Sign in with PW-canary 4F1C please",
        );
        let found = w.findings();
        assert_eq!(
            found,
            ["an account's password in the payload the site stored for effect 3"]
        );
        assert!(!found[0].to_ascii_lowercase().contains("canary"));
    }
}
