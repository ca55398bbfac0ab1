//! A site served over HTTPS under a real-looking name, as a user's staging site is: a TLS
//! front (what nginx or a load balancer is in production) on 127.0.0.1 that presents a
//! certificate for its host name signed by an authority of its own and passes the decrypted
//! bytes to the site's plain port. Nothing resolves the name (`.test` is reserved by RFC 6761):
//! the site spec has the fault proxy resolve it to 127.0.0.1 (`SiteSpec::resolve`) and trust
//! the front's authority (`SiteSpec::trust_root_pem`), and the adapter's `Http` the same.
//!
//! [`https_front`] fronts the shared fixture site as [`HOST`]; the Roundup suite fronts its
//! tracker with a front of its own ([`HttpsFront::bind`]).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, OnceLock};

use browser_fault::site::Http;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};

/// The shared fixture site's host name.
pub const HOST: &str = "shop.example.test";

/// A TLS front, serving.
#[derive(Debug)]
pub struct HttpsFront {
    host: &'static str,
    addr: SocketAddr,
    ca_pem: String,
}

/// The certificate a front presents for its host name and the authority that signed it,
/// made before the front serves: a site spec names the authority it trusts when it is
/// built, in every process, while the site behind it starts later and in the test process
/// only.
#[derive(Clone)]
pub struct Authority {
    host: &'static str,
    acceptor: tokio_rustls::TlsAcceptor,
    ca_pem: String,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

impl Authority {
    /// A fresh authority and a certificate for `host` it signed (a few milliseconds).
    pub fn new(host: &'static str) -> Result<Authority, Box<dyn std::error::Error>> {
        let (acceptor, ca_pem) = acceptor(host)?;
        Ok(Authority {
            host,
            acceptor,
            ca_pem,
        })
    }

    /// The authority's certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A client that reaches a front of this authority on 127.0.0.1: its host name
    /// resolved, the authority trusted.
    pub fn http(&self) -> Http {
        Http::new()
            .resolve(self.host, IpAddr::V4(Ipv4Addr::LOCALHOST))
            .trust_root_pem(&self.ca_pem)
            .expect("the front's authority is a certificate")
    }
}

/// A TLS front whose port is bound but which serves nothing yet: what a site that must know
/// its public URL before it starts (Roundup's `web` setting) is started between.
#[derive(Debug)]
pub struct BoundFront {
    host: &'static str,
    listener: std::net::TcpListener,
    addr: SocketAddr,
}

impl HttpsFront {
    /// Binds a front for `host` on a free port of 127.0.0.1.
    pub fn bind(host: &'static str) -> std::io::Result<BoundFront> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        Ok(BoundFront {
            host,
            listener,
            addr,
        })
    }

    /// `https://HOST:PORT`.
    pub fn origin(&self) -> String {
        format!("https://{}:{}", self.host, self.addr.port())
    }

    /// The front's host name.
    pub fn host(&self) -> &'static str {
        self.host
    }

    /// Where the host name is served: 127.0.0.1.
    pub fn ip(&self) -> IpAddr {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    }

    /// The authority that signed the front's certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A client that reaches the front: its host name resolved, its authority trusted.
    pub fn http(&self) -> Http {
        Http::new()
            .resolve(self.host, self.ip())
            .trust_root_pem(&self.ca_pem)
            .expect("the front's authority is a certificate")
    }

    /// The shared site's ledger, read through the front.
    pub fn ledger_url(&self) -> String {
        let site = crate::shared_fixture_site();
        let plain = site.ledger_url();
        let path = plain
            .strip_prefix(&site.base_url())
            .expect("the ledger is on the site's origin");
        format!("{}{path}", self.origin())
    }
}

impl BoundFront {
    /// `https://HOST:PORT`, the URL the site behind will be reached at.
    pub fn origin(&self) -> String {
        format!("https://{}:{}", self.host, self.addr.port())
    }

    /// Starts serving with `authority`'s certificate (made for the same host name): every
    /// connection's TLS is terminated and its bytes passed to `upstream`, for as long as the
    /// process lives.
    pub fn forward_to(
        self,
        upstream: SocketAddr,
        authority: &Authority,
    ) -> std::io::Result<HttpsFront> {
        assert_eq!(
            self.host, authority.host,
            "the authority is for another host"
        );
        let acceptor = authority.acceptor.clone();
        let ca_pem = authority.ca_pem.clone();
        let listener = self.listener;
        std::thread::Builder::new()
            .name(format!("https-front {}", self.host))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                runtime.block_on(serve(listener, acceptor, upstream));
            })?;
        Ok(HttpsFront {
            host: self.host,
            addr: self.addr,
            ca_pem,
        })
    }
}

/// The shared fixture site's front, started the first time it is asked for.
pub fn https_front() -> &'static HttpsFront {
    static FRONT: OnceLock<HttpsFront> = OnceLock::new();
    FRONT.get_or_init(|| {
        let authority = Authority::new(HOST).expect("the front's certificates");
        HttpsFront::bind(HOST)
            .and_then(|front| front.forward_to(crate::shared_fixture_site().addr(), &authority))
            .expect("the front serves")
    })
}

async fn serve(
    listener: std::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    upstream: SocketAddr,
) {
    let listener = TcpListener::from_std(listener).expect("a tokio listener");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let Ok(mut tls) = acceptor.accept(stream).await else {
                return;
            };
            let Ok(mut site) = TcpStream::connect(upstream).await else {
                return;
            };
            let _ = tokio::io::copy_bidirectional(&mut tls, &mut site).await;
        });
    }
}

/// The front's TLS acceptor (a certificate for `host` signed by a fresh authority) and
/// the authority's PEM.
fn acceptor(host: &str) -> Result<(tokio_rustls::TlsAcceptor, String), Box<dyn std::error::Error>> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("{host} test authority"));
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![host.to_owned()])?;
    params.distinguished_name.push(DnType::CommonName, host);
    let cert = params.signed_by(&key, &issuer)?;
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )?;
    Ok((tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca.pem()))
}
