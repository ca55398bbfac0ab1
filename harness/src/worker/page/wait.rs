//! Waiting in the page: for its document to load, for an element, for one of several.

use std::future::Future;
use std::time::{Duration, Instant};

use thirtyfour::prelude::*;

use super::{Page, is_no_such_element, is_page_gone};
use crate::browser::BrowserError;
use crate::worker::TaskError;

/// Waits in the page until one of `arguments[0]` (CSS selectors) matches, up to
/// `arguments[1]` ms: checks at once, then on every DOM change (a `MutationObserver`), not
/// by polling. Answers `[index, element]`, `null` on timeout, or `[-1, message]` for a
/// selector the page cannot parse. With `arguments[2]` true it also focuses the element and
/// selects its text (so that inserted text replaces it), and answers `[index, element, selected]`.
const WAIT_JS: &str = r#"
const sels = arguments[0], limit = arguments[1], select = arguments[2] === true;
const done = arguments[arguments.length - 1];
const selectIn = (el) => {
  el.scrollIntoView({ block: 'center' });
  el.focus();
  if (typeof el.select !== 'function') return false;
  try { el.select(); return document.activeElement === el; } catch (e) { return false; }
};
const find = () => {
  for (let i = 0; i < sels.length; i++) {
    let el;
    try { el = document.querySelector(sels[i]); } catch (e) { return [-1, String(e && e.message)]; }
    if (el) return select ? [i, el, selectIn(el)] : [i, el];
  }
  return null;
};
const now = find();
if (now) { done(now); return; }
let timer = null;
const obs = new MutationObserver(() => {
  const hit = find();
  if (hit) { obs.disconnect(); clearTimeout(timer); done(hit); }
});
obs.observe(document, { subtree: true, childList: true, attributes: true });
timer = setTimeout(() => { obs.disconnect(); done(null); }, limit);
"#;

/// Answers once the document has loaded: at once when it has, else on its `load` event.
const LOADED_JS: &str = r#"
const done = arguments[arguments.length - 1];
if (document.readyState === 'complete') { done(true); }
else { window.addEventListener('load', () => done(true), { once: true }); }
"#;

/// How many times in a row a wait starts again on a new page before it gives up: a page
/// that keeps navigating away is an error, not a wait.
const PAGE_GONE_RETRIES: u32 = 20;

/// The longest one wait script runs before the harness asks again: below chromedriver's
/// default script timeout (30 s).
const WAIT_SCRIPT_LIMIT: Duration = Duration::from_secs(25);

impl Page {
    /// Waits until the page's document has loaded. chromedriver can answer a navigation
    /// before that: measured under load (the Roundup suite beside two CPU-bound jobs), a
    /// fresh browser's first navigation came back with the document still `loading` in 5 of
    /// 22 trials of one run, and the site's adapter read a page whose sign-in form was not
    /// yet parsed: the agent took itself for signed in, and the trial's fault never struck.
    /// One command when the page has loaded (the usual case).
    pub(super) async fn wait_loaded(&self) -> Result<(), TaskError> {
        self.execute_async_on_last_document(LOADED_JS, Vec::new())
            .await
            .map(drop)
    }

    /// Runs the async script `js` and returns its answer; when a navigation replaces the
    /// document under it, runs it again on the next one (chromedriver runs a script once a
    /// pending navigation has loaded), up to [`PAGE_GONE_RETRIES`] times in a row.
    pub(super) async fn execute_async_on_last_document(
        &self,
        js: &str,
        args: Vec<serde_json::Value>,
    ) -> Result<serde_json::Value, TaskError> {
        let driver = self.driver()?;
        let mut gone = 0;
        loop {
            match driver.execute_async(js, args.clone()).await {
                Ok(answer) => return Ok(answer.json().clone()),
                Err(e) if is_page_gone(&e) && gone < PAGE_GONE_RETRIES && self.browser_alive() => {
                    gone += 1;
                }
                Err(e) => return Err(BrowserError::from(e).into()),
            }
        }
    }

    /// Waits until an element matches `selector`; returns it.
    pub(super) async fn wait_element(&self, selector: &str) -> Result<WebElement, TaskError> {
        self.wait_first(&[selector]).await.map(|(_, el)| el)
    }

    /// Waits until one of `selectors` matches, within the step timeout; returns which, and
    /// the element. The page itself watches for it ([`WAIT_JS`]): one command when the
    /// element is there, and an answer as soon as it appears, where polling found it up to
    /// 50 ms late and cost a failed lookup per round. A navigation that unloads the page
    /// during the wait ends the script with an error; the next command waits for the new
    /// page, and the wait goes on there.
    async fn wait_first<S: AsRef<str>>(
        &self,
        selectors: &[S],
    ) -> Result<(usize, WebElement), TaskError> {
        self.wait_in_page(selectors, false)
            .await
            .map(|(i, el, _)| (i, el))
    }

    /// [`Page::wait_first`]; with `select`, the element is also focused and its text
    /// selected in the same command, and the third value says whether that worked.
    pub(super) async fn wait_in_page<S: AsRef<str>>(
        &self,
        selectors: &[S],
        select: bool,
    ) -> Result<(usize, WebElement, bool), TaskError> {
        let driver = self.driver()?;
        let limit = self.shared.spec.step_timeout;
        let deadline = Instant::now() + limit;
        let list: Vec<&str> = selectors.iter().map(AsRef::as_ref).collect();
        let not_found = || TaskError::NotFound {
            selector: list.join(" | "),
            after: limit,
        };
        let mut gone = 0;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(not_found());
            }
            let wait_ms = u64::try_from(left.min(WAIT_SCRIPT_LIMIT).as_millis()).unwrap_or(0);
            let answer = driver
                .execute_async(
                    WAIT_JS,
                    vec![
                        serde_json::json!(list),
                        serde_json::json!(wait_ms),
                        serde_json::json!(select),
                    ],
                )
                .await;
            let value = match answer {
                Ok(ret) => ret.json().clone(),
                Err(e) if is_page_gone(&e) && gone < PAGE_GONE_RETRIES && self.browser_alive() => {
                    // The page went away under the script (a navigation): ask the next one.
                    gone += 1;
                    continue;
                }
                Err(e) => return Err(BrowserError::from(e).into()),
            };
            match value.as_array().map(Vec::as_slice) {
                None => continue,
                Some([index, el, rest @ ..]) => match index.as_i64() {
                    Some(i) if i >= 0 => {
                        let el = WebElement::from_json(el.clone(), driver.handle().clone())
                            .map_err(BrowserError::from)?;
                        let selected = rest
                            .first()
                            .and_then(serde_json::Value::as_bool)
                            .unwrap_or(false);
                        return Ok((usize::try_from(i).unwrap_or(0), el, selected));
                    }
                    _ => {
                        // A selector the page cannot parse: chromedriver's own lookup names
                        // the error as it always did.
                        for selector in &list {
                            if let Err(e) = driver.find(By::Css(*selector)).await
                                && !is_no_such_element(&e)
                            {
                                return Err(BrowserError::from(e).into());
                            }
                        }
                        return Err(TaskError::UnexpectedReply {
                            what: "a wait in the page",
                        });
                    }
                },
                Some(_) => {
                    return Err(TaskError::UnexpectedReply {
                        what: "a wait in the page",
                    });
                }
            }
        }
    }

    /// Waits until an element matches `selector` (auto-waiting, no sleeps in the scenario).
    pub fn wait_for(
        &self,
        selector: &str,
    ) -> impl Future<Output = Result<(), TaskError>> + Send + use<> {
        let selector = selector.to_owned();
        self.stepped("wait_for", move |this| async move {
            this.wait_element(&selector).await.map(drop)
        })
    }

    /// Waits until one of `selectors` matches; returns the index of the first that does.
    /// For outcomes with several possible pages (sent, or refused as stale).
    pub fn wait_for_any(
        &self,
        selectors: &[&str],
    ) -> impl Future<Output = Result<usize, TaskError>> + Send + use<> {
        let selectors: Vec<String> = selectors.iter().map(|s| (*s).to_owned()).collect();
        self.stepped("wait_for_any", move |this| async move {
            this.wait_first(&selectors).await.map(|(i, _)| i)
        })
    }
}
