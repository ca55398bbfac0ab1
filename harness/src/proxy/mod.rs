//! The harness's fault proxy: an HTTP/1.1 forward proxy on 127.0.0.1 between the browser and
//! a website under test (on loopback, or at the origins its spec declares, over `http` or
//! `https`), so that a network fault can be injected into the one request that carries an
//! agent's side effect, against any site.
//!
//! Chromium must be told to use it for loopback too, which it bypasses by default:
//! `--proxy-server=http://127.0.0.1:PORT --proxy-bypass-list=<-loopback>`
//! (a worker's launch passes both when its spec names a proxy), and, when it intercepts an
//! `https` origin, to accept its certificates: `--ignore-certificate-errors-spki-list=`
//! [`FaultProxy::trusted_spki`] (the hashes of this proxy's own two keys only; nothing is
//! installed anywhere, and every other certificate is checked as usual).
//!
//! What it does:
//! - Absolute-form requests (`GET http://127.0.0.1:8080/x HTTP/1.1`) are forwarded with a
//!   pooled keep-alive client and their responses streamed back. Forwarding is transparent:
//!   the Host header, cookies, redirects and bodies pass unchanged; only hop-by-hop headers
//!   (Connection and the headers it names, Proxy-Connection, Keep-Alive, Proxy-Authenticate,
//!   Proxy-Authorization, TE, Trailer, Transfer-Encoding, Upgrade) are removed both ways.
//! - `CONNECT host:port` to a declared `https` origin ([`Upstreams::declare`]) is
//!   intercepted: the proxy answers the browser's TLS with a certificate for that host
//!   signed by an authority it makes when it starts ([`FaultProxy::ca_certificate`]), and
//!   serves the requests inside exactly as plain ones (faults, cookie expiry, secrets, log),
//!   forwarding each to the origin over TLS checked against the system's roots and
//!   [`Upstreams::trust_root`]. A WebSocket handshake inside is passed to the origin with its
//!   upgrade headers and then copied both ways, its frames not faulted or read. A certificate
//!   the proxy cannot trust is answered 502 naming why.
//! - `CONNECT` to any other loopback target is tunnelled byte for byte (this is how Chromium
//!   sends https and WebSocket traffic through an HTTP proxy). A tunnel is opaque: no fault,
//!   no cookie expiry, one log line.
//! - Only loopback and the declared origins are reachable: any other target is answered 403
//!   with a message naming its `host:port`. Names resolve through [`Upstreams::resolve`]
//!   first, then the system. An upstream that cannot be reached is answered 502 with why.
//!   A request aimed at the proxy itself is answered 508, one in origin-form 400.
//! - One effect fault at a time can be armed ([`FaultProxy::arm`]): the first request that
//!   the [`EffectMatcher`] picks after arming gets the [`EffectFault`]; later ones pass.
//! - [`FaultProxy::expire_cookies`] simulates a server-side session expiry for any site.
//! - [`FaultProxy::show_interstitial`] stands a sign-in or consent interstitial of the
//!   proxy's own before every page of any site, each browser let through once it clicks
//!   through it (the rules are in [`Interstitial`]'s module).
//! - [`FaultProxy::requests`] is a small log for evidence: method, path without query,
//!   status, fault, time. Never a header, a query string or a body: those carry secrets.
//! - [`FaultProxy::observe`] tells an observer of each request it passes on and each answer
//!   it sends back, before either goes: how the trial reads boundaries from the network.
//! - [`FaultProxy::watch_secrets`] reads every request (its target, headers and body as it
//!   streams through, a refused one included) for the trial's secrets;
//!   [`FaultProxy::secrets_sent`] names each one found where it must not be, by kind and
//!   place, never by value. The rules are in [`SecretKind`]'s module.
//!
//! A lost request or response is answered `502 Bad Gateway`, as a real proxy answers, never
//! by closing the browser's connection: when a *reused* keep-alive connection closes before
//! any byte of an answer, Chromium silently sends the request (a POST included) again on
//! another connection (seen with Chromium 156), so a closed connection would let a "lost"
//! effect land after all, or twice.

mod intercept;
pub(crate) mod interstitial;
mod secrets;
mod serve;
mod upstreams;

pub use interstitial::Interstitial;
pub use secrets::{SecretKind, SignInPredicate};
pub use upstreams::{DeclaredOrigin, Upstreams};

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::hash::RandomState;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::combinators::BoxBody;
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioTimer;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::tls::Resolver;
use intercept::Interception;
use secrets::SecretWatch;
use serve::{accept_loop, lock};

/// The body of every response the proxy sends.
type Body = BoxBody<Bytes, hyper::Error>;

/// How long a pooled upstream connection may stay idle.
const POOL_IDLE: Duration = Duration::from_secs(30);

/// What the armed fault does to the effect request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// The request (its body read whole) is held, not forwarded, past its client's death:
    /// the effect has not landed, and a read of the site finds it absent. On
    /// [`FaultProxy::release_late`] it is forwarded as it came and lands, as a request stuck
    /// in a network lands after its client gave up on it; its browser (if still there) gets
    /// a `502`. Shutdown drops it unforwarded.
    LateLanding,
    /// The request is never forwarded (the effect is lost) and answered at once as a
    /// success the site did not make for it: a `303 See Other` to this location (a path on
    /// the request's origin, or an absolute URL), the page of a look-alike effect the site
    /// holds (another one's, under another key).
    LookAlike(String),
}

impl EffectFault {
    /// The fault's name in [`ProxiedRequest::fault`]: `landed`, `lost`, `dropped`,
    /// `response_dropped`, `slow`, `late_landing` or `look_alike`.
    pub fn name(&self) -> &'static str {
        match self {
            EffectFault::Landed => "landed",
            EffectFault::Lost => "lost",
            EffectFault::Dropped => "dropped",
            EffectFault::ResponseDropped => "response_dropped",
            EffectFault::Slow(_) => "slow",
            EffectFault::LateLanding => "late_landing",
            EffectFault::LookAlike(_) => "look_alike",
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

/// A request the proxy is about to pass on, or an answer it is about to send back, as an
/// observer ([`FaultProxy::observe`]) is told of it: before the site has the request, or the
/// browser the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exchange<'a> {
    /// A request to an allowed target reached the proxy (before any fault takes it).
    Request {
        /// Its method.
        method: &'a str,
        /// Its path, without the query.
        path: &'a str,
    },
    /// The site's answer to a request goes to the browser now (a request whose answer a
    /// fault held, dropped or replaced has none).
    Answer {
        /// The request's method.
        method: &'a str,
        /// The request's path, without the query.
        path: &'a str,
        /// The answer's status.
        status: u16,
    },
}

/// Told of every [`Exchange`]; must be quick (it runs on the request's path).
pub type ExchangeObserver = Arc<dyn Fn(Exchange<'_>) + Send + Sync>;

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
    /// Binds 127.0.0.1 on an ephemeral port and starts serving, forwarding to loopback
    /// only. Must be called inside a Tokio runtime (an error otherwise).
    pub fn start() -> io::Result<FaultProxy> {
        FaultProxy::start_with(Upstreams::default())
    }

    /// [`FaultProxy::start`], forwarding to the declared `upstreams` too and intercepting
    /// the HTTPS ones (with an authority of its own, made now).
    pub fn start_with(upstreams: Upstreams) -> io::Result<FaultProxy> {
        tokio::runtime::Handle::try_current()
            .map_err(|_| io::Error::other("FaultProxy::start needs a Tokio runtime"))?;
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;

        let conns = Tasks::default();
        let client_tasks = Tasks::default();
        let connector = crate::tls::connector(upstreams.roots(), upstreams.names().clone())
            .map_err(io::Error::other)?;
        let interception = if upstreams.intercepts_any() {
            Some(Interception::new().map_err(io::Error::other)?)
        } else {
            None
        };
        let client = Client::builder(TrackedExecutor(client_tasks.clone()))
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(connector.clone());
        let (shutdown, shutdown_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            addr,
            client,
            connector,
            upstreams,
            interception,
            arm: watch::Sender::new(ArmState::default()),
            release: watch::Sender::new(0),
            late: watch::Sender::new(LateState::default()),
            cookies: Mutex::new(Cookies::default()),
            gate: Mutex::new(None),
            log: Mutex::new(Vec::new()),
            secrets: std::sync::OnceLock::new(),
            observer: std::sync::OnceLock::new(),
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

    /// The value of Chromium's `--ignore-certificate-errors-spki-list` for a browser that
    /// must accept this proxy's certificates for the HTTPS origins it intercepts; `None`
    /// when it intercepts none.
    pub fn trusted_spki(&self) -> Option<&str> {
        self.shared
            .interception
            .as_ref()
            .map(Interception::spki_list)
    }

    /// The certificate (DER) of the authority that signs this proxy's certificates for the
    /// HTTPS origins it intercepts, for a client that trusts it by the usual means.
    pub fn ca_certificate(&self) -> Option<Vec<u8>> {
        let interception = self.shared.interception.as_ref()?;
        Some(interception.ca_der().to_vec())
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
    /// arrived (the effect landed); for [`EffectFault::Lost`], [`EffectFault::Dropped`] and
    /// [`EffectFault::LookAlike`] once the request was taken. Waits for the current arm, or the next one if none is;
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

    /// Forwards every request held by [`EffectFault::LateLanding`] so far, and resolves once
    /// the site has answered each (it landed), or the proxy shut down. At once when none is
    /// held.
    pub async fn release_late(&self) {
        self.shared.late.send_modify(|s| s.epoch += 1);
        let mut rx = self.shared.late.subscribe();
        let mut shutdown = self.shared.shutdown.clone();
        tokio::select! {
            _ = rx.wait_for(|s| s.held == 0) => {}
            _ = shutdown.wait_for(|s| *s) => {}
        }
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

    /// From now on, stands `kind` before every page of every site behind the proxy, for
    /// every browser until it clicks through (its button posts to [`interstitial::CONTINUE_PATH`]): a
    /// navigation gets the interstitial, a request that could change something a `403` with
    /// it, never forwarded. A second call stands a new one, which every browser meets again.
    pub fn show_interstitial(&self, kind: Interstitial) {
        *lock(&self.shared.gate) = Some(interstitial::Gate::new(kind));
    }

    /// How many times the standing interstitial was shown (a navigation it stood before, or
    /// a request it refused), by any browser; `0` when none stands.
    pub fn interstitials_shown(&self) -> u64 {
        lock(&self.shared.gate).as_ref().map_or(0, |g| g.shown)
    }

    /// From now on, reads every request for secrets: `origin` is the site's own
    /// (`http://host:port`), `is_sign_in` names its sign-in requests (method, path without
    /// query), where a password may travel in the body. Secrets are added with
    /// [`FaultProxy::add_secret`]; cookie values are added as the proxy sees them. Only the
    /// first call takes effect.
    pub fn watch_secrets(&self, origin: &str, is_sign_in: SignInPredicate) {
        let authority = match DeclaredOrigin::parse(origin) {
            Ok(origin) => origin.authority(),
            Err(_) => origin.to_owned(),
        };
        let _ = self
            .shared
            .secrets
            .set(Arc::new(SecretWatch::new(authority, is_sign_in)));
    }

    /// Tells `observer` of every request the proxy passes on and every answer it sends back
    /// from now on ([`Exchange`]). Only the first call takes effect.
    pub fn observe(&self, observer: ExchangeObserver) {
        let _ = self.shared.observer.set(observer);
    }

    /// Looks for `value` in every request from now on (once [`FaultProxy::watch_secrets`]
    /// was called); values shorter than the kind's minimum are ordinary words and skipped.
    pub fn add_secret(&self, kind: SecretKind, value: &str) {
        if let Some(watch) = self.shared.secrets.get() {
            watch.add(kind, value);
        }
    }

    /// Reads `text`, something the site stored that a browser sent (an effect's payload),
    /// for the secrets it watches: any found is a finding, named by kind and `place`.
    pub fn scan_stored(&self, place: &str, text: &str) {
        if let Some(watch) = self.shared.secrets.get() {
            watch.scan_stored(place, text);
        }
    }

    /// Where a secret was sent that must not be, each once, sorted: `None` when the proxy
    /// does not watch for secrets.
    pub fn secrets_sent(&self) -> Option<Vec<String>> {
        self.shared.secrets.get().map(|w| w.findings())
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
#[derive(Clone, Debug)]
struct Taken {
    fault: EffectFault,
    generation: u64,
    /// The release epoch when it was taken: a later [`FaultProxy::release_held`] frees it.
    epoch: u64,
}

/// The requests held to land late.
#[derive(Debug, Default)]
struct LateState {
    /// Bumped by every [`FaultProxy::release_late`]: a request held before it is forwarded.
    epoch: u64,
    /// How many are held and not yet answered by the site.
    held: usize,
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
    client: Client<HttpsConnector<HttpConnector<Resolver>>, Body>,
    /// The client's connector, for a WebSocket handshake's connection of its own.
    connector: HttpsConnector<HttpConnector<Resolver>>,
    upstreams: Upstreams,
    interception: Option<Interception>,
    arm: watch::Sender<ArmState>,
    release: watch::Sender<u64>,
    late: watch::Sender<LateState>,
    cookies: Mutex<Cookies>,
    gate: Mutex<Option<interstitial::Gate>>,
    log: Mutex<Vec<ProxiedRequest>>,
    secrets: std::sync::OnceLock<Arc<SecretWatch>>,
    observer: std::sync::OnceLock<ExchangeObserver>,
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

    fn fault(&self, fault: &EffectFault) {
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
