//! What a page must show before a side effect may be taken on it, and the check.

use std::future::Future;

use serde::Deserialize;

use super::Page;
use crate::browser::BrowserError;
use crate::worker::adapter::PageKind;
use crate::worker::{SafeStop, TaskError};

/// What a page must show before a side effect may be taken on it. A URL check alone is
/// never enough: the origin, the route, the account and tenant markers, the object, the
/// absence of an interstitial and, when asked, the tenant the API answers for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct Target {
    account: Option<String>,
    tenant: Option<String>,
    route: Option<String>,
    object: Option<String>,
    check_api: bool,
}

impl Target {
    /// A target acting as `account` (the page's [`PageFacts::account`](crate::site::PageFacts::account)).
    pub fn account(account: &str) -> Self {
        Target {
            account: Some(account.to_owned()),
            ..Target::default()
        }
    }
    /// A target acting as `account`: its id, and its tenant when it has one. Ids are what
    /// pages and ledgers name ([`PageFacts::account`](crate::site::PageFacts::account) and
    /// [`RemoteEffect::account`](crate::site::RemoteEffect::account) are compared with
    /// [`Account::id`](crate::worker::Account::id)).
    pub fn for_account(account: &crate::worker::Account) -> Self {
        Target {
            account: Some(account.id.clone()),
            tenant: account.tenant.clone(),
            ..Target::default()
        }
    }
    /// The tenant the page must name ([`PageFacts::tenant`](crate::site::PageFacts::tenant)).
    pub fn tenant(mut self, tenant: &str) -> Self {
        self.tenant = Some(tenant.to_owned());
        self
    }
    /// The route the page must be on, or under by whole path segments (`/threads/42`
    /// accepts `/threads/42` and `/threads/42/x`, never `/threads/421`).
    pub fn route(mut self, route: &str) -> Self {
        self.route = Some(route.to_owned());
        self
    }
    /// The object the page must show ([`PageFacts::object`](crate::site::PageFacts::object)).
    pub fn object(mut self, object: &str) -> Self {
        self.object = Some(object.to_owned());
        self
    }
    /// Also ask the site's API who this session is, and require the same account and tenant:
    /// catches a page that looks right while its API answers for another tenant.
    pub fn api(mut self) -> Self {
        self.check_api = true;
        self
    }
}

/// Where the page is, read in one round trip.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Location {
    origin: String,
    pub(super) path: String,
}

const LOCATION_JS: &str = "return { origin: location.origin, path: location.pathname };";

impl Page {
    pub(super) async fn location(&self) -> Result<Location, TaskError> {
        let ret = self
            .driver()?
            .execute(LOCATION_JS, Vec::new())
            .await
            .map_err(BrowserError::from)?;
        ret.convert().map_err(|_| TaskError::UnexpectedReply {
            what: "the page's location",
        })
    }

    /// Checks that the page is `target`; a mismatch is a typed safe stop. The origin and
    /// route are read from the browser; the kind of page, the account, tenant and object
    /// from the site's adapter ([`Page::read`]), and, when asked, the identity from the site.
    pub fn expect_target(
        &self,
        target: Target,
    ) -> impl Future<Output = Result<(), TaskError>> + Send + use<> {
        let this = self.clone();
        async move {
            let facts = this.read().await?;
            match facts.kind {
                PageKind::SignIn => return Err(SafeStop::NotSignedIn.into()),
                PageKind::Interstitial => return Err(SafeStop::Interstitial.into()),
                PageKind::Stale => return Err(SafeStop::StaleTarget.into()),
                PageKind::Content => {}
            }
            let here = this.step("expect_target", this.location()).await?;
            let spec = &this.shared.spec;
            // What passed, for the evidence: a verification is only as good as its checks.
            let mut checked = vec!["no_interstitial"];
            if here.origin != spec.origin {
                return Err(SafeStop::WrongRoute.into());
            }
            checked.push("origin");
            if let Some(route) = &target.route {
                if !route_matches(&here.path, route) {
                    return Err(SafeStop::WrongRoute.into());
                }
                checked.push("route");
            }
            if let Some(account) = &target.account {
                if facts.account.as_ref() != Some(account) {
                    return Err(SafeStop::WrongAccount.into());
                }
                checked.push("account");
            }
            if let Some(tenant) = &target.tenant {
                if facts.tenant.as_ref() != Some(tenant) {
                    return Err(SafeStop::WrongTenant.into());
                }
                checked.push("tenant");
            }
            if let Some(object) = &target.object {
                if facts.object.as_ref() != Some(object) {
                    return Err(SafeStop::WrongObject.into());
                }
                checked.push("object");
            }
            if target.check_api {
                let who = this.identity().await?;
                if target
                    .account
                    .as_ref()
                    .is_some_and(|a| *a != who.account_id)
                {
                    return Err(SafeStop::WrongAccount.into());
                }
                if target.tenant.is_some() && target.tenant != who.tenant_id
                    || facts.tenant != who.tenant_id
                {
                    return Err(SafeStop::WrongTenant.into());
                }
                checked.push("api_identity");
            }
            this.shared.record_checks(&checked);
            Ok(())
        }
    }
}

/// One check of a verify step, as the evidence's `verified` names it: what an agent that
/// verifies its target with its own code reports with [`Worker::record_checks`](crate::worker::Worker::record_checks)
/// (what [`Page::expect_target`](super::Page::expect_target) records by itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TargetCheck {
    /// The page is on the site's origin.
    Origin,
    /// The page is the target route.
    Route,
    /// The page is served as the expected account.
    Account,
    /// The page is served in the expected tenant.
    Tenant,
    /// The page shows the target object.
    Object,
    /// The site's API, asked from the page, names the expected account and tenant.
    ApiIdentity,
    /// No login or consent interstitial stands before the target.
    NoInterstitial,
}

impl TargetCheck {
    /// Every check, in the order the evidence lists them.
    pub const ALL: [TargetCheck; 7] = [
        TargetCheck::Origin,
        TargetCheck::Route,
        TargetCheck::Account,
        TargetCheck::Tenant,
        TargetCheck::Object,
        TargetCheck::ApiIdentity,
        TargetCheck::NoInterstitial,
    ];

    /// Its name in the evidence: `origin`, `route`, `account`, `tenant`, `object`,
    /// `api_identity`, `no_interstitial`.
    pub fn name(self) -> &'static str {
        match self {
            TargetCheck::Origin => "origin",
            TargetCheck::Route => "route",
            TargetCheck::Account => "account",
            TargetCheck::Tenant => "tenant",
            TargetCheck::Object => "object",
            TargetCheck::ApiIdentity => "api_identity",
            TargetCheck::NoInterstitial => "no_interstitial",
        }
    }

    /// The check of that [`name`](Self::name), if it is one.
    pub fn from_name(name: &str) -> Option<TargetCheck> {
        TargetCheck::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// Whether `path` is `route` or lies under it, by whole path segments: `/threads/4` is
/// not a prefix of `/threads/42`.
fn route_matches(path: &str, route: &str) -> bool {
    match path.strip_prefix(route) {
        Some(rest) => rest.is_empty() || rest.starts_with('/') || route.ends_with('/'),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{Target, route_matches};

    #[test]
    #[cfg(feature = "fixture-site")]
    fn a_target_for_an_account_takes_its_id_and_its_tenant() {
        let demo = &browser_fault_fixtures::DEMO_ACCOUNTS[0];
        let account = crate::worker::Account::from(demo);
        assert_eq!(account.id, demo.id);
        assert_eq!(account.password.expose(), demo.password);
        let t = Target::for_account(&account);
        assert_eq!(t.account.as_deref(), Some(demo.id));
        assert_eq!(t.tenant.as_deref(), Some(demo.tenant));
        let untenanted = crate::worker::Account {
            tenant: None,
            ..account
        };
        assert_eq!(Target::for_account(&untenanted).tenant, None);
    }

    #[test]
    fn a_route_matches_by_whole_path_segments() {
        assert!(route_matches("/threads/42", "/threads/42"));
        assert!(route_matches("/threads/42/edit", "/threads/42"));
        assert!(route_matches("/threads/42", "/threads"));
        assert!(route_matches("/threads/42", "/threads/"));
        assert!(route_matches("/threads/42", "/"));
        assert!(!route_matches("/threads/42", "/threads/4"));
        assert!(!route_matches("/threads/4", "/threads/42"));
        assert!(!route_matches("/threadsx", "/threads"));
    }
}
