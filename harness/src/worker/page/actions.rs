//! Navigation, fields, reads, scripts, cookies and fetches from inside the page.

use std::future::Future;

use thirtyfour::prelude::*;

use super::Page;
use crate::browser::BrowserError;
use crate::worker::TaskError;

/// GETs `arguments[0]` from the page when it is on the origin `arguments[1]`; answers
/// `[status, body]`, or `[-1, '']` when the page is elsewhere (the caller goes to the origin
/// first): the location check and the fetch in one command.
const FETCH_JS: &str = r#"
const done = arguments[arguments.length - 1];
if (location.origin !== arguments[1]) { done([-1, '']); return; }
fetch(arguments[0], { credentials: 'same-origin', headers: { 'Accept': 'application/json, text/html;q=0.9, */*;q=0.8' } })
  .then(r => r.text().then(t => done([r.status, t])))
  .catch(() => done([0, '']));
"#;

impl Page {
    /// Navigates to `route` on the site and waits for the load.
    pub fn goto(&self, route: &str) -> impl Future<Output = Result<(), TaskError>> + Send + use<> {
        let url = format!("{}{}", self.shared.spec.origin, route);
        self.stepped("goto", move |this| async move {
            this.driver()?.goto(url).await.map_err(BrowserError::from)?;
            this.wait_loaded().await
        })
    }

    /// Puts `value` into the field matching `selector`, replacing what it held, as a user's
    /// paste would: the field is focused and its text selected, then `value` is inserted in
    /// one DevTools command (`Input.insertText`, what Playwright's `fill` does), which fires
    /// the field's `input` event. A key per character took one WebDriver round trip for the
    /// clear and a slow key dispatch per character; [`Page::type_keys`] still does that, for
    /// a page that listens to keys. A field that cannot be selected (a `contenteditable`),
    /// or an endpoint without DevTools, gets the keys.
    pub fn fill(
        &self,
        selector: &str,
        value: &str,
    ) -> impl Future<Output = Result<(), TaskError>> + Send + use<> {
        let selector = selector.to_owned();
        let value = value.to_owned();
        self.stepped("fill", move |this| async move {
            // Found, focused and selected in one command.
            let (_, el, selected) = this.wait_in_page(&[&selector], true).await?;
            let driver = this.driver()?;
            if selected && !value.is_empty() {
                let inserted = driver
                    .cdp()
                    .send_raw("Input.insertText", serde_json::json!({ "text": value }))
                    .await;
                if inserted.is_ok() {
                    return Ok(());
                }
            }
            type_into(&el, value).await
        })
    }

    /// Types `value` into the field matching `selector` a key at a time, replacing what it
    /// held: slower than [`Page::fill`], for a page that reacts to each key.
    pub fn type_keys(
        &self,
        selector: &str,
        value: &str,
    ) -> impl Future<Output = Result<(), TaskError>> + Send + use<> {
        let selector = selector.to_owned();
        let value = value.to_owned();
        self.stepped("type_keys", move |this| async move {
            let el = this.wait_element(&selector).await?;
            type_into(&el, value).await
        })
    }

    /// The text of the element matching `selector`, as rendered: WebDriver's element text,
    /// after CSS (`text-transform: uppercase` shows `alice` as `ALICE`, hidden text is left
    /// out, whitespace collapsed). For the value a page carries, compare an attribute
    /// ([`Page::attr`]) or its `textContent` instead.
    pub fn text(
        &self,
        selector: &str,
    ) -> impl Future<Output = Result<String, TaskError>> + Send + use<> {
        let selector = selector.to_owned();
        self.stepped("text", move |this| async move {
            Ok(this
                .wait_element(&selector)
                .await?
                .text()
                .await
                .map_err(BrowserError::from)?)
        })
    }

    /// An attribute of the element matching `selector`.
    pub fn attr(
        &self,
        selector: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<String>, TaskError>> + Send + use<> {
        let selector = selector.to_owned();
        let name = name.to_owned();
        self.stepped("attr", move |this| async move {
            Ok(this
                .wait_element(&selector)
                .await?
                .attr(&name)
                .await
                .map_err(BrowserError::from)?)
        })
    }

    /// Runs `script` in the page (a function body: `return …` gives the value back) and
    /// returns its value as JSON. For a site adapter's reads; an agent's side effects go
    /// through [`Page::click`] and [`Page::fill`].
    pub fn script(
        &self,
        script: &str,
    ) -> impl Future<Output = Result<serde_json::Value, TaskError>> + Send + use<> {
        let script = script.to_owned();
        self.stepped("script", move |this| async move {
            let ret = this
                .driver()?
                .execute(&script, Vec::new())
                .await
                .map_err(BrowserError::from)?;
            Ok(ret.json().clone())
        })
    }

    /// The path of the current page (`/threads/42`).
    pub fn path(&self) -> impl Future<Output = Result<String, TaskError>> + Send + use<> {
        self.stepped(
            "path",
            |this| async move { Ok(this.location().await?.path) },
        )
    }

    /// Deletes every cookie of the browser for the current page's site (a signed-out
    /// browser). The profile keeps its other state.
    pub fn delete_cookies(&self) -> impl Future<Output = Result<(), TaskError>> + Send + use<> {
        self.stepped("delete_cookies", move |this| async move {
            this.driver()?
                .delete_all_cookies()
                .await
                .map_err(BrowserError::from)?;
            Ok(())
        })
    }

    /// GETs a route of the site from inside the page, with the session's cookies (the
    /// browser's own request: through the fault proxy when there is one). Read-only by
    /// contract: for probes and reconciliation. Returns the HTTP status and the body as text.
    pub fn fetch(
        &self,
        route: &str,
    ) -> impl Future<Output = Result<(u16, String), TaskError>> + Send + use<> {
        let route = route.to_owned();
        self.stepped("fetch", move |this| async move {
            let driver = this.driver()?;
            let origin = &this.shared.spec.origin;
            let args = vec![serde_json::json!(route), serde_json::json!(origin)];
            let mut went_home = false;
            loop {
                let ret = driver
                    .execute_async(FETCH_JS, args.clone())
                    .await
                    .map_err(BrowserError::from)?;
                let (status, body): (i64, String) =
                    ret.convert().map_err(|_| TaskError::UnexpectedReply {
                        what: "a fetch from the page",
                    })?;
                match u16::try_from(status) {
                    Ok(status) => return Ok((status, body)),
                    // Elsewhere (a blank or foreign page): the site's origin first, once.
                    Err(_) if !went_home => {
                        went_home = true;
                        driver
                            .goto(format!("{origin}/"))
                            .await
                            .map_err(BrowserError::from)?;
                    }
                    Err(_) => {
                        return Err(TaskError::UnexpectedReply {
                            what: "a fetch from the page (not on the site's origin)",
                        });
                    }
                }
            }
        })
    }

    /// GETs a JSON route of the site from inside the page ([`Page::fetch`]). Returns the
    /// HTTP status and the parsed body (`Null` when it is not JSON).
    pub fn api_get(
        &self,
        route: &str,
    ) -> impl Future<Output = Result<(u16, serde_json::Value), TaskError>> + Send + use<> {
        let fetch = self.fetch(route);
        async move {
            let (status, body) = fetch.await?;
            Ok((
                status,
                serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
            ))
        }
    }

    /// The value of the browser's cookie `name` for the current page, if it has one
    /// (HttpOnly cookies included). A cookie value is a secret: the trial redacts the value
    /// of every cookie its browsers held from all evidence, and counts each occurrence.
    pub fn cookie(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<crate::worker::Secret>, TaskError>> + Send + use<> {
        let name = name.to_owned();
        self.stepped("cookie", move |this| async move {
            let cookies = this
                .driver()?
                .get_all_cookies()
                .await
                .map_err(BrowserError::from)?;
            Ok(cookies
                .into_iter()
                .find(|c| c.name == name)
                .map(|c| crate::worker::Secret::new(c.value)))
        })
    }

    /// A PNG screenshot of the page.
    pub fn screenshot(&self) -> impl Future<Output = Result<Vec<u8>, TaskError>> + Send + use<> {
        self.stepped("screenshot", move |this| async move {
            Ok(this
                .driver()?
                .screenshot_as_png()
                .await
                .map_err(BrowserError::from)?)
        })
    }
}

/// Clears a field, then types `value` into it a key at a time.
async fn type_into(el: &WebElement, value: String) -> Result<(), TaskError> {
    el.clear().await.map_err(BrowserError::from)?;
    el.send_keys(value).await.map_err(BrowserError::from)?;
    Ok(())
}
