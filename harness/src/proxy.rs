//! The harness's fault proxy: an HTTP/1.1 forward proxy on 127.0.0.1 between the browser and
//! a website under test on loopback, so that a network fault can be injected into the one
//! request that carries an agent's side effect, against any site.
//!
//! Chromium must be told to use it for loopback too, which it bypasses by default:
//! `--proxy-server=http://127.0.0.1:PORT --proxy-bypass-list=<-loopback>`
//! (a worker's launch passes both when its spec names a proxy).
//!
//! What it does:
//! - Absolute-form requests (`GET http://127.0.0.1:8080/x HTTP/1.1`) are forwarded with a
//!   pooled keep-alive client and their responses streamed back. Forwarding is transparent:
//!   the Host header, cookies, redirects and bodies pass unchanged; only hop-by-hop headers
//!   (Connection and the headers it names, Proxy-Connection, Keep-Alive, Proxy-Authenticate,
//!   Proxy-Authorization, TE, Trailer, Transfer-Encoding, Upgrade) are removed both ways.
//! - `CONNECT host:port` to a loopback target is tunnelled byte for byte (this is how
//!   Chromium sends https and WebSocket traffic through an HTTP proxy). A tunnel is opaque:
//!   no fault, no cookie expiry, one log line.
//! - Only loopback is reachable: a target that is not `localhost` or a loopback address
//!   (127.0.0.0/8, ::1) is answered 403. An upstream that cannot be reached is answered 502.
//!   A request aimed at the proxy itself is answered 508, one in origin-form 400.
//! - One effect fault at a time can be armed ([`FaultProxy::arm`]): the first request that
//!   the [`EffectMatcher`] picks after arming gets the [`EffectFault`]; later ones pass.
//! - [`FaultProxy::expire_cookies`] simulates a server-side session expiry for any site.
//! - [`FaultProxy::requests`] is a small log for evidence: method, path without query,
//!   status, fault, time. Never a header, a query string or a body: those carry secrets.
//!
//! A lost request or response is answered `502 Bad Gateway`, as a real proxy answers, never
//! by closing the browser's connection: when a *reused* keep-alive connection closes before
//! any byte of an answer, Chromium silently sends the request (a POST included) again on
//! another connection (seen with Chromium 156), so a closed connection would let a "lost"
//! effect land after all, or twice.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The body of every response the proxy sends.
type Body = BoxBody<Bytes, hyper::Error>;

/// How long a pooled upstream connection may stay idle.
const POOL_IDLE: Duration = Duration::from_secs(30);

/// What the armed fault does to the effect request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EffectFault {
    /// The request is forwarded and the site processes it fully (the effect lands); its
    /// response is held and never sent. On [`FaultProxy::release_held`] the browser gets a
    /// `502` instead; on shutdown its connection is dropped.
    Landed,
    /// The request is held and never forwarded (the effect is lost). On
    /// [`FaultProxy::release_held`] it is answered `502`; on shutdown dropped.
    Lost,
    /// The request is never forwarded and answered `502` at once: lost on the wire.
    Dropped,
    /// The request is forwarded and the site's full response awaited, then replaced by a
    /// `502`: the effect landed, the browser learns nothing of it.
    ResponseDropped,
    /// The request is forwarded and its response delayed by the duration once its head
    /// arrived; [`FaultProxy::release_held`] sends it at once, shutdown drops it.
    Slow(Duration),
}

impl EffectFault {
    /// The fault's name in [`ProxiedRequest::fault`]: `landed`, `lost`, `dropped`,
    /// `response_dropped` or `slow`.
    pub fn name(&self) -> &'static str {
        match self {
            EffectFault::Landed => "landed",
            EffectFault::Lost => "lost",
            EffectFault::Dropped => "dropped",
            EffectFault::ResponseDropped => "response_dropped",
            EffectFault::Slow(_) => "slow",
        }
    }
}

/// Which request is "the effect": by default the first one whose method is not safe (GET,
/// HEAD, OPTIONS, TRACE), optionally narrowed by path prefixes.
///
/// Prefixes are plain string prefixes of the path (no query): `"/login"` also covers
/// `"/login/x"` and `"/login-help"`; end one with `/` to keep it within a segment.
///
/// ```
/// use browser_fault::_internal::proxy::EffectMatcher;
/// let m = EffectMatcher::unsafe_methods().except("/login").path_prefix("/issue");
/// assert!(m.matches("POST", "/issues/new"));
/// assert!(!m.matches("POST", "/login"));
/// assert!(!m.matches("GET", "/issues/new"));
/// assert!(!m.matches("POST", "/threads/1"));
/// ```
#[derive(Clone, Default)]
pub struct EffectMatcher {
    except: Vec<String>,
    prefix: Option<String>,
    when: Option<RequestPredicate>,
}

/// A test of a request's method and path.
type RequestPredicate = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

impl std::fmt::Debug for EffectMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EffectMatcher")
            .field("except", &self.except)
            .field("prefix", &self.prefix)
            .field("when", &self.when.as_ref().map(|_| "<fn>"))
            .finish()
    }
}

impl EffectMatcher {
    /// Any request whose method is not GET, HEAD, OPTIONS or TRACE (the default).
    pub fn unsafe_methods() -> Self {
        Self::default()
    }

    /// Also skip requests whose path starts with `prefix` (e.g. the sign-in route).
    /// May be given several times.
    pub fn except(mut self, prefix: impl Into<String>) -> Self {
        self.except.push(prefix.into());
        self
    }

    /// Only requests whose path starts with `prefix`. Given again, it replaces the previous.
    pub fn path_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Only requests for which `when(method, path)` holds as well (a site adapter's
    /// [`Site::is_effect_request`](crate::site::Site::is_effect_request)).
    pub fn when(mut self, when: impl Fn(&str, &str) -> bool + Send + Sync + 'static) -> Self {
        self.when = Some(Arc::new(when));
        self
    }

    /// Whether a request with this method and path (no query) is the effect.
    pub fn matches(&self, method: &str, path: &str) -> bool {
        !matches!(method, "GET" | "HEAD" | "OPTIONS" | "TRACE" | "CONNECT")
            && !self.except.iter().any(|p| path.starts_with(p.as_str()))
            && self.prefix.as_deref().is_none_or(|p| path.starts_with(p))
            && self.when.as_ref().is_none_or(|when| when(method, path))
    }
}

/// One request the proxy handled, for evidence. Carries no header, query string or body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxiedRequest {
    /// The request method.
    pub method: String,
    /// The target path without its query string; for `CONNECT`, the target `host:port`.
    pub path: String,
    /// The status the proxy sent to the browser; `None` when it sent no response (a fault
    /// closed the connection, the request is still held, or the connection ended).
    pub status: Option<u16>,
    /// The [`EffectFault::name`] of the fault this request got, if it was the effect.
    pub fault: Option<&'static str>,
    /// Milliseconds from the request's head at the proxy to the response head it sent (or
    /// to when it gave up on the request); 0 while it is in progress.
    pub ms: u64,
}

/// The fault proxy. Start it with [`FaultProxy::start`] inside a Tokio runtime; stop it with
/// [`FaultProxy::shutdown`]. Dropped without that, it stops in the background.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    accept: JoinHandle<()>,
    conns: Tasks,
    client_tasks: Tasks,
}

impl fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultProxy")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FaultProxy {
    /// Binds 127.0.0.1 on an ephemeral port and starts serving. Must be called inside a
    /// Tokio runtime (an error otherwise).
    pub fn start() -> io::Result<FaultProxy> {
        tokio::runtime::Handle::try_current()
            .map_err(|_| io::Error::other("FaultProxy::start needs a Tokio runtime"))?;
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;

        let conns = Tasks::default();
        let client_tasks = Tasks::default();
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TrackedExecutor(client_tasks.clone()))
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(connector);
        let (shutdown, shutdown_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            addr,
            client,
            arm: watch::Sender::new(ArmState::default()),
            release: watch::Sender::new(0),
            cookies: Mutex::new(Cookies::default()),
            log: Mutex::new(Vec::new()),
            tunnels: conns.clone(),
            shutdown: shutdown_rx.clone(),
        });
        let accept = tokio::spawn(accept_loop(
            listener,
            shared.clone(),
            conns.clone(),
            shutdown_rx,
        ));
        Ok(FaultProxy {
            addr,
            shared,
            shutdown,
            accept,
            conns,
            client_tasks,
        })
    }

    /// The address it listens on (127.0.0.1, ephemeral port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, the value for Chromium's `--proxy-server`.
    pub fn proxy_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Arms `fault` for the first request `matcher` picks from now on, replacing an arm no
    /// request took yet. Requests held by an earlier arm stay held.
    pub fn arm(&self, fault: EffectFault, matcher: EffectMatcher) {
        self.shared.arm.send_modify(|s| {
            s.generation += 1;
            s.pending = Some((fault, matcher));
            s.taken = false;
            s.reached = false;
        });
    }

    /// Takes back an arm that no request took; returns whether one was pending.
    pub fn disarm(&self) -> bool {
        self.shared
            .arm
            .send_if_modified(|s| s.pending.take().is_some())
    }

    /// Whether a request took the current arm.
    pub fn taken(&self) -> bool {
        self.shared.arm.borrow().taken
    }

    /// Resolves once the armed request was taken and, for [`EffectFault::Landed`],
    /// [`EffectFault::ResponseDropped`] and [`EffectFault::Slow`], the site's response head
    /// arrived (the effect landed); for [`EffectFault::Lost`] and [`EffectFault::Dropped`]
    /// once the request was taken. Waits for the current arm, or the next one if none is;
    /// never resolves if the upstream fails to answer the taken request (bound it with a
    /// timeout).
    pub async fn wait_reached(&self) {
        let mut rx = self.shared.arm.subscribe();
        // The sender lives in `shared`, which `self` holds: the channel cannot close.
        let _ = rx.wait_for(|s| s.reached).await;
    }

    /// Lets go of every request or response held so far: held [`EffectFault::Landed`]
    /// responses and [`EffectFault::Lost`] requests are dropped with their connections (no
    /// response), delayed [`EffectFault::Slow`] responses go out at once.
    pub fn release_held(&self) {
        self.shared.release.send_modify(|epoch| *epoch += 1);
    }

    /// From now on, removes from every forwarded request's Cookie header each cookie
    /// (name=value pair) that the proxy saw before this call, in a request's Cookie header
    /// or a response's Set-Cookie. Cookies set afterwards by the site (a fresh sign-in,
    /// even with a value seen before) pass. Only keyed hashes of the pairs are kept.
    pub fn expire_cookies(&self) {
        let mut jar = lock(&self.shared.cookies);
        let jar = &mut *jar;
        jar.expired.extend(jar.seen.drain());
    }

    /// The requests handled so far, in arrival order.
    pub fn requests(&self) -> Vec<ProxiedRequest> {
        lock(&self.shared.log).clone()
    }

    /// Stops accepting, ends open connections (held requests included, without a
    /// response), and waits for its tasks and pooled upstream connections to end.
    pub async fn shutdown(mut self) {
        self.shutdown.send_replace(true);
        let _ = (&mut self.accept).await;
        self.conns.idle().await;
        let client_tasks = self.client_tasks.clone();
        // The last handle on the pooled client: its connections end with it.
        drop(self);
        client_tasks.idle().await;
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}

/// The state of the effect arm.
#[derive(Debug, Default)]
struct ArmState {
    /// Counts arms, so a late signal from an earlier arm is not taken for the current one.
    generation: u64,
    pending: Option<(EffectFault, EffectMatcher)>,
    taken: bool,
    reached: bool,
}

/// An arm a request took.
#[derive(Clone, Copy, Debug)]
struct Taken {
    fault: EffectFault,
    generation: u64,
    /// The release epoch when it was taken: a later [`FaultProxy::release_held`] frees it.
    epoch: u64,
}

/// Cookie pairs, as keyed hashes.
#[derive(Debug, Default)]
struct Cookies {
    hasher: RandomState,
    seen: HashSet<u64>,
    expired: HashSet<u64>,
}

/// What the accept loop, the connections and the handle share.
struct Shared {
    addr: SocketAddr,
    client: Client<HttpConnector, Incoming>,
    arm: watch::Sender<ArmState>,
    release: watch::Sender<u64>,
    cookies: Mutex<Cookies>,
    log: Mutex<Vec<ProxiedRequest>>,
    tunnels: Tasks,
    shutdown: watch::Receiver<bool>,
}

/// Counts live tasks, so shutdown can wait for them (a small task tracker).
#[derive(Clone, Debug, Default)]
struct Tasks(Arc<watch::Sender<usize>>);

impl Tasks {
    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.0.send_modify(|n| *n += 1);
        let guard = TaskGuard(self.0.clone());
        tokio::spawn(async move {
            task.await;
            drop(guard);
        });
    }

    async fn idle(&self) {
        let _ = self.0.subscribe().wait_for(|n| *n == 0).await;
    }
}

/// Counts its task out when it ends, panics and runtime shutdown included.
struct TaskGuard(Arc<watch::Sender<usize>>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// The pooled client's executor: its connection tasks are tracked.
#[derive(Clone, Debug)]
struct TrackedExecutor(Tasks);

impl<F> hyper::rt::Executor<F> for TrackedExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        self.0.spawn(async move {
            fut.await;
        });
    }
}

/// The log line of one request, written when the request ends however it ends.
struct Record<'a> {
    log: &'a Mutex<Vec<ProxiedRequest>>,
    index: usize,
    start: Instant,
    status: Option<u16>,
}

impl<'a> Record<'a> {
    fn new(log: &'a Mutex<Vec<ProxiedRequest>>, method: &str, path: &str) -> Record<'a> {
        let mut entries = lock(log);
        entries.push(ProxiedRequest {
            method: method.to_owned(),
            path: path.to_owned(),
            status: None,
            fault: None,
            ms: 0,
        });
        Record {
            log,
            index: entries.len() - 1,
            start: Instant::now(),
            status: None,
        }
    }

    fn fault(&self, fault: EffectFault) {
        lock(self.log)[self.index].fault = Some(fault.name());
    }
}

impl Drop for Record<'_> {
    fn drop(&mut self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut entries = lock(self.log);
        let entry = &mut entries[self.index];
        entry.status = self.status;
        entry.ms = ms;
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    conns: Tasks,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let stream = tokio::select! {
            biased;
            _ = stopped(&mut shutdown) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of descriptors or an aborted handshake: let it pass, don't spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let mut shutdown = shutdown.clone();
        conns.spawn(async move {
            let service = service_fn(move |req| shared.clone().handle(req));
            let conn = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                _ = conn => {}
                _ = stopped(&mut shutdown) => {}
            }
        });
    }
}

impl Shared {
    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Result<Response<Body>, std::convert::Infallible> {
        if req.method() == Method::CONNECT {
            return Ok(self.connect(req).await);
        }
        let mut record = Record::new(&self.log, req.method().as_str(), req.uri().path());
        let response = self.forward(req, &record).await;
        if let Ok(response) = &response {
            record.status = Some(response.status().as_u16());
        }
        response
    }

    async fn forward(
        &self,
        req: Request<Incoming>,
        record: &Record<'_>,
    ) -> Result<Response<Body>, std::convert::Infallible> {
        let uri = req.uri();
        let (Some(host), true) = (uri.host(), uri.scheme_str() == Some("http")) else {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                "browser-fault proxy: expected an absolute http:// request target\n",
            ));
        };
        if let Some(refusal) = self.refuse_target(host, uri.port_u16().unwrap_or(80)) {
            return Ok(refusal);
        }
        let taken = self.take_arm(req.method(), uri.path());
        if let Some(taken) = taken {
            record.fault(taken.fault);
            match taken.fault {
                EffectFault::Dropped => {
                    self.reach(taken.generation);
                    return Ok(lost_on_the_wire());
                }
                EffectFault::Lost => {
                    self.reach(taken.generation);
                    self.released(taken.epoch).await;
                    return Ok(lost_on_the_wire());
                }
                _ => {}
            }
        }

        let (mut parts, body) = req.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        self.filter_cookies(&mut parts.headers);
        let response = match self.client.request(Request::from_parts(parts, body)).await {
            Ok(response) => response,
            Err(_) => {
                return Ok(plain(
                    StatusCode::BAD_GATEWAY,
                    "browser-fault proxy: the upstream could not be reached\n",
                ));
            }
        };
        let (mut parts, body) = response.into_parts();
        self.see_set_cookies(&parts.headers);
        strip_hop_by_hop(&mut parts.headers);
        if let Some(taken) = taken {
            self.reach(taken.generation);
            match taken.fault {
                EffectFault::Landed => {
                    let _ = body.collect().await;
                    self.released(taken.epoch).await;
                    return Ok(lost_on_the_wire());
                }
                EffectFault::ResponseDropped => {
                    let _ = body.collect().await;
                    return Ok(lost_on_the_wire());
                }
                EffectFault::Slow(delay) => {
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = self.released(taken.epoch) => {}
                    }
                }
                EffectFault::Lost | EffectFault::Dropped => {}
            }
        }
        Ok(Response::from_parts(parts, body.boxed()))
    }

    /// Tunnels a CONNECT to a loopback target.
    async fn connect(&self, req: Request<Incoming>) -> Response<Body> {
        let authority = req.uri().authority().cloned();
        let target = authority.as_ref().map_or("", |a| a.as_str());
        let mut record = Record::new(&self.log, "CONNECT", target);
        let response = self.open_tunnel(req, authority).await;
        record.status = Some(response.status().as_u16());
        response
    }

    async fn open_tunnel(
        &self,
        req: Request<Incoming>,
        authority: Option<hyper::http::uri::Authority>,
    ) -> Response<Body> {
        let Some((host, port)) = authority
            .as_ref()
            .and_then(|a| Some((a.host(), a.port_u16()?)))
        else {
            return plain(
                StatusCode::BAD_REQUEST,
                "browser-fault proxy: CONNECT needs host:port\n",
            );
        };
        if let Some(refusal) = self.refuse_target(host, port) {
            return refusal;
        }
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let Ok(mut upstream) = TcpStream::connect((bare, port)).await else {
            return plain(
                StatusCode::BAD_GATEWAY,
                "browser-fault proxy: the upstream could not be reached\n",
            );
        };
        let _ = upstream.set_nodelay(true);
        let mut shutdown = self.shutdown.clone();
        self.tunnels.spawn(async move {
            // Resolves once the 200 below went out and hyper handed over the connection.
            let Ok(upgraded) = hyper::upgrade::on(req).await else {
                return;
            };
            let mut client = TokioIo::new(upgraded);
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
                _ = stopped(&mut shutdown) => {}
            }
        });
        Response::new(empty())
    }

    /// The answer for a target the proxy will not forward to, if it is one.
    fn refuse_target(&self, host: &str, port: u16) -> Option<Response<Body>> {
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let ip = bare.parse::<IpAddr>().ok();
        let localhost = bare.eq_ignore_ascii_case("localhost");
        if !localhost && !ip.is_some_and(|ip| ip.is_loopback()) {
            return Some(plain(
                StatusCode::FORBIDDEN,
                "browser-fault proxy: only forwards to loopback (127.0.0.1, ::1, localhost)\n",
            ));
        }
        if port == self.addr.port() && (localhost || ip == Some(self.addr.ip())) {
            return Some(plain(
                StatusCode::LOOP_DETECTED,
                "browser-fault proxy: refuses to forward to itself\n",
            ));
        }
        None
    }

    /// Takes the arm if it is pending and this request matches it.
    fn take_arm(&self, method: &Method, path: &str) -> Option<Taken> {
        let mut taken = None;
        self.arm.send_if_modified(|s| {
            let fault = match &s.pending {
                Some((fault, m)) if m.matches(method.as_str(), path) => *fault,
                _ => return false,
            };
            s.pending = None;
            s.taken = true;
            taken = Some(Taken {
                fault,
                generation: s.generation,
                epoch: *self.release.borrow(),
            });
            true
        });
        taken
    }

    /// Marks the arm of `generation` as reached, if it is still the current one.
    fn reach(&self, generation: u64) {
        self.arm.send_if_modified(|s| {
            let fresh = s.generation == generation && !s.reached;
            if fresh {
                s.reached = true;
            }
            fresh
        });
    }

    /// Resolves at the first [`FaultProxy::release_held`] after `epoch`.
    async fn released(&self, epoch: u64) {
        let _ = self.release.subscribe().wait_for(|e| *e > epoch).await;
    }

    /// Drops expired cookie pairs from the Cookie headers and notes the others as seen.
    fn filter_cookies(&self, headers: &mut HeaderMap) {
        if !headers.contains_key(header::COOKIE) {
            return;
        }
        let mut jar = lock(&self.cookies);
        let values: Vec<HeaderValue> = headers.get_all(header::COOKIE).iter().cloned().collect();
        let mut kept: Vec<u8> = Vec::new();
        let mut dropped = false;
        for value in &values {
            for pair in value.as_bytes().split(|b| *b == b';') {
                let pair = pair.trim_ascii();
                if pair.is_empty() {
                    continue;
                }
                let hash = jar.hasher.hash_one(pair);
                if jar.expired.contains(&hash) {
                    dropped = true;
                    continue;
                }
                jar.seen.insert(hash);
                if !kept.is_empty() {
                    kept.extend_from_slice(b"; ");
                }
                kept.extend_from_slice(pair);
            }
        }
        if !dropped {
            return;
        }
        headers.remove(header::COOKIE);
        if let Ok(value) = HeaderValue::from_bytes(&kept)
            && !kept.is_empty()
        {
            headers.insert(header::COOKIE, value);
        }
    }

    /// Notes the pairs a response sets as seen, and no longer expired.
    fn see_set_cookies(&self, headers: &HeaderMap) {
        let mut set = headers.get_all(header::SET_COOKIE).iter().peekable();
        if set.peek().is_none() {
            return;
        }
        let mut jar = lock(&self.cookies);
        for value in set {
            let bytes = value.as_bytes();
            let pair = bytes
                .split(|b| *b == b';')
                .next()
                .unwrap_or(bytes)
                .trim_ascii();
            if pair.is_empty() {
                continue;
            }
            let hash = jar.hasher.hash_one(pair);
            jar.expired.remove(&hash);
            jar.seen.insert(hash);
        }
    }
}

/// Hop-by-hop headers (RFC 9110 7.6.1), never forwarded.
const HOP_BY_HOP: [HeaderName; 9] = [
    header::CONNECTION,
    HeaderName::from_static("proxy-connection"),
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// Removes the hop-by-hop headers and those the Connection header names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .flat_map(|v| v.as_bytes().split(|b| *b == b','))
        .filter_map(|token| HeaderName::from_bytes(token.trim_ascii()).ok())
        .collect();
    for name in named.iter().chain(HOP_BY_HOP.iter()) {
        headers.remove(name);
    }
}

fn plain(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from_static(body.as_bytes()))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn empty() -> Body {
    Full::new(Bytes::new())
        .map_err(|never| match never {})
        .boxed()
}

/// Resolves once shutdown was signalled (or the proxy handle is gone).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await;
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the proxy answers for a request or response it lost: a `502`, as a real proxy
/// would. Closing the connection instead is no loss to Chromium: it sends a `POST` again on
/// a fresh connection when a reused one closes before any byte of an answer (measured), so
/// the effect would land after all, or twice.
fn lost_on_the_wire() -> Response<Body> {
    plain(
        StatusCode::BAD_GATEWAY,
        "browser-fault proxy: the connection to the site was lost\n",
    )
}
