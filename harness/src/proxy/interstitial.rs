//! The proxy's own interstitials: a sign-in ("confirm it's you") or consent page that stands
//! before every page of any site behind the proxy, for the hazards a user's site cannot show
//! itself ([`FaultProxy::show_interstitial`](super::FaultProxy::show_interstitial)).
//!
//! While one stands, a browser that has not gone through it gets the interstitial instead of
//! any page it navigates to (a `GET` whose `Sec-Fetch-Dest` is `document`, or that asks for
//! `text/html` where the browser sends no fetch metadata), and a `403` with the same page for
//! any request that could change something (every method but `GET`, `HEAD`, `OPTIONS`): that
//! request is never forwarded, so nothing commits. Reads that are not navigations (a `fetch`
//! of a page or an API) pass. The page's button posts to [`CONTINUE_PATH`] on the same
//! origin: the proxy answers with a cookie that clears the interstitial for that browser (the
//! cookie is never forwarded to the site) and a redirect back to the page that was asked
//! for. The page carries the bundled site's markers: `<body data-page="login-interstitial">`
//! with `button#continue`, or `<body data-page="consent">` with `button#accept-consent`,
//! and `<meta name="browser-fault" content="interstitial">`.

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, StatusCode};

/// Which interstitial the proxy shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Interstitial {
    /// "Confirm it's you": the site asks the signed-in user to sign in again.
    SignIn,
    /// The site asks for consent (cookies, terms) before it shows anything.
    Consent,
}

/// Where the interstitial's button posts, on the origin of the page it stood before.
pub const CONTINUE_PATH: &str = "/.well-known/browser-fault/continue";

/// The cookie that clears the interstitial for one browser; stripped from every request the
/// proxy forwards.
pub(super) const CLEARED_COOKIE: &str = "browser-fault-interstitial";

/// The interstitial that stands, and what it did.
#[derive(Debug)]
pub(super) struct Gate {
    pub(super) kind: Interstitial,
    /// The value of [`CLEARED_COOKIE`] that clears this gate (a new gate asks again).
    pub(super) token: String,
    /// How many times it was shown (a navigation or a refused request), by any browser.
    pub(super) shown: u64,
}

impl Gate {
    pub(super) fn new(kind: Interstitial) -> Gate {
        let token: u128 = rand::random();
        Gate {
            kind,
            token: format!("{token:032x}"),
            shown: 0,
        }
    }

    /// Whether the request's browser went through this gate already.
    pub(super) fn cleared_by(&self, headers: &HeaderMap) -> bool {
        let wanted = format!("{CLEARED_COOKIE}={}", self.token);
        headers
            .get_all(header::COOKIE)
            .iter()
            .flat_map(|v| v.as_bytes().split(|b| *b == b';'))
            .any(|pair| pair.trim_ascii() == wanted.as_bytes())
    }
}

/// What the gate does with a request of a browser that did not go through it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Gated {
    /// Show the interstitial instead of the page (`200`).
    Page,
    /// Refuse it with the interstitial (`403`), never forwarded.
    Refused,
    /// Let it pass.
    Pass,
}

/// What a standing gate does with `method` and `headers`.
pub(super) fn gated(method: &Method, headers: &HeaderMap) -> Gated {
    if !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Gated::Refused;
    }
    if *method != Method::GET {
        return Gated::Pass;
    }
    let navigation = match headers.get("sec-fetch-dest") {
        Some(dest) => dest.as_bytes() == b"document",
        None => headers
            .get(header::ACCEPT)
            .is_some_and(|a| a.as_bytes().starts_with(b"text/html")),
    };
    if navigation { Gated::Page } else { Gated::Pass }
}

/// The interstitial's page, its button leading back to `next` (a path on the same origin).
pub(super) fn page(kind: Interstitial, next: &str) -> String {
    let (title, data_page, text, button_id, button) = match kind {
        Interstitial::SignIn => (
            "Confirm it's you",
            "login-interstitial",
            "For your security, confirm it's you before you go on.",
            "continue",
            "Continue",
        ),
        Interstitial::Consent => (
            "Before you continue",
            "consent",
            "This site uses cookies. Accept them to go on.",
            "accept-consent",
            "Accept",
        ),
    };
    let next = hex(next.as_bytes());
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta name=\"browser-fault\" \
         content=\"interstitial\"><title>{title}</title></head>\n<body data-page=\"{data_page}\">\
         <main><h1>{title}</h1><p>{text}</p>\n<form method=\"post\" \
         action=\"{CONTINUE_PATH}?next={next}\"><button id=\"{button_id}\" \
         type=\"submit\">{button}</button></form></main></body></html>\n"
    )
}

/// Where the button of a page made by [`page`] leads: the `next` of `query`, when it is a
/// path on the same origin; `/` otherwise.
pub(super) fn next_of(query: Option<&str>) -> String {
    query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("next="))
        .and_then(unhex)
        .filter(|p| p.starts_with('/') && !p.starts_with("//") && !p.contains('\\'))
        .unwrap_or_else(|| "/".to_owned())
}

/// The status and headers of an answer that shows the interstitial.
pub(super) fn status_of(gated: &Gated) -> StatusCode {
    match gated {
        Gated::Refused => StatusCode::FORBIDDEN,
        _ => StatusCode::OK,
    }
}

/// The `Set-Cookie` that clears `gate` for the browser that went through it.
pub(super) fn clearing_cookie(gate: &Gate) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{CLEARED_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax",
        gate.token
    ))
    .ok()
}

/// Whether a `Cookie` pair is the proxy's own, never forwarded.
pub(super) fn is_own_cookie(pair: &[u8]) -> bool {
    pair.strip_prefix(CLEARED_COOKIE.as_bytes())
        .is_some_and(|rest| rest.first() == Some(&b'='))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_static(value));
        }
        h
    }

    #[test]
    fn a_navigation_gets_the_page_a_change_is_refused_and_a_read_passes() {
        let nav = headers(&[("sec-fetch-dest", "document"), ("accept", "text/html")]);
        assert_eq!(gated(&Method::GET, &nav), Gated::Page);
        let fetch = headers(&[("sec-fetch-dest", "empty"), ("accept", "text/html")]);
        assert_eq!(gated(&Method::GET, &fetch), Gated::Pass);
        // No fetch metadata (a plain-http origin that is not loopback): the Accept decides.
        assert_eq!(
            gated(&Method::GET, &headers(&[("accept", "text/html,*/*")])),
            Gated::Page
        );
        assert_eq!(
            gated(&Method::GET, &headers(&[("accept", "application/json")])),
            Gated::Pass
        );
        assert_eq!(gated(&Method::POST, &fetch), Gated::Refused);
        assert_eq!(gated(&Method::DELETE, &HeaderMap::new()), Gated::Refused);
        assert_eq!(gated(&Method::HEAD, &nav), Gated::Pass);
    }

    #[test]
    fn the_button_leads_back_to_the_page_on_the_same_origin_only() {
        let html = page(Interstitial::SignIn, "/issue?@template=item&x=1");
        let query = html
            .split(&format!("{CONTINUE_PATH}?"))
            .nth(1)
            .and_then(|rest| rest.split('"').next());
        assert_eq!(next_of(query), "/issue?@template=item&x=1");
        assert!(html.contains("data-page=\"login-interstitial\""));
        assert!(html.contains("button id=\"continue\""));
        let consent = page(Interstitial::Consent, "/");
        assert!(consent.contains("data-page=\"consent\""));
        assert!(consent.contains("button id=\"accept-consent\""));
        for elsewhere in ["//evil.test/x", "https://evil.test/", "/\\evil"] {
            let query = format!("next={}", hex(elsewhere.as_bytes()));
            assert_eq!(next_of(Some(&query)), "/", "{elsewhere}");
        }
        assert_eq!(next_of(Some("next=zz")), "/");
        assert_eq!(next_of(None), "/");
    }

    #[test]
    fn a_gate_is_cleared_by_its_own_cookie_only() {
        let gate = Gate::new(Interstitial::Consent);
        let mut h = HeaderMap::new();
        assert!(!gate.cleared_by(&h));
        h.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("sid=1; {CLEARED_COOKIE}={}", gate.token)).unwrap(),
        );
        assert!(gate.cleared_by(&h));
        assert!(!Gate::new(Interstitial::Consent).cleared_by(&h));
        assert!(is_own_cookie(format!("{CLEARED_COOKIE}=x").as_bytes()));
        assert!(!is_own_cookie(b"browser-fault-interstitialx=1"));
        assert!(!is_own_cookie(b"sid=1"));
    }
}
