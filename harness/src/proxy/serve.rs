//! What the proxy does with a connection: accept it, answer each request (forward it,
//! fault it, refuse it) or tunnel it, and filter cookies both ways.

use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::interstitial::{self, CONTINUE_PATH, Gated};
use super::secrets::{RequestScan, ScannedBody, SecretKind, SecretWatch, split_pair};
use super::{Body, EffectFault, Exchange, Record, Shared, Taken, Tasks};

pub(super) async fn accept_loop(
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
        self: &Arc<Self>,
        req: Request<Incoming>,
        record: &Record<'_>,
    ) -> Result<Response<Body>, std::convert::Infallible> {
        let uri = req.uri();
        let https = uri.scheme_str() == Some("https");
        let (Some(host), true) = (uri.host(), https || uri.scheme_str() == Some("http")) else {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                "browser-fault proxy: expected an absolute http:// request target\n",
            ));
        };
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let scan = self.secrets.get().map(|watch| {
            let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
            let scan = watch.scan_head(
                req.method().as_str(),
                &format!("{host}:{port}"),
                uri.path(),
                path_and_query,
                req.headers(),
            );
            (watch.clone(), scan)
        });
        if let Some(refusal) = self.refuse_target(host, port) {
            read_refused(req.into_body(), scan).await;
            return Ok(refusal);
        }
        // Before the observer and the arm: a request the interstitial stops never happened
        // for the site.
        if let Some(answer) = self.interstitial(req.method(), uri, req.headers()) {
            read_refused(req.into_body(), scan).await;
            return Ok(answer);
        }
        let observer = self.observer.get();
        let seen = observer.map(|_| (req.method().clone(), uri.path().to_owned()));
        if let (Some(observer), Some((method, path))) = (observer, &seen) {
            observer(Exchange::Request {
                method: method.as_str(),
                path,
            });
        }
        let taken = self.take_arm(req.method(), uri.path());
        if let Some(taken) = &taken {
            record.fault(&taken.fault);
            match &taken.fault {
                EffectFault::Dropped => {
                    self.reach(taken.generation);
                    return Ok(lost_on_the_wire());
                }
                EffectFault::LookAlike(location) => {
                    self.reach(taken.generation);
                    return Ok(see_other(location));
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
        let body = match scan {
            Some((watch, scan)) => ScannedBody::new(body, watch, scan).boxed(),
            None => body.boxed(),
        };
        if let Some(taken) = &taken
            && taken.fault == EffectFault::LateLanding
        {
            return Ok(self.land_late(parts, body, taken.clone()).await);
        }
        let response = match self.client.request(Request::from_parts(parts, body)).await {
            Ok(response) => response,
            Err(e) => return Ok(unreachable_upstream(&e)),
        };
        let (mut parts, body) = response.into_parts();
        self.see_set_cookies(&parts.headers);
        strip_hop_by_hop(&mut parts.headers);
        if let Some(taken) = taken {
            self.reach(taken.generation);
            match &taken.fault {
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
                        _ = tokio::time::sleep(*delay) => {}
                        _ = self.released(taken.epoch) => {}
                    }
                }
                _ => {}
            }
        }
        if let (Some(observer), Some((method, path))) = (observer, &seen) {
            observer(Exchange::Answer {
                method: method.as_str(),
                path,
                status: parts.status.as_u16(),
            });
        }
        Ok(Response::from_parts(parts, body.boxed()))
    }

    /// Reads the request's body whole and holds it, in a task of its own that outlives the
    /// browser's connection, until [`FaultProxy::release_late`](super::FaultProxy::release_late);
    /// then forwards it and waits for the site's answer. The browser, if it still listens
    /// then, gets a `502`.
    async fn land_late(
        self: &Arc<Self>,
        parts: hyper::http::request::Parts,
        body: Body,
        taken: Taken,
    ) -> Response<Body> {
        let Ok(bytes) = body.collect().await.map(|b| b.to_bytes()) else {
            self.reach(taken.generation);
            return lost_on_the_wire();
        };
        let epoch = self.late.borrow().epoch;
        self.late.send_modify(|s| s.held += 1);
        self.reach(taken.generation);
        let (landed, landed_rx) = tokio::sync::oneshot::channel::<()>();
        let shared = self.clone();
        self.tunnels.spawn(async move {
            let mut late = shared.late.subscribe();
            let mut shutdown = shared.shutdown.clone();
            let released = tokio::select! {
                _ = late.wait_for(|s| s.epoch > epoch) => true,
                _ = stopped(&mut shutdown) => false,
            };
            if released {
                let request =
                    Request::from_parts(parts, Full::new(bytes).map_err(|n| match n {}).boxed());
                tokio::select! {
                    answered = shared.client.request(request) => {
                        if let Ok(response) = answered {
                            let _ = response.into_body().collect().await;
                        }
                    }
                    _ = stopped(&mut shutdown) => {}
                }
            }
            shared.late.send_modify(|s| s.held -= 1);
            let _ = landed.send(());
        });
        let _ = landed_rx.await;
        lost_on_the_wire()
    }

    /// Tunnels a CONNECT to a loopback target, or intercepts one to a declared HTTPS
    /// origin.
    async fn connect(self: &Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let authority = req.uri().authority().cloned();
        let target = authority.as_ref().map_or("", |a| a.as_str());
        let mut record = Record::new(&self.log, "CONNECT", target);
        let response = self.open_tunnel(req, authority).await;
        record.status = Some(response.status().as_u16());
        response
    }

    async fn open_tunnel(
        self: &Arc<Self>,
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
        if let (Some(interception), Some(origin)) = (
            &self.interception,
            self.upstreams.declared(host, port).filter(|o| o.https),
        ) {
            return match interception.acceptor(&origin.host) {
                Ok(acceptor) => self.intercept(req, acceptor, origin.authority()),
                Err(why) => plain_owned(
                    StatusCode::BAD_GATEWAY,
                    format!("browser-fault proxy: cannot intercept {why}\n"),
                ),
            };
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

    /// Answers the CONNECT with `200` and then, on the connection it hands over, speaks TLS
    /// as `authority` with a certificate of its own authority, and serves the requests that
    /// come through as it serves plain ones (faults, cookies, secrets), forwarding each to
    /// the origin over TLS.
    fn intercept(
        self: &Arc<Self>,
        req: Request<Incoming>,
        acceptor: tokio_rustls::TlsAcceptor,
        authority: String,
    ) -> Response<Body> {
        let shared = self.clone();
        let mut shutdown = self.shutdown.clone();
        self.tunnels.spawn(async move {
            let Ok(upgraded) = hyper::upgrade::on(req).await else {
                return;
            };
            let tls = tokio::select! {
                tls = acceptor.accept(TokioIo::new(upgraded)) => match tls {
                    Ok(tls) => tls,
                    // A browser that does not trust the certificate hangs up here.
                    Err(_) => return,
                },
                _ = stopped(&mut shutdown) => return,
            };
            let service = service_fn(move |req: Request<Incoming>| {
                let shared = shared.clone();
                let authority = authority.clone();
                async move {
                    if is_websocket(&req) {
                        return Ok(shared.websocket(req, &authority).await);
                    }
                    match absolute(req, &authority) {
                        Some(req) => shared.handle(req).await,
                        None => Ok(plain(
                            StatusCode::BAD_REQUEST,
                            "browser-fault proxy: a malformed request target\n",
                        )),
                    }
                }
            });
            let conn = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(tls), service)
                .with_upgrades();
            tokio::select! {
                _ = conn => {}
                _ = stopped(&mut shutdown) => {}
            }
        });
        Response::new(empty())
    }

    /// A WebSocket handshake inside an intercepted connection (`wss://` to a declared
    /// origin): passed to the origin over a TLS connection of its own with its upgrade
    /// headers (which ordinary forwarding strips), cookies filtered as for any request, and
    /// once the origin switches protocols, the two upgraded streams copied both ways. Its
    /// frames are not faulted or read, as a tunnel's are not.
    async fn websocket(
        self: &Arc<Self>,
        mut req: Request<Incoming>,
        authority: &str,
    ) -> Response<Body> {
        use tower_service::Service;
        let mut record = Record::new(&self.log, req.method().as_str(), req.uri().path());
        let path_and_query = req
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let Ok(uri) = format!("https://{authority}/").parse::<hyper::Uri>() else {
            return plain(
                StatusCode::BAD_REQUEST,
                "browser-fault proxy: a malformed request target\n",
            );
        };
        if let Some(watch) = self.secrets.get() {
            watch.scan_head(
                req.method().as_str(),
                authority,
                req.uri().path(),
                &path_and_query,
                req.headers(),
            );
        }
        let stream = match self.connector.clone().call(uri).await {
            Ok(stream) => stream,
            Err(e) => {
                return plain_owned(
                    StatusCode::BAD_GATEWAY,
                    format!("browser-fault proxy: the upstream could not be reached: {e}\n"),
                );
            }
        };
        let Ok((mut sender, conn)) = hyper::client::conn::http1::handshake(stream).await else {
            return lost_on_the_wire();
        };
        let mut shutdown = self.shutdown.clone();
        self.tunnels.spawn(async move {
            tokio::select! {
                _ = conn.with_upgrades() => {}
                _ = stopped(&mut shutdown) => {}
            }
        });
        let browser_side = hyper::upgrade::on(&mut req);
        let mut upstream = Request::builder()
            .method(req.method().clone())
            .uri(path_and_query)
            .body(empty())
            .expect("a method and a path make a request");
        *upstream.headers_mut() = req.headers().clone();
        upstream.headers_mut().remove("proxy-connection");
        self.filter_cookies(upstream.headers_mut());
        let mut response = match sender.send_request(upstream).await {
            Ok(response) => response,
            Err(_) => return lost_on_the_wire(),
        };
        record.status = Some(response.status().as_u16());
        self.see_set_cookies(response.headers());
        if response.status() != StatusCode::SWITCHING_PROTOCOLS {
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            return Response::from_parts(parts, body.boxed());
        }
        let upstream_side = hyper::upgrade::on(&mut response);
        let mut shutdown = self.shutdown.clone();
        self.tunnels.spawn(async move {
            let (Ok(browser), Ok(site)) = (browser_side.await, upstream_side.await) else {
                return;
            };
            let (mut browser, mut site) = (TokioIo::new(browser), TokioIo::new(site));
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut browser, &mut site) => {}
                _ = stopped(&mut shutdown) => {}
            }
        });
        let (parts, _) = response.into_parts();
        Response::from_parts(parts, empty())
    }

    /// The answer for a target the proxy will not forward to, if it is one.
    fn refuse_target(&self, host: &str, port: u16) -> Option<Response<Body>> {
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let ip = bare.parse::<IpAddr>().ok();
        let localhost = bare.eq_ignore_ascii_case("localhost");
        let loopback = localhost || ip.is_some_and(|ip| ip.is_loopback());
        if !loopback && self.upstreams.declared(host, port).is_none() {
            return Some(plain_owned(
                StatusCode::FORBIDDEN,
                format!(
                    "browser-fault proxy: refuses {host}:{port}, which is neither loopback \
                     (127.0.0.1, ::1, localhost) nor an origin the site spec declares \
                     (SiteSpec::declare_origin)\n"
                ),
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
                Some((fault, m)) if m.matches(method.as_str(), path) => fault.clone(),
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

    /// What the standing interstitial answers instead of the site, if it stops the request:
    /// the interstitial (a navigation, or a refused change), or the redirect of its button
    /// with the cookie that clears it for this browser.
    fn interstitial(
        &self,
        method: &Method,
        uri: &hyper::Uri,
        headers: &HeaderMap,
    ) -> Option<Response<Body>> {
        let mut gate = lock(&self.gate);
        let gate = gate.as_mut()?;
        if uri.path() == CONTINUE_PATH && *method == Method::POST {
            let mut response = see_other(&interstitial::next_of(uri.query()));
            if let Some(cookie) = interstitial::clearing_cookie(gate) {
                response.headers_mut().append(header::SET_COOKIE, cookie);
            }
            return Some(response);
        }
        if gate.cleared_by(headers) {
            return None;
        }
        let gated = interstitial::gated(method, headers);
        if gated == Gated::Pass {
            return None;
        }
        gate.shown += 1;
        // A refused change leads back to the site's front page, a navigation to its page.
        let next = match gated {
            Gated::Page => uri.path_and_query().map_or("/", |p| p.as_str()),
            _ => "/",
        };
        let mut response = plain_owned(
            interstitial::status_of(&gated),
            interstitial::page(gate.kind, next),
        );
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        Some(response)
    }

    /// Drops expired cookie pairs from the Cookie headers and notes the others as seen; the
    /// proxy's own cookie (an interstitial's) is never forwarded.
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
                if jar.expired.contains(&hash) || interstitial::is_own_cookie(pair) {
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
            // The value is a secret the browsers must not send anywhere else from now on.
            if let (Some(watch), Some((_, value))) = (self.secrets.get(), split_pair(pair)) {
                watch.add(SecretKind::Cookie, value);
            }
        }
    }
}

/// Reads the body of a request the proxy answers itself (refused, never forwarded) for
/// secrets: it left the browser all the same.
async fn read_refused(body: Incoming, scan: Option<(Arc<SecretWatch>, RequestScan)>) {
    if let Some((watch, scan)) = scan {
        let _ = ScannedBody::new(body, watch, scan).collect().await;
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

/// A request that came through an intercepted connection, in origin form (`GET /x`), with
/// the absolute `https://authority/x` target a plain proxied request has; `None` for a
/// target that cannot be made absolute.
fn absolute(req: Request<Incoming>, authority: &str) -> Option<Request<Incoming>> {
    let (mut parts, body) = req.into_parts();
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri = hyper::Uri::builder()
        .scheme("https")
        .authority(authority)
        .path_and_query(path_and_query)
        .build();
    parts.uri = uri.ok()?;
    Some(Request::from_parts(parts, body))
}

/// The answer when the site cannot be reached: why, down the error's chain (a refused
/// connection, an unknown host, a certificate the proxy does not trust), with the setting
/// that fixes a certificate of the site's own authority. Never a secret: these errors carry
/// no request data.
fn unreachable_upstream(e: &hyper_util::client::legacy::Error) -> Response<Body> {
    let mut why = String::new();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = source {
        why.push_str(": ");
        why.push_str(&s.to_string());
        source = s.source();
    }
    let hint = if why.contains("certificate") {
        " (a certificate signed by the site's own authority is trusted with \
         SiteSpec::trust_root_pem)"
    } else {
        ""
    };
    plain_owned(
        StatusCode::BAD_GATEWAY,
        format!("browser-fault proxy: the upstream could not be reached{why}{hint}\n"),
    )
}

/// Whether `req` asks to switch to the WebSocket protocol.
fn is_websocket(req: &Request<Incoming>) -> bool {
    req.headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

fn plain(status: StatusCode, body: &'static str) -> Response<Body> {
    plain_bytes(status, Bytes::from_static(body.as_bytes()))
}

fn plain_owned(status: StatusCode, body: String) -> Response<Body> {
    plain_bytes(status, Bytes::from(body))
}

fn plain_bytes(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body).map_err(|never| match never {}).boxed());
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

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the proxy answers for a request or response it lost: a `502`, as a real proxy
/// would. Closing the connection instead is no loss to Chromium: it sends a `POST` again on
/// a fresh connection when a reused one closes before any byte of an answer (measured), so
/// the effect would land after all, or twice.
/// A success's redirect: `303 See Other` to `location`, the way a site answers a form it
/// accepted.
fn see_other(location: &str) -> Response<Body> {
    let mut response = plain(StatusCode::SEE_OTHER, "");
    match HeaderValue::from_str(location) {
        Ok(value) => {
            response.headers_mut().insert(header::LOCATION, value);
            response
        }
        Err(_) => plain(
            StatusCode::BAD_GATEWAY,
            "browser-fault proxy: the look-alike's location is not a header value\n",
        ),
    }
}

fn lost_on_the_wire() -> Response<Body> {
    plain(
        StatusCode::BAD_GATEWAY,
        "browser-fault proxy: the connection to the site was lost\n",
    )
}
