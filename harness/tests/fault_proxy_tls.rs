//! The fault proxy before an HTTPS site under a real-looking name: a real TLS site (axum on
//! 127.0.0.1 behind a TLS front, its certificate signed by an authority of its own) and a
//! real client doing what Chromium does through a proxy (CONNECT, then TLS to the origin
//! inside the tunnel, then HTTP/1.1). The proxy intercepts the declared origin, so its
//! faults strike on the decrypted requests; it refuses what is not declared, naming it, and
//! says why a site it cannot trust is unreachable.
//!
//! Every wait is on an event; timeouts are only generous upper bounds.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use browser_fault::_internal::proxy::{
    DeclaredOrigin, EffectFault, EffectMatcher, FaultProxy, Upstreams,
};
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;

/// The upper bound of any wait for an event.
const BOUND: Duration = Duration::from_secs(20);

/// The site's name: `.test` resolves nowhere (RFC 6761), so only a resolve rule reaches it.
const HOST: &str = "site.example.test";

async fn bounded<F: Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(BOUND, f)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

#[allow(deprecated)] // rustls names ring's provider deprecated in favour of aws-lc, not built here
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The HTTPS site: what it accepted, where its front listens, the authority it trusts.
struct TlsSite {
    accepted: Arc<Mutex<Vec<String>>>,
    front: SocketAddr,
    plain: SocketAddr,
    ca: CertificateDer<'static>,
}

impl TlsSite {
    async fn start() -> TlsSite {
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route(
                "/effect",
                post(
                    |State(accepted): State<Arc<Mutex<Vec<String>>>>, body: String| async move {
                        accepted.lock().unwrap().push(body);
                        "done"
                    },
                ),
            )
            .route(
                "/page",
                get(|headers: HeaderMap| async move {
                    let host = headers.get("host").map_or("-", |v| v.to_str().unwrap());
                    format!("host={host}\n")
                }),
            )
            .with_state(accepted.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let plain = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        TlsSite::front(accepted, plain).await
    }

    /// A WebSocket echo site: every text message is sent back, and kept as accepted.
    async fn websocket_echo() -> TlsSite {
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let plain = listener.local_addr().unwrap();
        let kept = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let kept = kept.clone();
                tokio::spawn(async move {
                    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
                        return;
                    };
                    while let Some(Ok(message)) = ws.next().await {
                        if let Message::Text(text) = &message {
                            kept.lock().unwrap().push(text.to_string());
                            ws.send(message).await.unwrap();
                        }
                    }
                });
            }
        });
        TlsSite::front(accepted, plain).await
    }

    /// Puts a TLS front for [`HOST`] before the plain site at `plain`.
    async fn front(accepted: Arc<Mutex<Vec<String>>>, plain: SocketAddr) -> TlsSite {
        let (acceptor, ca) = site_certificates();
        let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front_addr = front.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (stream, _) = front.accept().await.unwrap();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let mut site = TcpStream::connect(plain).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut site).await;
                });
            }
        });
        TlsSite {
            accepted,
            front: front_addr,
            plain,
            ca,
        }
    }

    /// `site.example.test:PORT`.
    fn authority(&self) -> String {
        format!("{HOST}:{}", self.front.port())
    }

    fn accepted(&self) -> Vec<String> {
        self.accepted.lock().unwrap().clone()
    }

    /// What the proxy needs to reach the site: the origin declared, the name resolved and,
    /// if `trusted`, the site's authority trusted.
    fn upstreams(&self, trusted: bool) -> Upstreams {
        let origin = DeclaredOrigin::parse(&format!("https://{}", self.authority())).unwrap();
        let upstreams = Upstreams::default()
            .declare(origin)
            .resolve(HOST, IpAddr::V4(Ipv4Addr::LOCALHOST));
        if trusted {
            upstreams.trust_root(self.ca.clone())
        } else {
            upstreams
        }
    }
}

/// A TLS acceptor for [`HOST`] and the authority that signed its certificate.
fn site_certificates() -> (tokio_rustls::TlsAcceptor, CertificateDer<'static>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "site test authority");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec![HOST.to_owned()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        CertificateDer::from(ca.der().to_vec()),
    )
}

/// Sends `CONNECT authority` to the proxy: its status line and the open stream.
async fn connect(proxy: &FaultProxy, authority: &str) -> (String, TcpStream) {
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = bounded("head", stream.read(&mut byte)).await.unwrap();
        if n == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8(head).unwrap();
    (text, stream)
}

/// What a browser does for `https://site.example.test:PORT` through the proxy: CONNECT,
/// then TLS to the origin (trusting `roots` only), then HTTP/1.1. The TLS error if the
/// handshake fails.
async fn browse(
    proxy: &FaultProxy,
    site: &TlsSite,
    roots: &[CertificateDer<'static>],
) -> Result<SendRequest<Full<Bytes>>, std::io::Error> {
    let tls = tunnel(proxy, site, roots).await?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    Ok(sender)
}

/// CONNECT and TLS to the origin inside the tunnel, trusting `roots` only.
async fn tunnel(
    proxy: &FaultProxy,
    site: &TlsSite,
    roots: &[CertificateDer<'static>],
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, std::io::Error> {
    let (status, stream) = connect(proxy, &site.authority()).await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let mut store = rustls::RootCertStore::empty();
    for root in roots {
        store.add(root.clone()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store)
        .with_no_client_auth();
    let tls = bounded(
        "handshake",
        tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from(HOST).unwrap(), stream),
    )
    .await?;
    Ok(tls)
}

/// The proxy's authority, as a browser that trusts it by the usual means holds it.
fn proxy_root(proxy: &FaultProxy) -> CertificateDer<'static> {
    CertificateDer::from(proxy.ca_certificate().expect("an https origin is declared"))
}

/// Sends one request on `sender`, with the `Host` a browser sends for `site`.
async fn send(
    sender: &mut SendRequest<Full<Bytes>>,
    site: &str,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String) {
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", site)
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = bounded("request", sender.send_request(request))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = bounded("body", response.into_body().collect())
        .await
        .unwrap()
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn log(proxy: &FaultProxy) -> Vec<(String, String, Option<u16>, Option<&'static str>)> {
    proxy
        .requests()
        .into_iter()
        .map(|r| (r.method, r.path, r.status, r.fault))
        .collect()
}

fn entry(
    method: &str,
    path: &str,
    status: u16,
    fault: Option<&'static str>,
) -> (String, String, Option<u16>, Option<&'static str>) {
    (method.to_owned(), path.to_owned(), Some(status), fault)
}

/// Arms `fault`, sends `body` on a connection of its own, and once the proxy holds it, what
/// the site accepted while held and, after the release, the browser's status.
async fn held(
    proxy: &FaultProxy,
    site: &TlsSite,
    fault: EffectFault,
    body: &str,
) -> (u16, Vec<String>) {
    proxy.arm(fault, EffectMatcher::unsafe_methods());
    let mut browser = browse(proxy, site, &[proxy_root(proxy)]).await.unwrap();
    let host = site.authority();
    let body = body.to_owned();
    let post =
        tokio::spawn(async move { send(&mut browser, &host, "POST", "/effect", &body).await });
    bounded("reached", proxy.wait_reached()).await;
    assert!(proxy.taken());
    let accepted = site.accepted().into_iter().filter(|b| b != "one").collect();
    assert!(!post.is_finished(), "held");
    proxy.release_held();
    let (status, _) = bounded("post", post).await.unwrap();
    (status, accepted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_https_origin_is_intercepted_and_its_requests_faulted() {
    let site = TlsSite::start().await;
    let proxy = FaultProxy::start_with(site.upstreams(true)).unwrap();
    // Chromium's flag: the proxy's leaf and authority, by their keys' hashes.
    let spki = proxy.trusted_spki().unwrap();
    assert_eq!(spki.split(',').count(), 2, "{spki}");
    assert!(spki.split(',').all(|h| h.len() == 44), "{spki}");

    let mut browser = browse(&proxy, &site, &[proxy_root(&proxy)]).await.unwrap();
    let host = site.authority();
    // Forwarded with the origin's own host name, over the site's TLS.
    let (status, page) = send(&mut browser, &host, "GET", "/page", "").await;
    assert_eq!((status, page), (200, format!("host={host}\n")));

    // A lost request never reaches the site; the browser is answered 502 once released.
    let (status, accepted) = held(&proxy, &site, EffectFault::Lost, "one").await;
    assert_eq!((status, accepted), (502, vec![]));
    // A landed one reaches it, and its answer is lost.
    let (status, accepted) = held(&proxy, &site, EffectFault::Landed, "two").await;
    assert_eq!((status, accepted), (502, vec!["two".to_owned()]));

    // Unarmed, the same connection carries on.
    let (status, _) = send(&mut browser, &host, "POST", "/effect", "three").await;
    assert_eq!(status, 200);
    assert_eq!(site.accepted(), ["two", "three"]);
    assert_eq!(
        log(&proxy),
        [
            entry("CONNECT", &host, 200, None),
            entry("GET", "/page", 200, None),
            entry("CONNECT", &host, 200, None),
            entry("POST", "/effect", 502, Some("lost")),
            entry("CONNECT", &host, 200, None),
            entry("POST", "/effect", 502, Some("landed")),
            entry("POST", "/effect", 200, None),
        ]
    );
    proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_trust_the_proxy_fails_its_handshake() {
    let site = TlsSite::start().await;
    let proxy = FaultProxy::start_with(site.upstreams(true)).unwrap();
    // Trusting the site's own authority is not enough: the proxy presents its own.
    let refused = browse(&proxy, &site, std::slice::from_ref(&site.ca)).await;
    let error = refused.expect_err("the handshake fails").to_string();
    assert!(error.contains("certificate"), "{error}");
    // Only the tunnel: no request of the browser reached the proxy's forwarding.
    assert_eq!(
        log(&proxy),
        [entry("CONNECT", &site.authority(), 200, None)]
    );
    proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_certificate_the_proxy_cannot_trust_is_named_with_its_fix() {
    let site = TlsSite::start().await;
    let proxy = FaultProxy::start_with(site.upstreams(false)).unwrap();
    let mut browser = browse(&proxy, &site, &[proxy_root(&proxy)]).await.unwrap();
    let host = site.authority();
    let (status, body) = send(&mut browser, &host, "POST", "/effect", "one").await;
    assert_eq!(status, 502);
    assert!(body.contains("certificate"), "{body}");
    assert!(body.contains("SiteSpec::trust_root_pem"), "{body}");
    assert!(site.accepted().is_empty());
    proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undeclared_origin_is_refused_by_name_and_a_declared_http_one_forwarded() {
    let site = TlsSite::start().await;
    let plain = format!("http://{HOST}:{}", site.plain.port());
    let proxy = FaultProxy::start_with(
        site.upstreams(true)
            .declare(DeclaredOrigin::parse(&plain).unwrap()),
    )
    .unwrap();
    // Another name, and the declared name on another port: both refused, each named.
    for authority in ["other.example.test:443".to_owned(), format!("{HOST}:1")] {
        let (status, mut stream) = connect(&proxy, &authority).await;
        assert!(status.starts_with("HTTP/1.1 403"), "{status}");
        let length: usize = status
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length: ")
                    .map(str::to_owned)
            })
            .expect("a content length")
            .parse()
            .unwrap();
        let mut body = vec![0; length];
        bounded("body", stream.read_exact(&mut body)).await.unwrap();
        let body = String::from_utf8(body).unwrap();
        assert!(body.contains(&format!("refuses {authority}, ")), "{body}");
        assert!(body.contains("SiteSpec::declare_origin"), "{body}");
    }
    // A declared plain origin under its name: forwarded, resolved by the rule.
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let request = format!(
        "GET {plain}/page HTTP/1.1\r\nHost: {HOST}:{}\r\nConnection: close\r\n\r\n",
        site.plain.port()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    bounded("answer", stream.read_to_string(&mut answer))
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.ends_with(&format!("host={HOST}:{}\n", site.plain.port())),
        "{answer}"
    );
    proxy.shutdown().await;
}

#[test]
fn a_proxy_without_https_origins_intercepts_nothing() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let proxy = FaultProxy::start().unwrap();
        assert_eq!(proxy.trusted_spki(), None);
        assert_eq!(proxy.ca_certificate(), None);
        proxy.shutdown().await;
    });
}

#[test]
fn a_malformed_origin_is_refused_by_its_parse() {
    for bad in [
        "ftp://x.test",
        "https://",
        "site.example.test",
        "https://a.test:99999",
    ] {
        assert!(DeclaredOrigin::parse(bad).is_err(), "{bad}");
    }
    assert!(DeclaredOrigin::parse("https://a.test/").is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_to_a_declared_https_origin_passes_through_the_interception() {
    let site = TlsSite::websocket_echo().await;
    let proxy = FaultProxy::start_with(site.upstreams(true)).unwrap();
    let tls = tunnel(&proxy, &site, &[proxy_root(&proxy)]).await.unwrap();
    let url = format!("wss://{}/echo", site.authority());
    let (mut ws, response) = bounded("handshake", tokio_tungstenite::client_async(url, tls))
        .await
        .unwrap();
    assert_eq!(response.status(), 101);
    for text in ["hello", "again"] {
        ws.send(Message::text(text)).await.unwrap();
        let echo = bounded("echo", ws.next()).await.unwrap().unwrap();
        assert_eq!(echo, Message::text(text));
    }
    assert_eq!(site.accepted(), ["hello", "again"]);
    let host = site.authority();
    assert_eq!(
        log(&proxy),
        [
            entry("CONNECT", &host, 200, None),
            entry("GET", "/echo", 101, None),
        ]
    );
    proxy.shutdown().await;
}
