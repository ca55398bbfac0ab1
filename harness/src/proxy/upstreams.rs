//! Where the proxy may forward beyond loopback: the declared origins, the host names it
//! resolves itself, and the roots an HTTPS upstream's certificate is checked against.

use std::collections::HashMap;
use std::net::IpAddr;

use rustls::pki_types::CertificateDer;

/// An origin the proxy forwards to: `http` or `https`, a host (a name in lower case, or an
/// IP address without brackets) and a port (the scheme's own when the origin names none).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeclaredOrigin {
    /// Whether it is `https`: the proxy then intercepts its TLS.
    pub https: bool,
    /// Its host.
    pub host: String,
    /// Its port.
    pub port: u16,
}

impl DeclaredOrigin {
    /// Parses `scheme://host[:port]` (a trailing `/` allowed; nothing else after it).
    ///
    /// ```
    /// use browser_fault::_internal::proxy::DeclaredOrigin;
    /// let o = DeclaredOrigin::parse("https://Shop.Example.com").unwrap();
    /// assert_eq!((o.https, o.host.as_str(), o.port), (true, "shop.example.com", 443));
    /// assert!(DeclaredOrigin::parse("https://shop.example.com/cart").is_err());
    /// assert!(DeclaredOrigin::parse("ftp://shop.example.com").is_err());
    /// assert!(DeclaredOrigin::parse("https://shop.example.com:99999").is_err());
    /// ```
    pub fn parse(origin: &str) -> Result<DeclaredOrigin, String> {
        let bad = |why: &str| format!("`{origin}` is not an origin ({why})");
        let (scheme, rest) = origin
            .split_once("://")
            .ok_or_else(|| bad("expected scheme://host[:port]"))?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            _ => return Err(bad("its scheme must be http or https")),
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
            return Err(bad(
                "expected only a host and port: no path, query, fragment or credentials",
            ));
        }
        let authority: hyper::http::uri::Authority = authority
            .parse()
            .map_err(|_| bad("its host or port is malformed"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        // What follows the host, read from the text: `Authority::port` is `None` for a port
        // out of range, which must not become the scheme's default.
        let after_host = &authority.as_str()[authority.host().len()..];
        let port = match after_host.strip_prefix(':') {
            Some(port) => port
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad("its port must be 1 to 65535"))?,
            None if https => 443,
            None => 80,
        };
        Ok(DeclaredOrigin { https, host, port })
    }

    /// `host:port`, an IPv6 host in brackets: the form of a request's target.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Whether a request's target `host` (as a URI or CONNECT names it) and `port` are this
    /// origin's.
    pub(super) fn is(&self, host: &str, port: u16) -> bool {
        port == self.port
            && host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .eq_ignore_ascii_case(&self.host)
    }
}

/// What the proxy may reach beyond loopback, and how: built by a trial from its site spec.
/// The default reaches loopback only, over plain HTTP or an opaque tunnel.
#[derive(Clone, Debug, Default)]
pub struct Upstreams {
    declared: Vec<DeclaredOrigin>,
    names: HashMap<String, IpAddr>,
    roots: Vec<CertificateDer<'static>>,
}

impl Upstreams {
    /// Forwards to `origin` too (loopback or not); an `https` one is intercepted, so its
    /// requests can be faulted as plain ones are.
    pub fn declare(mut self, origin: DeclaredOrigin) -> Self {
        if !self.declared.contains(&origin) {
            self.declared.push(origin);
        }
        self
    }

    /// Resolves `host` to `ip` instead of asking the system (as curl's `--resolve` or
    /// Chromium's `--host-resolver-rules` do): a site on loopback under its real name.
    pub fn resolve(mut self, host: &str, ip: IpAddr) -> Self {
        self.names.insert(host.to_ascii_lowercase(), ip);
        self
    }

    /// Trusts `root` for an HTTPS upstream's certificate, beside the system's roots.
    pub fn trust_root(mut self, root: CertificateDer<'static>) -> Self {
        self.roots.push(root);
        self
    }

    pub(super) fn roots(&self) -> &[CertificateDer<'static>] {
        &self.roots
    }

    pub(super) fn names(&self) -> &HashMap<String, IpAddr> {
        &self.names
    }

    /// Whether any declared origin is `https`.
    pub(super) fn intercepts_any(&self) -> bool {
        self.declared.iter().any(|o| o.https)
    }

    /// The declared origin at `host:port`, if one is.
    pub(super) fn declared(&self, host: &str, port: u16) -> Option<&DeclaredOrigin> {
        self.declared.iter().find(|o| o.is(host, port))
    }
}
