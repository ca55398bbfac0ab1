//! The shared fixture site served over HTTPS under a real-looking name, as a user's staging
//! site is: a TLS front (what nginx or a load balancer is in production) on 127.0.0.1 that
//! presents a certificate for [`HOST`] signed by an authority of its own and passes the
//! decrypted bytes to the site's plain port. Nothing resolves [`HOST`]: the site spec has
//! the fault proxy resolve it to 127.0.0.1 (`SiteSpec::resolve`) and trust the front's
//! authority (`SiteSpec::trust_root_pem`), and the adapter's `Http` the same.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, OnceLock};

use browser_fault::site::Http;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};

/// The site's host name. `.test` is reserved (RFC 6761): it resolves nowhere.
pub const HOST: &str = "shop.example.test";

/// The front of the shared fixture site.
#[derive(Debug)]
pub struct HttpsFront {
    addr: SocketAddr,
    ca_pem: String,
}

impl HttpsFront {
    /// `https://shop.example.test:PORT`.
    pub fn origin(&self) -> String {
        format!("https://{HOST}:{}", self.addr.port())
    }

    /// Where [`HOST`] is served: 127.0.0.1.
    pub fn ip(&self) -> IpAddr {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    }

    /// The authority that signed the front's certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A client that reaches the front: [`HOST`] resolved, the authority trusted.
    pub fn http(&self) -> Http {
        Http::new()
            .resolve(HOST, self.ip())
            .trust_root_pem(&self.ca_pem)
            .expect("the front's authority is a certificate")
    }

    /// The site's ledger, read through the front.
    pub fn ledger_url(&self) -> String {
        let site = crate::shared_fixture_site();
        let plain = site.ledger_url();
        let path = plain
            .strip_prefix(&site.base_url())
            .expect("the ledger is on the site's origin");
        format!("{}{path}", self.origin())
    }
}

/// The front, started the first time it is asked for, with the shared site behind it.
pub fn https_front() -> &'static HttpsFront {
    static FRONT: OnceLock<HttpsFront> = OnceLock::new();
    FRONT.get_or_init(|| {
        let upstream = crate::shared_fixture_site().addr();
        let (acceptor, ca_pem) = acceptor().expect("the front's certificates");
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a port");
        listener
            .set_nonblocking(true)
            .expect("a nonblocking socket");
        let addr = listener.local_addr().expect("its address");
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(serve(listener, acceptor, upstream));
        });
        HttpsFront { addr, ca_pem }
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

/// The front's TLS acceptor (a certificate for [`HOST`] signed by a fresh authority) and
/// the authority's PEM.
fn acceptor() -> Result<(tokio_rustls::TlsAcceptor, String), Box<dyn std::error::Error>> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "shop.example.test test authority");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![HOST.to_owned()])?;
    params.distinguished_name.push(DnType::CommonName, HOST);
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
