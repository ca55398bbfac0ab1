//! The account a worker acts as, and the secret it signs in with.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A password or other secret: never printed, never serialized into evidence.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret itself, for the one place that must type it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The account a worker must act as.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// The account's id as the site names it on its pages and in its ledger.
    pub id: String,
    /// Its tenant, on a site that has tenants.
    pub tenant: Option<String>,
    /// The login name.
    pub username: String,
    /// The password.
    pub password: Secret,
}

/// A demo account of the bundled fixture site, as the account a worker acts as.
#[cfg(feature = "fixture-site")]
impl From<&browser_fault_fixtures::DemoAccount> for Account {
    fn from(demo: &browser_fault_fixtures::DemoAccount) -> Self {
        Account {
            id: demo.id.to_owned(),
            tenant: Some(demo.tenant.to_owned()),
            username: demo.username.to_owned(),
            password: Secret::new(demo.password.to_owned()),
        }
    }
}
