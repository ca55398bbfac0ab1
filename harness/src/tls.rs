//! TLS for sites served over HTTPS: the roots an upstream's certificate is checked against
//! (the system's store and the roots a site spec adds), and the rustls client configuration
//! the fault proxy and [`Http`](crate::site::Http) reach a site with. One crypto provider
//! (ring) for all of it, chosen here, never a process-wide default.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The crypto provider of every TLS connection the harness makes or accepts.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    static PROVIDER: OnceLock<Arc<rustls::crypto::CryptoProvider>> = OnceLock::new();
    // ring, not aws-lc-rs: no C toolchain beyond `cc`, a third of the build time. rustls
    // deprecates it for lacking post-quantum key exchange, which a test's loopback hop and
    // a staging site's session do not need.
    #[allow(deprecated)]
    let make = || Arc::new(rustls::crypto::ring::default_provider());
    PROVIDER.get_or_init(make).clone()
}

/// The system's trusted roots (`/etc/ssl/certs` and its kin), read once per process. A
/// store that cannot be read is empty: a site whose certificate it would have vouched for
/// then fails its handshake, which names the certificate.
fn native_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

/// The certificates of a PEM text (`-----BEGIN CERTIFICATE-----` blocks), or why not.
pub(crate) fn certificates_from_pem(pem: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a PEM certificate: {e}"))?;
    if certs.is_empty() {
        return Err("no `-----BEGIN CERTIFICATE-----` block in the PEM text".to_owned());
    }
    Ok(certs)
}

/// A client configuration that trusts the system's roots and `extra` (the roots of a site
/// with its own CA). No ALPN: the HTTP client it is handed to offers its own protocols.
pub(crate) fn client_config(
    extra: &[CertificateDer<'static>],
) -> Result<rustls::ClientConfig, String> {
    let mut roots = RootCertStore::empty();
    // A system root rustls cannot parse is skipped, as every rustls client skips it.
    let _ = roots.add_parsable_certificates(native_roots().iter().cloned());
    for cert in extra {
        roots
            .add(cert.clone())
            .map_err(|e| format!("a root certificate the site spec adds is unusable: {e}"))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// The connector of an HTTP client that speaks `http` and `https` (HTTP/1.1), trusting the
/// system's roots and `roots`, resolving `names` itself.
pub(crate) fn connector(
    roots: &[CertificateDer<'static>],
    names: HashMap<String, IpAddr>,
) -> Result<HttpsConnector<HttpConnector<Resolver>>, String> {
    let mut http = HttpConnector::new_with_resolver(Resolver::new(names));
    http.set_nodelay(true);
    http.enforce_http(false);
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(client_config(roots)?)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http))
}

/// An HTTP client's resolver: the names it was given, then the system's.
#[derive(Clone, Debug)]
pub(crate) struct Resolver {
    names: Arc<HashMap<String, IpAddr>>,
    system: GaiResolver,
}

impl Resolver {
    pub(crate) fn new(names: HashMap<String, IpAddr>) -> Resolver {
        Resolver {
            names: Arc::new(names),
            system: GaiResolver::new(),
        }
    }
}

type Addrs = std::vec::IntoIter<SocketAddr>;

impl tower_service::Service<Name> for Resolver {
    type Response = Addrs;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Addrs>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.system.poll_ready(cx)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        // Port 0: the connector puts the request's port in.
        if let Some(ip) = self.names.get(&name.as_str().to_ascii_lowercase()) {
            let addrs = vec![SocketAddr::new(*ip, 0)];
            return Box::pin(async move { Ok(addrs.into_iter()) });
        }
        let lookup = self.system.call(name);
        Box::pin(async move { Ok(lookup.await?.collect::<Vec<_>>().into_iter()) })
    }
}
