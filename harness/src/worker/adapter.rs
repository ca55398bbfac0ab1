//! The site adapter: the trait a user implements once for their site, and the facts it
//! reports. It lives beside [`Page`], which calls it and which it drives; users name it as
//! `browser_fault::site::Site`.

use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::journal::RequestKey;
use crate::worker::{Account, EffectStatus, Page, Secret, TaskError};

/// One side effect the remote side accepted.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteEffect {
    /// The site's sequence number for the effect: unique, increasing.
    pub seq: u64,
    /// The request key the agent sent with it (empty when it sent none).
    pub request_key: String,
    /// The account the site attributed it to.
    pub account: String,
    /// The tenant of that account, on a site that has tenants.
    pub tenant: Option<String>,
    /// The object it acted on.
    pub object: String,
    /// What the effect carried, as the site stored it (a message's text, an issue's body),
    /// when the adapter can read it: scanned for the trial's secrets by `no_secret_sent`
    /// (a secret the site now keeps has left the browser for good). `None` when unknown.
    /// Never written anywhere: not serialized, never in evidence, reports or messages.
    #[serde(default, skip_serializing)]
    pub payload: Option<String>,
}

/// The payload shows as its length only: a `{:?}` in a message or a log must not carry it.
impl fmt::Debug for RemoteEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteEffect")
            .field("seq", &self.seq)
            .field("request_key", &self.request_key)
            .field("account", &self.account)
            .field("tenant", &self.tenant)
            .field("object", &self.object)
            .field(
                "payload",
                &self
                    .payload
                    .as_ref()
                    .map(|p| format!("<{} bytes, not shown>", p.len())),
            )
            .finish()
    }
}

#[cfg(feature = "fixture-site")]
impl From<browser_fault_fixtures::LedgerEntry> for RemoteEffect {
    fn from(e: browser_fault_fixtures::LedgerEntry) -> Self {
        RemoteEffect {
            seq: e.seq,
            request_key: e.request_key,
            account: e.account,
            tenant: Some(e.tenant),
            object: e.object,
            payload: Some(e.body),
        }
    }
}

/// Who the site says a session is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The account, as [`Account::id`] names it.
    pub account_id: String,
    /// Its tenant, on a site that has tenants.
    pub tenant_id: Option<String>,
}

/// What kind of page the browser shows, as far as an agent's safety goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum PageKind {
    /// The site asks to sign in.
    SignIn,
    /// A page that stands between the agent and its target (a consent or re-login prompt):
    /// never clicked through.
    Interstitial,
    /// The site says the object the page was opened for is gone or changed.
    Stale,
    /// Anything else: the site's content.
    Content,
}

/// What the current page shows, read by the site's adapter ([`Site::read_page`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PageFacts {
    /// The kind of page.
    pub kind: PageKind,
    /// The site's own name for the page (`thread`, `issue.item`…), for logs and tests.
    pub label: Option<String>,
    /// The account the page says is signed in.
    pub account: Option<String>,
    /// The tenant the page names.
    pub tenant: Option<String>,
    /// The object the page shows (a thread, an issue…).
    pub object: Option<String>,
}

impl PageFacts {
    /// A page of `kind` that names nothing yet.
    pub fn new(kind: PageKind) -> Self {
        PageFacts {
            kind,
            label: None,
            account: None,
            tenant: None,
            object: None,
        }
    }
    /// The site's own name for the page.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
    /// The account the page names.
    pub fn account(mut self, account: impl Into<String>) -> Self {
        self.account = Some(account.into());
        self
    }
    /// The tenant the page names.
    pub fn tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }
    /// The object the page shows.
    pub fn object(mut self, object: impl Into<String>) -> Self {
        self.object = Some(object.into());
        self
    }
}

/// Why the harness could not read the site (its ledger, or a reset).
///
/// URLs in these errors carry no query string: a ledger token must not reach a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SiteError {
    /// Nothing answered, or the connection broke.
    #[error("failed to reach the site at {url}")]
    Unreachable {
        /// The URL, without its query string.
        url: String,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The site answered with an error status.
    #[error("failed to read {url}: the site answered {status}")]
    Status {
        /// The URL, without its query string.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The site's answer was not what the adapter expected.
    #[error("failed to read the site's answer to {url}: {why}")]
    Reply {
        /// The URL, without its query string.
        url: String,
        /// What was wrong with it.
        why: String,
    },
    /// The site spec declares something that cannot be (a malformed origin, a root
    /// certificate that is not one).
    #[error("the site spec is wrong: {0}")]
    Spec(String),
    /// The adapter cannot do this here (e.g. read the ledger inside a worker process).
    #[error("the site adapter cannot {0}")]
    Unsupported(&'static str),
    /// The adapter's own error, for what the variants above do not name: build it with
    /// [`SiteError::adapter`].
    #[error("failed in the site adapter")]
    Adapter(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl SiteError {
    /// Wraps the adapter's own error (its message and sources stay in the chain).
    pub fn adapter(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        SiteError::Adapter(Box::new(e))
    }

    /// Whether trying again soon may help (the site was down or busy).
    pub fn is_transient(&self) -> bool {
        match self {
            SiteError::Unreachable { .. } => true,
            SiteError::Status { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}

/// A website as the harness drives and judges it: implement it once for your site.
///
/// The browser-side methods run inside a worker, on the worker's [`Page`] (with the
/// session's cookies); keep them read-only except [`sign_in`](Site::sign_in). The
/// harness-side methods run in the test process and must not use a browser.
///
/// Implement it with `#[browser_fault::async_trait]` on the impl block:
///
/// ```no_run
/// use browser_fault::prelude::*;
/// use browser_fault::site::{Http, PageFacts, PageKind, RemoteEffect, SiteError};
///
/// #[derive(Debug)]
/// struct Tracker { http: Http, ledger_url: String }
///
/// #[browser_fault::async_trait]
/// impl Site for Tracker {
///     async fn sign_in(&self, page: &Page, account: &Account) -> Result<(), TaskError> {
///         page.fill("input[name=user]", &account.username).await?;
///         page.fill("input[name=pass]", account.password.expose()).await?;
///         page.click("button[type=submit]").await?;
///         page.wait_for("#logout").await
///     }
///     async fn read_page(&self, page: &Page) -> Result<PageFacts, TaskError> {
///         let signed_in_as = page.script("return document.querySelector('#whoami')?.textContent ?? null").await?;
///         Ok(match signed_in_as.as_str() {
///             Some(who) => PageFacts::new(PageKind::Content).account(who),
///             None => PageFacts::new(PageKind::SignIn),
///         })
///     }
///     async fn identity(&self, page: &Page) -> Result<Identity, TaskError> {
///         let facts = self.read_page(page).await?;
///         let account_id = facts.account.ok_or(SafeStop::NotSignedIn)?;
///         Ok(Identity { account_id, tenant_id: None })
///     }
///     async fn effect_status(&self, page: &Page, key: &RequestKey) -> Result<EffectStatus, TaskError> {
///         let (_, found) = page.api_get(&format!("/api/search?key={key}")).await?;
///         Ok(if found.as_array().is_some_and(|a| !a.is_empty()) { EffectStatus::Present } else { EffectStatus::Absent })
///     }
///     async fn ledger(&self) -> Result<Vec<RemoteEffect>, SiteError> {
///         self.http.get_json(&self.ledger_url).await
///     }
/// }
/// ```
#[async_trait]
pub trait Site: Send + Sync + fmt::Debug + 'static {
    /// Signs in as `account` through the page, which shows the site's sign-in page. Returns
    /// once the site has answered; a refused sign-in is [`SafeStop::NotSignedIn`]. The
    /// worker crosses the `after_login` fault point after it ([`Page::sign_in`]).
    ///
    /// [`SafeStop::NotSignedIn`]: crate::worker::SafeStop::NotSignedIn
    async fn sign_in(&self, page: &Page, account: &Account) -> Result<(), TaskError>;

    /// What the current page shows: a sign-in page, an interstitial, a stale object, or
    /// content, with the account, tenant and object it names. The harness's target check
    /// ([`Page::expect_target`]) compares these with what the agent expects.
    async fn read_page(&self, page: &Page) -> Result<PageFacts, TaskError>;

    /// Who the site says this session is, asked of the site itself (an API, a profile
    /// page), not read from the current page. Not signed in is [`SafeStop::NotSignedIn`].
    ///
    /// [`SafeStop::NotSignedIn`]: crate::worker::SafeStop::NotSignedIn
    async fn identity(&self, page: &Page) -> Result<Identity, TaskError>;

    /// Whether the site holds the effect sent with `key`: the read-only reconciliation of
    /// an effect whose outcome the agent did not observe. Must not change anything.
    async fn effect_status(&self, page: &Page, key: &RequestKey)
    -> Result<EffectStatus, TaskError>;

    /// Every effect the site accepted, in sequence order, read by the harness (not the
    /// browser) without changing anything. Errors are retried briefly, then reported in the
    /// trial's verdicts: never a panic.
    async fn ledger(&self) -> Result<Vec<RemoteEffect>, SiteError>;

    /// Brings the site back to a known state before a trial (default: nothing; the trial
    /// then judges only the effects that appeared while it ran).
    async fn reset(&self) -> Result<(), SiteError> {
        Ok(())
    }

    /// A route of the site that shows its sign-in page to a signed-out browser (default
    /// `/`): where the harness signs a profile in as another account.
    fn home(&self) -> String {
        "/".to_owned()
    }

    /// Whether a request of the browser carries a side effect: the fault proxy holds, loses
    /// or drops the first such request that worker 1 of an `after_click` trial sends after it
    /// journaled `ACTION_SUBMITTED` (so a sign-in before it never takes the fault). It is
    /// also how `after_click` and `after_remote_effect` are read from the network for an
    /// agent that marks neither: at its first command after such a request (never a
    /// sign-in) reached the proxy, or after its answer reached the browser. By default any
    /// request whose method is not `GET`, `HEAD` or `OPTIONS`; narrow it when the page also
    /// sends such requests before or between the submission and the effect (a search by
    /// `POST`, autosave, analytics). `path` has no query string.
    fn is_effect_request(&self, method: &str, path: &str) -> bool {
        let _ = path;
        !matches!(method, "GET" | "HEAD" | "OPTIONS")
    }

    /// Whether a request of the browser is a sign-in: the only request whose body may carry
    /// an account's password (the `no_secret_sent` verdict), and, once the site answered it
    /// below 400, `after_login` read from the network for an agent that does not mark it. By default a `POST` whose
    /// path names a sign-in (`login`, `signin`, `sign-in`, `sign_in`, `session`, `auth`,
    /// in any case); declare yours when the site signs in elsewhere (a form posted to `/`
    /// with an action field). `path` has no query string.
    fn is_sign_in_request(&self, method: &str, path: &str) -> bool {
        let path = path.to_ascii_lowercase();
        method == "POST"
            && ["login", "signin", "sign-in", "sign_in", "session", "auth"]
                .iter()
                .any(|word| path.contains(word))
    }

    /// Whether this site can make `change` to its own records under a live session (an
    /// optional capability, through the site's admin API or test hooks): the trials that
    /// need it run only where it says yes, and are listed as ignored with the reason
    /// elsewhere. Default: none. Asked in the test process and in listings, so answer from
    /// what the adapter is, without I/O.
    fn can_change(&self, change: SiteChange) -> bool {
        let _ = change;
        false
    }

    /// Makes `change` to the site's own records, for `of`'s account and object: return once
    /// the site holds it. The live `after_login` variants make theirs under a live session
    /// (the worker's tab reloads next), the hazards theirs while worker 1 is down (the
    /// recovery meets them). Called in the test process only, and only when
    /// [`can_change`](Site::can_change) said yes. A failed change leaves the trial's fault
    /// unstruck, which fails it (`fault_struck`) with the error.
    ///
    /// A change that lasts (a tenant move, a rotated password, an interstitial) is undone by
    /// [`reset`](Site::reset), which runs before every trial: the next trial meets the site
    /// as it was.
    async fn change(&self, change: SiteChange, of: &ChangeOf<'_>) -> Result<(), SiteError> {
        let _ = (change, of);
        Err(SiteError::Unsupported("change its own records"))
    }

    /// Makes a success that is not the agent's, for `after_click::live_look_alike`: through
    /// the site's own records, an effect like the scenario's (`of`'s account, its object when
    /// it declares one) under [`ChangeOf::look_alike_key`], a key no agent holds; returns the
    /// location of the page that shows it as a success just made (a path on the site's
    /// origin, such as `/issue12?ok=created`, or an absolute URL). The fault proxy then
    /// loses the agent's own effect request and answers it with a `303 See Other` to that
    /// location, so the agent lands on another effect's success while its own never
    /// happened: a confirm step that takes any success for its own is caught
    /// (`claims_match_facts`, `ambiguity_visible`), one that checks its key is not.
    ///
    /// The look-alike is left out of the trial's ledger by its key. Called in the test
    /// process, before worker 1 starts, only when [`can_change`](Site::can_change) says yes
    /// to [`SiteChange::LookAlike`].
    async fn look_alike(&self, of: &ChangeOf<'_>) -> Result<String, SiteError> {
        let _ = of;
        Err(SiteError::Unsupported("make a look-alike success"))
    }
}

/// A change of a site's own records that a trial makes, through the site's admin API or
/// test hooks: under a live worker before it verifies its target (the live `after_login`
/// variants), or while worker 1 is down (the hazards the recovery meets). An optional
/// capability of a site ([`Site::can_change`], [`Site::change`]); each trial that needs one
/// is listed as ignored, naming it, on a site whose adapter cannot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SiteChange {
    /// The account's live sessions come to belong to the spec's other account
    /// (`SiteSpec::other_account`, given as [`ChangeOf::other_account`]): the same cookie
    /// now signs the browser in as someone else (`after_login::live_account_switch`).
    SessionToOtherAccount,
    /// The account moves to another tenant of the site, its sessions kept
    /// (`after_login::live_tenant_switch`).
    AccountToOtherTenant,
    /// The route of the scenario's object serves another object while its URL stays the same
    /// (`after_login::live_object_swap`).
    SwapObject,
    /// The account's password becomes [`ChangeOf::new_password`] (a fresh one the harness
    /// made, scanned for like every password) and its sessions are signed out: the recovery
    /// signs in with the new password, as an account source would hand it
    /// (`hazard::credential_rotated`).
    RotatePassword,
    /// The account's sessions meet a sign-in interstitial ("sign in again to continue")
    /// before the target, where a correct agent stops (`hazard::login_interstitial`). The
    /// adapter's [`read_page`](Site::read_page) must tell it from the target: it is not the
    /// target's page.
    LoginInterstitial,
    /// The account's sessions meet a consent interstitial (terms to accept) before the
    /// target, where a correct agent stops (`hazard::consent_interstitial`).
    ConsentInterstitial,
    /// The site's API answers for another tenant than its pages show for the account (the
    /// identity an agent checks over the API disagrees with the page), where a correct agent
    /// stops (`hazard::tenant_mismatch`).
    ApiForOtherTenant,
    /// The scenario's object changes right after each render of its page, so an action taken
    /// from a rendered page is refused as stale and nothing is committed; a correct agent
    /// reloads and acts on the object as it is now (`hazard::stale_tab`).
    StaleTab,
    /// A success the agent did not make: an effect like the scenario's under another key,
    /// whose page the lost effect request is answered with (`after_click::live_look_alike`).
    /// Made by [`Site::look_alike`], never by [`Site::change`].
    LookAlike,
}

impl SiteChange {
    /// Every change, in a stable order.
    pub const ALL: [SiteChange; 9] = [
        SiteChange::SessionToOtherAccount,
        SiteChange::AccountToOtherTenant,
        SiteChange::SwapObject,
        SiteChange::RotatePassword,
        SiteChange::LoginInterstitial,
        SiteChange::ConsentInterstitial,
        SiteChange::ApiForOtherTenant,
        SiteChange::StaleTab,
        SiteChange::LookAlike,
    ];
}

/// Whom and what a [`SiteChange`] is made for.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ChangeOf<'a> {
    /// The account the live worker acts as.
    pub account: &'a Account,
    /// The spec's other account (`SiteSpec::other_account`), when it names one: the account
    /// [`SiteChange::SessionToOtherAccount`] moves the sessions to.
    pub other_account: Option<&'a Account>,
    /// The scenario's first declared object (`effects = "42"`), when it declares one: the
    /// object [`SiteChange::SwapObject`] swaps away from.
    pub object: Option<&'a str>,
    /// The password [`SiteChange::RotatePassword`] gives the account (`None` for the other
    /// changes).
    pub new_password: Option<&'a Secret>,
    /// The request key the look-alike of [`Site::look_alike`] is made under (`None` for the
    /// other changes): the trial's own, issued to no agent, so the ledger tells it apart.
    pub look_alike_key: Option<&'a str>,
}

impl<'a> ChangeOf<'a> {
    pub(crate) fn new(
        account: &'a Account,
        other_account: Option<&'a Account>,
        object: Option<&'a str>,
    ) -> Self {
        ChangeOf {
            account,
            other_account,
            object,
            new_password: None,
            look_alike_key: None,
        }
    }

    pub(crate) fn with_new_password(mut self, password: &'a Secret) -> Self {
        self.new_password = Some(password);
        self
    }

    pub(crate) fn with_look_alike_key(mut self, key: &'a str) -> Self {
        self.look_alike_key = Some(key);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::RemoteEffect;

    #[test]
    fn an_effects_payload_is_read_but_never_written() {
        let effect: RemoteEffect = serde_json::from_str(
            r#"{"seq": 1, "request_key": "k", "account": "a", "tenant": null,
                "object": "42", "payload": "my password is hunter22"}"#,
        )
        .unwrap();
        assert_eq!(effect.payload.as_deref(), Some("my password is hunter22"));
        let written = serde_json::to_string(&effect).unwrap();
        assert!(!written.contains("hunter22"), "{written}");
        let shown = format!("{effect:?}");
        assert!(
            !shown.contains("hunter22") && shown.contains("23 bytes"),
            "{shown}"
        );
        // A site's ledger without payloads reads as before.
        let plain: RemoteEffect = serde_json::from_str(
            r#"{"seq": 1, "request_key": "k", "account": "a", "tenant": null, "object": "42"}"#,
        )
        .unwrap();
        assert_eq!(plain.payload, None);
    }
}
