//! The fault proxy against a real upstream (axum on 127.0.0.1) and a real HTTP client
//! (reqwest, configured with the proxy): transparent forwarding, each effect fault, the
//! matcher, cookie expiry, the loopback-only rule, tunnels and shutdown.
//!
//! Every wait is on an event; timeouts are only generous upper bounds.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use browser_fault::_internal::proxy::{
    CONTINUE_PATH, EffectFault, EffectMatcher, FaultProxy, Interstitial, ProxiedRequest, SecretKind,
};
use futures_util::FutureExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// The upper bound of any wait for an event.
const BOUND: Duration = Duration::from_secs(20);

async fn bounded<F: Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(BOUND, f)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// The site under test: records every accepted POST.
#[derive(Clone, Default)]
struct Upstream {
    accepted: Arc<Mutex<Vec<String>>>,
    logins: Arc<AtomicU64>,
    /// `/gated` signals `entered`, then waits for `open` before it accepts.
    entered: Arc<Notify>,
    open: Arc<Notify>,
}

impl Upstream {
    fn accepted(&self) -> Vec<String> {
        self.accepted.lock().unwrap().clone()
    }
}

async fn accept(State(up): State<Upstream>, body: String) -> &'static str {
    up.accepted.lock().unwrap().push(body);
    "done"
}

async fn gated(State(up): State<Upstream>, body: String) -> &'static str {
    up.entered.notify_one();
    up.open.notified().await;
    up.accepted.lock().unwrap().push(body);
    "done"
}

async fn login(State(up): State<Upstream>) -> impl IntoResponse {
    let n = up.logins.fetch_add(1, Ordering::SeqCst) + 1;
    (
        [(
            header::SET_COOKIE,
            format!("session=s{n}; Path=/; HttpOnly"),
        )],
        "signed in",
    )
}

async fn session() -> impl IntoResponse {
    (
        [(header::SET_COOKIE, "sid=sess-4a7be0c19d; Path=/; HttpOnly")],
        "signed in",
    )
}

/// What the site saw of the request's headers.
async fn page(headers: HeaderMap) -> String {
    let get = |name: &str| {
        headers
            .get(name)
            .map_or("-".to_owned(), |v| v.to_str().unwrap().to_owned())
    };
    format!(
        "host={}\ncookie={}\nx-hop={}\nproxy-connection={}\n",
        get("host"),
        get("cookie"),
        get("x-hop"),
        get("proxy-connection")
    )
}

async fn redirect() -> impl IntoResponse {
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, "/page?from=redirect")],
    )
}

async fn upstream() -> (SocketAddr, Upstream) {
    let up = Upstream::default();
    let app = Router::new()
        .route("/effect", post(accept))
        .route("/other", post(accept))
        .route("/gated", post(gated))
        .route("/login", post(login))
        .route("/session", post(session))
        .route("/page", get(page))
        .route("/redirect", get(redirect))
        .with_state(up.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, up)
}

/// A client that sends everything, loopback included, through the proxy.
fn client(proxy: &FaultProxy) -> reqwest::Client {
    reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(proxy.proxy_url()).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .build()
        .unwrap()
}

struct Setup {
    up_addr: SocketAddr,
    up: Upstream,
    proxy: FaultProxy,
    client: reqwest::Client,
}

/// The proxy's answer for a request or response it lost: a 502 (never a closed connection,
/// which Chromium answers by sending the request again).
fn is_lost(result: &reqwest::Result<reqwest::Response>) -> bool {
    result
        .as_ref()
        .is_ok_and(|r| r.status() == reqwest::StatusCode::BAD_GATEWAY)
}

impl Setup {
    async fn new() -> Setup {
        let (up_addr, up) = upstream().await;
        let proxy = FaultProxy::start().unwrap();
        let client = client(&proxy);
        Setup {
            up_addr,
            up,
            proxy,
            client,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.up_addr)
    }

    /// Posts `body` to `path`, in the background.
    fn post(
        &self,
        path: &str,
        body: &'static str,
    ) -> tokio::task::JoinHandle<reqwest::Result<reqwest::Response>> {
        let request = self.client.post(self.url(path)).body(body).send();
        tokio::spawn(request)
    }

    async fn post_now(&self, path: &str, body: &'static str) -> reqwest::Result<reqwest::Response> {
        bounded("post", self.client.post(self.url(path)).body(body).send()).await
    }

    async fn page(&self, cookie: Option<&str>) -> String {
        let mut request = self.client.get(self.url("/page"));
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        let response = bounded("get", request.send()).await.unwrap();
        assert_eq!(response.status(), 200);
        response.text().await.unwrap()
    }
}

fn line<'a>(page: &'a str, key: &str) -> &'a str {
    page.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key} in {page}"))
}

fn entry(
    method: &str,
    path: &str,
    status: Option<u16>,
    fault: Option<&'static str>,
) -> (String, String, Option<u16>, Option<&'static str>) {
    (method.to_owned(), path.to_owned(), status, fault)
}

/// The log without its timings.
fn log(proxy: &FaultProxy) -> Vec<(String, String, Option<u16>, Option<&'static str>)> {
    proxy
        .requests()
        .into_iter()
        .map(|r: ProxiedRequest| (r.method, r.path, r.status, r.fault))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwards_transparently() {
    let s = Setup::new().await;
    let response = bounded(
        "get",
        s.client
            .get(s.url("/page?token=secret"))
            .header(header::HOST, "site.test:8080")
            .header(header::COOKIE, "a=1; b=2")
            .header(header::CONNECTION, "x-hop")
            .header("x-hop", "1")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    assert_eq!(
        line(&body, "host"),
        "site.test:8080",
        "the Host header passes"
    );
    assert_eq!(line(&body, "cookie"), "a=1; b=2");
    assert_eq!(
        line(&body, "x-hop"),
        "-",
        "a header Connection names is hop-by-hop"
    );
    assert_eq!(line(&body, "proxy-connection"), "-");

    let response = bounded("redirect", s.client.get(s.url("/redirect")).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()[header::LOCATION], "/page?from=redirect");

    let response = s.post_now("/login", "").await.unwrap();
    assert_eq!(
        response.headers()[header::SET_COOKIE],
        "session=s1; Path=/; HttpOnly"
    );

    let response = s.post_now("/effect", "body").await.unwrap();
    assert_eq!(response.text().await.unwrap(), "done");
    assert_eq!(s.up.accepted(), ["body"]);

    // Everything went through the proxy; the log holds no query string.
    assert_eq!(
        log(&s.proxy),
        [
            entry("GET", "/page", Some(200), None),
            entry("GET", "/redirect", Some(303), None),
            entry("POST", "/login", Some(200), None),
            entry("POST", "/effect", Some(200), None),
        ]
    );
    let debug = format!("{:?}", s.proxy.requests());
    assert!(
        !debug.contains("secret") && !debug.contains("a=1"),
        "{debug}"
    );
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landed_is_accepted_and_its_response_held() {
    let s = Setup::new().await;
    s.proxy
        .arm(EffectFault::Landed, EffectMatcher::unsafe_methods());
    let post = s.post("/effect", "one");
    bounded("reached", s.proxy.wait_reached()).await;
    assert!(s.proxy.taken());
    assert_eq!(s.up.accepted(), ["one"], "the site processed it");
    assert!(!post.is_finished(), "the response is held");
    assert_eq!(
        log(&s.proxy),
        [entry("POST", "/effect", None, Some("landed"))]
    );

    s.proxy.release_held();
    let result = bounded("post", post).await.unwrap();
    assert!(is_lost(&result), "answered 502: {result:?}");
    assert_eq!(s.up.accepted(), ["one"]);
    assert_eq!(
        log(&s.proxy),
        [entry("POST", "/effect", Some(502), Some("landed"))]
    );
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_is_never_forwarded() {
    let s = Setup::new().await;
    s.proxy
        .arm(EffectFault::Lost, EffectMatcher::unsafe_methods());
    let mut reached = Box::pin(s.proxy.wait_reached());
    assert!(reached.as_mut().now_or_never().is_none());
    let post = s.post("/effect", "one");
    bounded("reached", reached).await;
    assert!(s.proxy.taken());
    assert!(!post.is_finished(), "the request is held");

    s.proxy.release_held();
    let result = bounded("post", post).await.unwrap();
    assert!(is_lost(&result), "answered 502: {result:?}");
    // The proxy is still up and the site never saw the request.
    s.page(None).await;
    assert!(s.up.accepted().is_empty());
    assert_eq!(
        log(&s.proxy),
        [
            entry("POST", "/effect", Some(502), Some("lost")),
            entry("GET", "/page", Some(200), None),
        ]
    );
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_is_answered_502_without_forwarding() {
    let s = Setup::new().await;
    s.proxy
        .arm(EffectFault::Dropped, EffectMatcher::unsafe_methods());
    let result = s.post_now("/effect", "one").await;
    assert!(is_lost(&result), "answered 502: {result:?}");
    bounded("reached", s.proxy.wait_reached()).await;
    s.page(None).await;
    assert!(s.up.accepted().is_empty());
    assert_eq!(
        log(&s.proxy)[0],
        entry("POST", "/effect", Some(502), Some("dropped"))
    );
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn look_alike_is_never_forwarded_and_answered_as_a_success_elsewhere() {
    let s = Setup::new().await;
    s.proxy.arm(
        EffectFault::LookAlike("/issue12?ok=created".to_owned()),
        EffectMatcher::unsafe_methods(),
    );
    let response = s.post_now("/effect", "one").await.unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::SEE_OTHER);
    assert_eq!(
        response.headers()[header::LOCATION],
        "/issue12?ok=created",
        "the browser is sent to the look-alike's page"
    );
    bounded("reached", s.proxy.wait_reached()).await;
    // The next one passes: one request takes the arm.
    s.post_now("/effect", "two").await.unwrap();
    assert_eq!(
        s.up.accepted(),
        vec!["two".to_owned()],
        "the first never landed"
    );
    assert_eq!(
        log(&s.proxy)[0],
        entry("POST", "/effect", Some(303), Some("look_alike"))
    );
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_dropped_is_accepted_and_the_browser_sees_an_error() {
    let s = Setup::new().await;
    s.proxy.arm(
        EffectFault::ResponseDropped,
        EffectMatcher::unsafe_methods(),
    );
    let result = s.post_now("/effect", "one").await;
    assert!(is_lost(&result), "answered 502: {result:?}");
    bounded("reached", s.proxy.wait_reached()).await;
    assert_eq!(s.up.accepted(), ["one"]);
    assert_eq!(
        log(&s.proxy),
        [entry(
            "POST",
            "/effect",
            Some(502),
            Some("response_dropped")
        )]
    );
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_delays_the_response() {
    let s = Setup::new().await;
    let delay = Duration::from_millis(400);
    s.proxy
        .arm(EffectFault::Slow(delay), EffectMatcher::unsafe_methods());
    let start = Instant::now();
    let response = s.post_now("/effect", "one").await.unwrap();
    assert!(start.elapsed() >= delay);
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "done");
    assert_eq!(s.up.accepted(), ["one"]);
    let record = &s.proxy.requests()[0];
    assert_eq!((record.status, record.fault), (Some(200), Some("slow")));
    assert!(record.ms >= 400, "{record:?}");

    // A release sends a delayed response at once.
    s.proxy.arm(
        EffectFault::Slow(Duration::from_secs(3600)),
        EffectMatcher::unsafe_methods(),
    );
    let post = s.post("/effect", "two");
    bounded("reached", s.proxy.wait_reached()).await;
    assert_eq!(s.up.accepted(), ["one", "two"]);
    s.proxy.release_held();
    let response = bounded("post", post).await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_first_match_takes_the_arm() {
    let s = Setup::new().await;
    s.proxy
        .arm(EffectFault::Dropped, EffectMatcher::unsafe_methods());
    assert!(is_lost(&s.post_now("/effect", "one").await));
    assert!(s.proxy.taken());
    let response = s.post_now("/effect", "two").await.unwrap();
    assert_eq!(response.status(), 200);
    let response = s.post_now("/other", "three").await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(s.up.accepted(), ["two", "three"]);
    assert_eq!(
        log(&s.proxy),
        [
            entry("POST", "/effect", Some(502), Some("dropped")),
            entry("POST", "/effect", Some(200), None),
            entry("POST", "/other", Some(200), None),
        ]
    );
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safe_methods_and_excepted_paths_pass_untouched() {
    let s = Setup::new().await;
    s.proxy.arm(
        EffectFault::Dropped,
        EffectMatcher::unsafe_methods().except("/login"),
    );
    s.page(None).await;
    let head = bounded("head", s.client.head(s.url("/page")).send()).await;
    assert_eq!(head.unwrap().status(), 200);
    assert_eq!(s.post_now("/login", "").await.unwrap().status(), 200);
    assert!(!s.proxy.taken());
    assert!(is_lost(&s.post_now("/effect", "one").await));
    assert!(s.proxy.taken());

    // A path prefix narrows it further.
    s.proxy.arm(
        EffectFault::ResponseDropped,
        EffectMatcher::unsafe_methods().path_prefix("/eff"),
    );
    assert_eq!(s.post_now("/other", "two").await.unwrap().status(), 200);
    assert!(!s.proxy.taken());
    assert!(is_lost(&s.post_now("/effect", "three").await));
    assert!(s.proxy.taken());
    assert_eq!(s.up.accepted(), ["two", "three"]);
    assert_eq!(
        log(&s.proxy),
        [
            entry("GET", "/page", Some(200), None),
            entry("HEAD", "/page", Some(200), None),
            entry("POST", "/login", Some(200), None),
            entry("POST", "/effect", Some(502), Some("dropped")),
            entry("POST", "/other", Some(200), None),
            entry("POST", "/effect", Some(502), Some("response_dropped")),
        ]
    );
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disarm_takes_back_an_untaken_arm() {
    let s = Setup::new().await;
    assert!(!s.proxy.disarm(), "nothing armed");
    s.proxy
        .arm(EffectFault::Dropped, EffectMatcher::unsafe_methods());
    assert!(s.proxy.disarm());
    assert!(!s.proxy.disarm());
    assert_eq!(s.post_now("/effect", "one").await.unwrap().status(), 200);
    assert!(!s.proxy.taken());

    s.proxy
        .arm(EffectFault::Dropped, EffectMatcher::unsafe_methods());
    assert!(is_lost(&s.post_now("/effect", "two").await));
    assert!(!s.proxy.disarm(), "already taken");
    assert!(s.proxy.taken());
    assert_eq!(s.up.accepted(), ["one"]);
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_reached_resolves_on_the_sites_response_head() {
    let s = Setup::new().await;
    s.proxy
        .arm(EffectFault::Landed, EffectMatcher::unsafe_methods());
    let mut reached = Box::pin(s.proxy.wait_reached());
    assert!(reached.as_mut().now_or_never().is_none());
    let post = s.post("/gated", "one");
    // The site has the request and has not answered: taken, not reached.
    bounded("entered", s.up.entered.notified()).await;
    assert!(s.proxy.taken());
    assert!(reached.as_mut().now_or_never().is_none());
    s.up.open.notify_one();
    bounded("reached", reached).await;
    assert_eq!(s.up.accepted(), ["one"]);
    assert!(!post.is_finished());
    s.proxy.release_held();
    assert!(is_lost(&bounded("post", post).await.unwrap()));
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_cookies_are_stripped_and_fresh_ones_pass() {
    let s = Setup::new().await;
    assert_eq!(line(&s.page(Some("a=1; b=2")).await, "cookie"), "a=1; b=2");
    let response = s.post_now("/login", "").await.unwrap();
    assert_eq!(
        response.headers()[header::SET_COOKIE],
        "session=s1; Path=/; HttpOnly"
    );

    s.proxy.expire_cookies();
    let page = s.page(Some("a=1; b=2; session=s1; c=3")).await;
    assert_eq!(
        line(&page, "cookie"),
        "c=3",
        "seen before: stripped; new: passes"
    );
    assert_eq!(
        line(&s.page(Some("a=1")).await, "cookie"),
        "-",
        "no Cookie header left"
    );

    // A fresh sign-in sets a new session, which passes.
    let response = s.post_now("/login", "").await.unwrap();
    assert_eq!(
        response.headers()[header::SET_COOKIE],
        "session=s2; Path=/; HttpOnly"
    );
    let page = s.page(Some("session=s2; a=9; b=2; c=3")).await;
    assert_eq!(line(&page, "cookie"), "session=s2; a=9; c=3");
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interstitial_stands_before_pages_and_changes_until_a_browser_clicks_through() {
    let s = Setup::new().await;
    let navigate = |cookie: Option<&str>| {
        let mut request = s
            .client
            .get(s.url("/page?x=1"))
            .header("sec-fetch-dest", "document")
            .header(header::ACCEPT, "text/html");
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie.to_owned());
        }
        bounded("navigate", request.send())
    };
    s.proxy.watch_secrets(
        &format!("http://{}", s.up_addr),
        std::sync::Arc::new(|_: &str, _: &str| false),
    );
    s.proxy.add_secret(SecretKind::Password, "pw-CANARY 9d3e");
    // Nothing stands yet: the page is the site's.
    let before = navigate(None).await.unwrap();
    assert_eq!(line(&before.text().await.unwrap(), "cookie"), "-");
    assert_eq!(s.proxy.interstitials_shown(), 0);

    s.proxy.show_interstitial(Interstitial::SignIn);
    let shown = navigate(Some("sid=1")).await.unwrap();
    assert_eq!(shown.status(), 200);
    let html = shown.text().await.unwrap();
    assert!(html.contains("data-page=\"login-interstitial\""), "{html}");
    assert!(html.contains("button id=\"continue\""), "{html}");
    // A change is refused with it and never reaches the site, its body read for secrets
    // all the same; a read that is not a navigation passes.
    let refused = s.post_now("/effect", "hello pw-CANARY 9d3e").await.unwrap();
    assert_eq!(refused.status(), 403);
    assert!(s.up.accepted().is_empty());
    let sent = s.proxy.secrets_sent().unwrap();
    assert!(
        sent.len() == 1 && sent[0].contains("POST /effect"),
        "the password in the refused body: {sent:?}"
    );
    assert_eq!(line(&s.page(Some("sid=1")).await, "cookie"), "sid=1");
    assert_eq!(s.proxy.interstitials_shown(), 2);

    // The button: a redirect back to the page asked for, with the cookie that clears it.
    let action = html
        .split("action=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    assert!(action.starts_with(CONTINUE_PATH), "{action}");
    let through = s.post_now(action, "").await.unwrap();
    assert_eq!(through.status(), 303);
    assert_eq!(through.headers()[header::LOCATION], "/page?x=1");
    let cookie = through.headers()[header::SET_COOKIE].to_str().unwrap();
    let pair = cookie.split(';').next().unwrap().to_owned();
    // Through: its pages and changes are the site's, and the proxy's cookie never reaches it.
    let page = navigate(Some(&format!("sid=1; {pair}"))).await.unwrap();
    assert_eq!(line(&page.text().await.unwrap(), "cookie"), "sid=1");
    let sent = bounded(
        "post",
        s.client
            .post(s.url("/effect"))
            .header(header::COOKIE, pair.clone())
            .body("hello")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(sent.status(), 200);
    assert_eq!(s.up.accepted(), ["hello"]);
    // Another browser meets it still; a new interstitial asks the first one again.
    assert_eq!(
        navigate(Some("sid=2")).await.unwrap().status(),
        200,
        "the interstitial, again"
    );
    assert_eq!(s.proxy.interstitials_shown(), 3);
    s.proxy.show_interstitial(Interstitial::Consent);
    let again = navigate(Some(&pair)).await.unwrap().text().await.unwrap();
    assert!(again.contains("data-page=\"consent\""), "{again}");
    assert!(again.contains("button id=\"accept-consent\""), "{again}");
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_loopback_is_forwarded() {
    let s = Setup::new().await;
    for (url, target) in [
        ("http://example.com/x?q=1", "example.com:80"),
        ("http://10.1.2.3:81/", "10.1.2.3:81"),
        ("http://[2001:db8::1]/", "[2001:db8::1]:80"),
    ] {
        let response = bounded("get", s.client.get(url).send()).await.unwrap();
        assert_eq!(response.status(), 403, "{url}");
        let text = response.text().await.unwrap();
        // The refusal names the target and the way to allow it.
        assert!(text.contains(&format!("refuses {target}, ")), "{text}");
        assert!(text.contains("SiteSpec::declare_origin"), "{text}");
    }
    for url in [
        format!("http://localhost:{}/page", s.up_addr.port()),
        s.url("/page"),
    ] {
        let response = bounded("get", s.client.get(&url).send()).await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
    }
    let (status, _) = raw(
        &s.proxy,
        "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
    )
    .await;
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    assert_eq!(
        log(&s.proxy),
        [
            entry("GET", "/x", Some(403), None),
            entry("GET", "/", Some(403), None),
            entry("GET", "/", Some(403), None),
            entry("GET", "/page", Some(200), None),
            entry("GET", "/page", Some(200), None),
            entry("CONNECT", "example.com:443", Some(403), None),
        ]
    );
    s.proxy.shutdown().await;
}

/// Sends raw bytes to the proxy and reads the response head (and the rest, if it closes).
async fn raw(proxy: &FaultProxy, request: &str) -> (String, TcpStream) {
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = bounded("head", stream.read(&mut byte)).await.unwrap();
        assert_eq!(
            n,
            1,
            "closed before a response head: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    (String::from_utf8(head).unwrap(), stream)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_tunnels_to_loopback_without_faults() {
    let s = Setup::new().await;
    s.proxy
        .arm(EffectFault::Dropped, EffectMatcher::unsafe_methods());
    let target = s.up_addr;
    let (status, mut tunnel) = raw(
        &s.proxy,
        &format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"),
    )
    .await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    tunnel
        .write_all(
            b"POST /effect HTTP/1.1\r\nHost: tunnel.test\r\nContent-Length: 3\r\nConnection: close\r\n\r\none",
        )
        .await
        .unwrap();
    let mut response = String::new();
    bounded("tunnel", tunnel.read_to_string(&mut response))
        .await
        .unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("done"), "{response}");
    assert_eq!(s.up.accepted(), ["one"]);
    assert!(!s.proxy.taken(), "a tunnel is opaque");
    assert_eq!(
        log(&s.proxy),
        [entry("CONNECT", &target.to_string(), Some(200), None)]
    );
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_unreachable_origin_form_and_self() {
    let s = Setup::new().await;
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let response = bounded(
        "get",
        s.client.get(format!("http://127.0.0.1:{port}/x")).send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 502);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("could not be reached")
    );

    let response = bounded("get", s.client.get(s.proxy.proxy_url()).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 508);

    let (status, _) = raw(
        &s.proxy,
        &format!("GET /x HTTP/1.1\r\nHost: {}\r\n\r\n", s.proxy.addr()),
    )
    .await;
    assert!(status.starts_with("HTTP/1.1 400"), "{status}");
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_held_requests_promptly() {
    let s = Setup::new().await;
    // An idle keep-alive connection, and three held requests.
    s.page(None).await;
    let mut held = Vec::new();
    for fault in [
        EffectFault::Lost,
        EffectFault::Landed,
        EffectFault::Slow(Duration::from_secs(3600)),
    ] {
        let name = fault.name();
        s.proxy.arm(fault, EffectMatcher::unsafe_methods());
        held.push(s.post("/effect", name));
        bounded("reached", s.proxy.wait_reached()).await;
    }
    assert_eq!(s.up.accepted(), ["landed", "slow"]);
    let addr = s.proxy.addr();
    let start = Instant::now();
    bounded("shutdown", s.proxy.shutdown()).await;
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    for post in held {
        // Shutdown drops what it held: the connection ends without an answer.
        let result = bounded("post", post).await.unwrap();
        assert!(result.is_err(), "no answer: {result:?}");
    }
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_landing_is_held_past_its_client_and_lands_on_release() {
    let s = Setup::new().await;
    // Nothing held: at once.
    bounded("release nothing", s.proxy.release_late()).await;
    s.proxy
        .arm(EffectFault::LateLanding, EffectMatcher::unsafe_methods());
    let client = s.post("/effect", "late body");
    bounded("held", s.proxy.wait_reached()).await;
    assert!(s.up.accepted().is_empty(), "held, not forwarded");
    // The client gives up (a killed browser): the request stays held.
    client.abort();
    let _ = client.await;
    let _ = s.post_now("/other", "meanwhile").await.unwrap();
    assert_eq!(s.up.accepted(), ["meanwhile"]);
    bounded("release", s.proxy.release_late()).await;
    assert_eq!(s.up.accepted(), ["meanwhile", "late body"], "landed, once");
    bounded("release again", s.proxy.release_late()).await;
    assert_eq!(s.up.accepted().len(), 2);
    s.proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_read_for_secrets_and_passes_unchanged() {
    let s = Setup::new().await;
    let password = "pw-CANARY 9d3e";
    s.proxy.watch_secrets(
        &format!("http://{}", s.up_addr),
        std::sync::Arc::new(|method: &str, path: &str| method == "POST" && path == "/session"),
    );
    s.proxy.add_secret(SecretKind::Password, password);
    // The sign-in carries the password in its body: where it belongs. Its cookie is a
    // secret from now on; sent back in the Cookie header, it is where it belongs too.
    let signed_in = bounded(
        "sign in",
        s.client
            .post(s.url("/session"))
            .body("user=alice&password=pw-CANARY+9d3e")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(signed_in.status(), 200);
    let _ = s.page(Some("sid=sess-4a7be0c19d")).await;
    assert_eq!(s.proxy.secrets_sent(), Some(Vec::new()));

    // A streamed (chunked) body with the password split across its chunks reaches the
    // site whole, and is found.
    let (head, mut stream) = raw(
        &s.proxy,
        &format!(
            "POST http://{0}/effect HTTP/1.1\r\nHost: {0}\r\nTransfer-Encoding: chunked\r\n\r\n\
             9\r\nhi pw-CAN\r\n9\r\nARY 9d3e!\r\n0\r\n\r\n",
            s.up_addr
        ),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    drop(stream.shutdown().await);
    assert_eq!(s.up.accepted(), ["hi pw-CANARY 9d3e!"]);
    // The cookie's value in a body, the password in a query string and in a request to
    // another origin (refused, but read first).
    let _ = s.post_now("/other", "token=sess-4a7be0c19d").await.unwrap();
    let _ = bounded(
        "get",
        s.client.get(s.url("/page?p=pw-CANARY%209d3e")).send(),
    )
    .await;
    let refused = bounded(
        "foreign",
        s.client
            .get("http://example.test/collect?x=pw-canary+9d3e")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(refused.status(), 403);
    // A body to another origin is read too, though the request goes nowhere.
    let refused = bounded(
        "foreign post",
        s.client
            .post("http://example.test/upload")
            .body("note=pw-CANARY 9d3e")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(refused.status(), 403);
    let sent = s.proxy.secrets_sent().unwrap();
    assert_eq!(
        sent,
        [
            "a cookie's value in the body of POST /other",
            "an account's password in the body of POST /effect",
            "an account's password in the body of a POST request to another origin (example.test:80)",
            "an account's password in the query string of GET /page",
            "an account's password in the query string of a GET request to another origin (example.test:80)",
        ]
    );
    assert!(
        sent.iter()
            .all(|f| !f.contains("9d3e") && !f.contains("4a7be0"))
    );
    s.proxy.shutdown().await;
}

#[test]
fn start_needs_a_tokio_runtime() {
    let err = FaultProxy::start().unwrap_err();
    assert!(err.to_string().contains("Tokio runtime"), "{err}");
}
