//! The bundled fixture site's adapter: its conventions, written against the public API
//! like any user's adapter.
//!
//! The fixture marks every page on `<body>`: `data-page` (`login`, `thread`, `consent`,
//! `login-interstitial`, `stale`…), `data-account-id` and `data-tenant-id`, and the object
//! on `[data-object-id]`. Its API answers `GET /api/me` and `GET /api/effects/{key}`.

use async_trait::async_trait;
use serde::Deserialize;

use super::{Http, Identity, PageFacts, PageKind, RemoteEffect, Site, SiteError};
use crate::journal::RequestKey;
use crate::worker::{Account, EffectStatus, Page, SafeStop, TaskError};

/// The bundled fixture site as a [`Site`].
///
/// Its ledger is read over HTTP from the site's token-guarded ledger route, when the adapter
/// knows it ([`Fixture::with_ledger_url`]); the harness reads a fixture site it started
/// itself in-process.
#[derive(Clone, Debug, Default)]
pub struct Fixture {
    ledger_url: Option<String>,
    http: Http,
}

impl Fixture {
    /// The adapter, for the worker side (sign-in, page markers, API).
    pub fn new() -> Self {
        Fixture::default()
    }

    /// The adapter with the URL of the site's ledger (`FixtureSite::ledger_url`), so that
    /// [`Site::ledger`] works from outside the site's process.
    pub fn with_ledger_url(mut self, url: impl Into<String>) -> Self {
        self.ledger_url = Some(url.into());
        self
    }

    /// The adapter reading the ledger with `http` (a site reached over HTTPS under a name
    /// of its own: [`Http::resolve`], [`Http::trust_root_pem`]).
    pub fn with_http(mut self, http: Http) -> Self {
        self.http = http;
        self
    }

    /// The bundled site's answer to a send, read as a confirm step must read it: a side
    /// effect's `.confirm(Fixture::observe_sent)` on the bundled site. `Ok` only for the
    /// message carrying `key` (`[data-sent-key]`); [`SafeStop::StaleTarget`] for the stale
    /// page; and [`TaskError::UnexpectedReply`], which sends the protocol to reconcile, for
    /// every answer that says nothing of whether this send landed: the site's unavailable
    /// page, a page that is not the site's at all (the fault proxy's error page: a copy that
    /// misses it waits out the step timeout), and a success notice without this key's
    /// message (another send's answer). Tried in that order; the site lists its messages
    /// before its notice, so the list is whole once the notice is there.
    pub async fn observe_sent(p: Page, key: RequestKey) -> Result<(), TaskError> {
        let sent = format!("[data-sent-key=\"{key}\"]");
        let answers = [
            sent.as_str(),
            "body[data-page=stale]",
            "body[data-page=unavailable]",
            "body:not([data-page])",
            "#sent-notice",
        ];
        match p.wait_for_any(&answers).await? {
            0 => Ok(()),
            1 => Err(SafeStop::StaleTarget.into()),
            4 => Err(TaskError::UnexpectedReply {
                what: "the send (a success that is not its own)",
            }),
            _ => Err(TaskError::UnexpectedReply {
                what: "the send (an error page)",
            }),
        }
    }
}

/// The markers of the current page, read in one round trip.
#[derive(Debug, Default, Deserialize)]
struct Markers {
    page: Option<String>,
    account: Option<String>,
    tenant: Option<String>,
    object: Option<String>,
}

const MARKERS_JS: &str = r#"
const b = document.body, o = document.querySelector('[data-object-id]');
return { page: b ? (b.dataset.page || null) : null,
  account: b ? (b.dataset.accountId || null) : null,
  tenant: b ? (b.dataset.tenantId || null) : null,
  object: o ? o.dataset.objectId : null };
"#;

async fn markers(page: &Page) -> Result<Markers, TaskError> {
    let value = page.script(MARKERS_JS).await?;
    serde_json::from_value(value).map_err(|_| TaskError::UnexpectedReply {
        what: "page markers",
    })
}

#[derive(Deserialize)]
struct Me {
    account_id: String,
    tenant_id: String,
}

#[async_trait]
impl Site for Fixture {
    async fn sign_in(&self, page: &Page, account: &Account) -> Result<(), TaskError> {
        page.fill("#login-form input[name=username]", &account.username)
            .await?;
        page.fill(
            "#login-form input[name=password]",
            account.password.expose(),
        )
        .await?;
        page.click("button#login").await?;
        // The answer: another page, or the form again with an error.
        match page
            .wait_for_any(&["#login-error", "body:not([data-page=login])"])
            .await?
        {
            0 => Err(SafeStop::NotSignedIn.into()),
            _ => Ok(()),
        }
    }

    async fn read_page(&self, page: &Page) -> Result<PageFacts, TaskError> {
        let m = markers(page).await?;
        let kind = match m.page.as_deref() {
            Some("login") => PageKind::SignIn,
            Some("login-interstitial" | "consent") => PageKind::Interstitial,
            Some("stale") => PageKind::Stale,
            _ => PageKind::Content,
        };
        Ok(PageFacts {
            kind,
            label: m.page,
            account: m.account,
            tenant: m.tenant,
            object: m.object,
        })
    }

    async fn identity(&self, page: &Page) -> Result<Identity, TaskError> {
        let (status, body) = page.api_get("/api/me").await?;
        if status == 401 || status == 403 {
            return Err(SafeStop::NotSignedIn.into());
        }
        let me: Me = serde_json::from_value(body)
            .map_err(|_| TaskError::UnexpectedReply { what: "/api/me" })?;
        Ok(Identity {
            account_id: me.account_id,
            tenant_id: Some(me.tenant_id),
        })
    }

    async fn effect_status(
        &self,
        page: &Page,
        key: &RequestKey,
    ) -> Result<EffectStatus, TaskError> {
        let (status, body) = page.api_get(&format!("/api/effects/{key}")).await?;
        if status == 401 {
            return Err(SafeStop::NotSignedIn.into());
        }
        match body.get("exists").and_then(serde_json::Value::as_bool) {
            Some(true) => Ok(EffectStatus::Present),
            Some(false) => Ok(EffectStatus::Absent),
            None => Err(TaskError::UnexpectedReply {
                what: "the effect status",
            }),
        }
    }

    async fn ledger(&self) -> Result<Vec<RemoteEffect>, SiteError> {
        #[derive(Deserialize)]
        struct Entry {
            seq: u64,
            request_key: String,
            account: String,
            tenant: String,
            object: String,
            #[serde(default)]
            body: Option<String>,
        }
        let url = self
            .ledger_url
            .as_deref()
            .ok_or(SiteError::Unsupported("read the ledger without its URL"))?;
        let entries: Vec<Entry> = self.http.get_json(url).await?;
        Ok(entries
            .into_iter()
            .map(|e| RemoteEffect {
                seq: e.seq,
                request_key: e.request_key,
                account: e.account,
                tenant: Some(e.tenant),
                object: e.object,
                payload: e.body,
            })
            .collect())
    }

    fn is_sign_in_request(&self, method: &str, path: &str) -> bool {
        method == "POST" && path == "/login"
    }

    fn is_effect_request(&self, method: &str, path: &str) -> bool {
        // A message sent to a thread: `POST /threads/{id}/messages`.
        method == "POST" && path.starts_with("/threads/") && path.ends_with("/messages")
    }
}
