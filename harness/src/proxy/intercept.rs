//! Intercepting HTTPS for the declared origins: a certificate authority the proxy makes for
//! itself when it starts (never written to disk, never installed anywhere), a certificate
//! for each intercepted host signed by it, and the SPKI hashes Chromium is told to trust
//! (`--ignore-certificate-errors-spki-list`), so only the browsers of this proxy's trial
//! accept it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};
use tokio_rustls::TlsAcceptor;

use super::serve::lock;

/// The proxy's authority and the acceptors it made so far, one per host.
pub(super) struct Interception {
    issuer: Issuer<'static, KeyPair>,
    ca: CertificateDer<'static>,
    /// One key for every host's certificate: its hash is the one Chromium trusts.
    leaf_key: KeyPair,
    spki_list: String,
    acceptors: Mutex<HashMap<String, TlsAcceptor>>,
}

impl Interception {
    /// A fresh authority and leaf key (ECDSA P-256).
    pub(super) fn new() -> Result<Interception, rcgen::Error> {
        let ca_key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "browser-fault proxy (one trial)");
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = params.self_signed(&ca_key)?.der().clone();
        let leaf_key = KeyPair::generate()?;
        let hash =
            |spki: &[u8]| base64::engine::general_purpose::STANDARD.encode(Sha256::digest(spki));
        let spki_list = format!(
            "{},{}",
            hash(&rcgen::PublicKeyData::subject_public_key_info(&leaf_key)),
            hash(&rcgen::PublicKeyData::subject_public_key_info(&ca_key)),
        );
        Ok(Interception {
            issuer: Issuer::new(params, ca_key),
            ca,
            leaf_key,
            spki_list,
            acceptors: Mutex::new(HashMap::new()),
        })
    }

    /// The value of Chromium's `--ignore-certificate-errors-spki-list`: the base64 SHA-256
    /// of the leaf key's and the authority's SubjectPublicKeyInfo.
    pub(super) fn spki_list(&self) -> &str {
        &self.spki_list
    }

    /// The authority's certificate (DER), for a client that trusts it by the usual means.
    pub(super) fn ca_der(&self) -> &CertificateDer<'static> {
        &self.ca
    }

    /// The acceptor presenting a certificate for `host` (a name or an IP address), made the
    /// first time it is asked for.
    pub(super) fn acceptor(&self, host: &str) -> Result<TlsAcceptor, String> {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        if let Some(acceptor) = lock(&self.acceptors).get(&host) {
            return Ok(acceptor.clone());
        }
        let fail = |e: &dyn std::fmt::Display| format!("a certificate for {host}: {e}");
        let mut params = CertificateParams::new(vec![host.clone()]).map_err(|e| fail(&e))?;
        params
            .distinguished_name
            .push(DnType::CommonName, host.as_str());
        params.use_authority_key_identifier_extension = true;
        let cert = params
            .signed_by(&self.leaf_key, &self.issuer)
            .map_err(|e| fail(&e))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key.serialize_der()));
        let mut config = rustls::ServerConfig::builder_with_provider(crate::tls::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| fail(&e))?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone(), self.ca.clone()], key)
            .map_err(|e| fail(&e))?;
        // The proxy speaks HTTP/1.1 to the browser, as it does without TLS.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        lock(&self.acceptors).insert(host, acceptor.clone());
        Ok(acceptor)
    }
}
