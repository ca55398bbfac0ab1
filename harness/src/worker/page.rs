//! The page a scenario drives: navigation, auto-waiting element actions, scripts and
//! read-only API calls made inside the browser (with its cookies), and the site's own
//! conventions (sign-in, page facts, identity, effect status) through its
//! [`Site`](crate::site::Site) adapter.
//!
//! Every method returns a future that owns what it needs (`'static`), so a closure like
//! `|p| p.click("button#send")` can hand it back directly. Every step has a timeout; on
//! timeout the session is retired through the identity-checked registry and its browser
//! killed, so the timed-out future can never drive a browser again.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::Deserialize;
use thirtyfour::prelude::*;

use super::adapter::{Identity, PageFacts, PageKind};
use super::{Shared, strike};
use crate::browser::{BrowserError, SessionToken};
use crate::journal::RequestKey;
use crate::plan::Boundary;
use crate::worker::{Account, EffectStatus, SafeStop, TaskError};

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
    /// A target acting as `account` (the page's [`PageFacts::account`]).
    pub fn account(account: &str) -> Self {
        Target {
            account: Some(account.to_owned()),
            ..Target::default()
        }
    }
    /// The tenant the page must name ([`PageFacts::tenant`]).
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
    /// The object the page must show ([`PageFacts::object`]).
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
struct Location {
    origin: String,
    path: String,
}

const LOCATION_JS: &str = "return { origin: location.origin, path: location.pathname };";

/// Clicks `arguments[0]` (an element, or a selector looked up at once); answers whether there
/// was one to click. The click is dispatched from a timer so that the command returns before
/// the navigation it starts: chromedriver waits for a navigation that begins while it is
/// still finishing the command. Measured (`benches/browser.rs`, the site holding the
/// navigation 600 ms): a 0 ms timer (or rAF) was caught 2–3 times in 10, 5–50 ms never;
/// 20 ms keeps a margin and costs about 30 ms less per click and observed navigation than
/// the 50 ms it replaced.
///
/// First it puts a watch on the document (`window.__browserFaultWatch`, once per document)
/// that counts clicks dispatched and done, whether a navigation to another document has
/// begun (the Navigation API's `navigate` event, which fires as it begins, before its
/// request is sent), and the requests the page has pending (`fetch`, `XMLHttpRequest`). The
/// next step waits on it ([`SETTLE_JS`]), so it never reads the page the click is leaving.
const CLICK_JS: &str = r#"
const t = arguments[0];
const el = typeof t === 'string' ? document.querySelector(t) : t;
if (!el) return false;
let s = window.__browserFaultWatch;
if (!s) {
  s = { clicks: 0, clicked: 0, navigating: false, requests: 0, listeners: new Set() };
  window.__browserFaultWatch = s;
  const bump = () => { for (const f of [...s.listeners]) f(); };
  s.bump = bump;
  if (window.navigation) {
    navigation.addEventListener('navigate', (e) => {
      if (!e.destination.sameDocument) { s.navigating = true; bump(); }
    });
    // An intercepted navigation stays in this document and ends with one of these.
    const ended = () => { s.navigating = false; bump(); };
    navigation.addEventListener('navigatesuccess', ended);
    navigation.addEventListener('navigateerror', ended);
  } else {
    window.addEventListener('beforeunload', () => { s.navigating = true; bump(); });
  }
  const begin = () => { s.requests += 1; bump(); };
  const end = () => { s.requests -= 1; bump(); };
  const fetch0 = window.fetch;
  if (typeof fetch0 === 'function') {
    window.fetch = function (...args) {
      begin();
      let p;
      try { p = fetch0.apply(this, args); } catch (e) { end(); throw e; }
      p.then(end, end);
      return p;
    };
  }
  const send0 = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    begin();
    this.addEventListener('loadend', end, { once: true });
    try { return send0.apply(this, args); } catch (e) { end(); throw e; }
  };
}
s.clicks += 1;
el.scrollIntoView({ block: 'center' });
setTimeout(() => { try { el.click(); } finally { s.clicked += 1; s.bump(); } }, 20);
return true;
"#;

/// Answers once what the clicks of [`CLICK_JS`] started is answered: `"new"` when the page
/// is another document (the navigation a click started was answered); else once every
/// dispatched click is done, no navigation to another document has begun, the document has
/// loaded and, with `arguments[2]`, no request is pending: `"idle"` at once, or `"quiet"`
/// once that has lasted `arguments[0]` ms (when > 0); `"busy"` when that was not so after
/// `arguments[1]` ms. Event-driven: the watch calls back on each change. A
/// navigation that begins unloads this document, which ends the script with an error: the
/// caller asks again, and chromedriver answers on the new document.
const SETTLE_JS: &str = r#"
const done = arguments[arguments.length - 1];
const quiet = arguments[0], limit = arguments[1], requests = arguments[2] === true;
const s = window.__browserFaultWatch;
if (!s) { done('new'); return; }
const t0 = performance.now();
let timer = 0;
const finish = (answer) => {
  clearTimeout(timer);
  s.listeners.delete(decide);
  document.removeEventListener('readystatechange', decide);
  done(answer);
};
function decide() {
  clearTimeout(timer);
  const left = limit - (performance.now() - t0);
  const idle = s.clicked >= s.clicks && !s.navigating && document.readyState === 'complete'
    && (!requests || s.requests <= 0);
  if (idle && quiet <= 0) {
    finish('idle');
  } else if (idle) {
    timer = setTimeout(() => finish('quiet'), quiet);
  } else if (left <= 0) {
    finish('busy');
  } else {
    timer = setTimeout(decide, left);
  }
}
s.listeners.add(decide);
document.addEventListener('readystatechange', decide);
decide();
"#;

/// What [`SETTLE_JS`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Settled {
    /// What the clicks started was answered (or they started nothing).
    Answered,
    /// A navigation or request was still pending at the limit.
    Busy,
}

/// How long the page of a click worker 1 is crashed right after must stay quiet (no
/// navigation begun, no request pending, the document loaded) before the click counts as
/// one that sends nothing. A click that navigates or fetches is seen as it starts, not by
/// this wait.
const SETTLE_QUIET: Duration = Duration::from_millis(1000);

/// How long a click worker 1 is crashed right after, or the last click of a worker that
/// ends, waits for the navigation or requests it started to be answered before the worker
/// goes on all the same (a form answered `204 No Content` begins a navigation that never
/// replaces the page); below chromedriver's script timeout.
const SETTLE_BUSY_LIMIT: Duration = Duration::from_secs(20);

/// How long the step after a click waits for the click to be done and the navigation it
/// began to be answered before it runs on the page as it is. A held response keeps
/// chromedriver's command waiting anyway; this bounds only a navigation that never ends.
const SETTLE_NEXT_STEP_LIMIT: Duration = Duration::from_secs(5);

/// How long a click waits for chromedriver's answer before it counts the click as dispatched
/// (see [`Page::click`]). The script itself takes a few ms; only a navigation that the site
/// holds keeps chromedriver from answering, and that navigation means the click went out.
const CLICK_ANSWER_WAIT: Duration = Duration::from_millis(1500);

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

/// The page of a worker's current browser session. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Page {
    shared: Arc<Shared>,
    token: Option<SessionToken>,
}

impl Page {
    pub(crate) fn new(shared: Arc<Shared>, token: Option<SessionToken>) -> Self {
        Page { shared, token }
    }

    fn driver(&self) -> Result<WebDriver, TaskError> {
        let token = self.token.ok_or(BrowserError::Retired)?;
        Ok(self.shared.registry.driver(token)?)
    }

    /// Runs one step under the step timeout; on timeout retires this session.
    async fn step<T>(
        &self,
        name: &'static str,
        fut: impl Future<Output = Result<T, TaskError>>,
    ) -> Result<T, TaskError> {
        if self.shared.fault.halted() {
            // A step struck: this worker is being crashed, and drives its browser no more.
            std::future::pending::<()>().await;
        }
        let limit = self.shared.spec.step_timeout;
        let started = Instant::now();
        let outcome = tokio::time::timeout(limit, async {
            self.settle_after_click().await;
            fut.await
        })
        .await;
        self.shared.fault.add_browser_time(started.elapsed());
        super::trace(&self.shared.log, || {
            format!("step {name} {} ms", started.elapsed().as_millis())
        });
        self.shared.browser_step(self.token, name).await;
        match outcome {
            Ok(Err(TaskError::Browser(BrowserError::Command(e)))) => Err(self.classify(e)),
            Ok(r) => r,
            Err(_) => {
                if let Some(token) = self.token
                    && let Some(mut browser) = self.shared.registry.retire(token)
                {
                    browser.kill();
                }
                self.shared
                    .log
                    .line(&format!("step {name} timed out; session retired"));
                Err(TaskError::Timeout {
                    step: name,
                    after: limit,
                })
            }
        }
    }

    /// Runs `body` on a clone of this page as one step named `name` ([`Page::step`]): what
    /// every action does, so that the future it returns owns what it needs (`'static`).
    fn stepped<T, F, Fut>(
        &self,
        name: &'static str,
        body: F,
    ) -> impl Future<Output = Result<T, TaskError>> + Send + use<T, F, Fut>
    where
        F: FnOnce(Page) -> Fut,
        Fut: Future<Output = Result<T, TaskError>> + Send,
        T: Send,
    {
        let this = self.clone();
        let fut = body(self.clone());
        async move { this.step(name, fut).await }
    }

    /// Whether this session's browser still runs (a retired session's does not count).
    fn browser_alive(&self) -> bool {
        self.token.is_some_and(|t| {
            self.shared
                .registry
                .with_browser(t, crate::browser::Browser::is_alive)
                .unwrap_or(false)
        })
    }

    /// A failed command on a dead browser is a crash, which the worker must notice.
    fn classify(&self, e: Box<thirtyfour::error::WebDriverError>) -> TaskError {
        let alive = self
            .token
            .and_then(|t| {
                self.shared
                    .registry
                    .with_browser(t, crate::browser::Browser::is_alive)
                    .ok()
            })
            .unwrap_or(true);
        if alive {
            TaskError::Browser(BrowserError::Command(e))
        } else {
            TaskError::Browser(BrowserError::Crashed)
        }
    }

    /// Navigates to `route` on the site and waits for the load.
    pub fn goto(&self, route: &str) -> impl Future<Output = Result<(), TaskError>> + Send + use<> {
        let url = format!("{}{}", self.shared.spec.origin, route);
        self.stepped("goto", move |this| async move {
            this.driver()?.goto(url).await.map_err(BrowserError::from)?;
            this.wait_loaded().await
        })
    }

    /// Waits until the page's document has loaded. chromedriver can answer a navigation
    /// before that: measured under load (the Roundup suite beside two CPU-bound jobs), a
    /// fresh browser's first navigation came back with the document still `loading` in 5 of
    /// 22 trials of one run, and the site's adapter read a page whose sign-in form was not
    /// yet parsed: the agent took itself for signed in, and the trial's fault never struck.
    /// One command when the page has loaded (the usual case).
    async fn wait_loaded(&self) -> Result<(), TaskError> {
        self.execute_async_on_last_document(LOADED_JS, Vec::new())
            .await
            .map(drop)
    }

    /// Runs the async script `js` and returns its answer; when a navigation replaces the
    /// document under it, runs it again on the next one (chromedriver runs a script once a
    /// pending navigation has loaded), up to [`PAGE_GONE_RETRIES`] times in a row.
    async fn execute_async_on_last_document(
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
    async fn wait_element(&self, selector: &str) -> Result<WebElement, TaskError> {
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
    async fn wait_in_page<S: AsRef<str>>(
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

    /// Clicks the element matching `selector` once it is there. Returns when the click is
    /// dispatched, not when a navigation it starts has finished: the next step first waits
    /// until the click is done and that navigation has its new document (so it never reads
    /// the page the click is leaving), and a worker that ends right after a click first lets
    /// the navigation or requests it started be answered (so they reach the site before its
    /// browser is ended, in every run).
    pub fn click(
        &self,
        selector: &str,
    ) -> impl Future<Output = Result<(), TaskError>> + Send + use<> {
        let selector = selector.to_owned();
        self.stepped("click", move |this| async move {
            if this.shared.fault.next_step_is_armed() {
                // The worker is crashed right after this click: the crash must come after
                // the request reached the site, in every run, not whenever the kill
                // overtakes it.
                return this.click_and_settle(&selector).await;
            }
            this.click_once_there(&selector).await?;
            // The next step (or the worker's end) waits for what it started.
            this.shared.click_pending.store(true, Ordering::Release);
            this.shared.clicked.store(true, Ordering::Release);
            Ok(())
        })
    }

    /// Clicks `selector` ([`CLICK_JS`]): usually the element is there, looked up and clicked
    /// in one command; else once it appears.
    async fn click_once_there(&self, selector: &str) -> Result<(), TaskError> {
        if !self.dispatch_click(serde_json::json!(selector)).await? {
            let el = self.wait_element(selector).await?;
            let arg = el.to_json().map_err(BrowserError::from)?;
            self.dispatch_click(arg).await?;
        }
        Ok(())
    }

    /// Runs [`CLICK_JS`] on `target` (an element or a selector); returns whether the click
    /// was dispatched; `false`: no element matched the selector yet, and nothing was clicked
    /// (the caller waits for it). An error is returned as it is, never retried: the click may
    /// have gone out.
    async fn dispatch_click(&self, target: serde_json::Value) -> Result<bool, TaskError> {
        // Dispatched from a task of the page, so the command returns at once even when
        // the click starts a navigation whose response the site holds: chromedriver's
        // native click would wait for that navigation. Under load the page's timer can
        // still fire before chromedriver has finished the command, which then waits for
        // the held navigation: the click was dispatched all the same, so the step ends
        // once the command is in, not when chromedriver answers (its answer, or its
        // page-load error, is dropped).
        let driver = self.driver()?;
        let mut command = tokio::spawn(async move { driver.execute(CLICK_JS, vec![target]).await });
        match tokio::time::timeout(CLICK_ANSWER_WAIT, &mut command).await {
            Ok(Ok(answer)) => Ok(answer
                .map_err(BrowserError::from)?
                .json()
                .as_bool()
                .unwrap_or(false)),
            // The command's task cannot panic short of a bug in the client; a click whose
            // answer is lost was still sent.
            Ok(Err(_)) => Ok(true),
            Err(_) => {
                self.shared
                    .log
                    .line("click: dispatched; the page's navigation is still pending");
                Ok(true)
            }
        }
    }

    /// Clicks `selector` ([`CLICK_JS`]) and returns once what the click started was
    /// answered: the navigation's new document is there, or every request the page made is
    /// answered and the page stayed quiet for [`SETTLE_QUIET`] (a click that sends nothing).
    /// So the crash that follows comes after the request reached the site in every run,
    /// under any load: no timing window decides whether a navigation that began late is seen.
    async fn click_and_settle(&self, selector: &str) -> Result<(), TaskError> {
        self.click_once_there(selector).await?;
        if self.settle(SETTLE_QUIET, SETTLE_BUSY_LIMIT, true).await? == Settled::Busy {
            self.shared.log.line(&format!(
                "click: a navigation or request it started was not answered within {} s; crashing after it all the same",
                SETTLE_BUSY_LIMIT.as_secs()
            ));
        }
        Ok(())
    }

    /// Waits until what the clicks on this page started is answered ([`SETTLE_JS`] with
    /// `quiet`, `limit` and whether pending requests count).
    async fn settle(
        &self,
        quiet: Duration,
        limit: Duration,
        requests: bool,
    ) -> Result<Settled, TaskError> {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let args = vec![
            serde_json::json!(ms(quiet)),
            serde_json::json!(ms(limit)),
            serde_json::json!(requests),
        ];
        let answer = self.execute_async_on_last_document(SETTLE_JS, args).await?;
        Ok(if answer.as_str() == Some("busy") {
            Settled::Busy
        } else {
            Settled::Answered
        })
    }

    /// After a click, before the next step: waits until the click is done and a navigation
    /// it began has its new document, so that no step reads or drives the page the click is
    /// leaving (an agent that looks for its message right after clicking send must not find
    /// the one an earlier worker sent on the old page). Bounded by
    /// [`SETTLE_NEXT_STEP_LIMIT`]; a failure here is left for the step itself to meet.
    async fn settle_after_click(&self) {
        if !self.shared.click_pending.swap(false, Ordering::AcqRel) {
            return;
        }
        if let Err(e) = self
            .settle(Duration::ZERO, SETTLE_NEXT_STEP_LIMIT, false)
            .await
        {
            self.shared.log.line(&format!(
                "click: could not see it settle ({}); going on",
                crate::error::error_chain(&e)
            ));
        }
    }

    /// When the worker clicked: waits until what its clicks started on the current page (a
    /// navigation, requests) is answered, up to [`SETTLE_BUSY_LIMIT`], so that a worker that
    /// ends right after a click has its request reach the site before its browser is ended,
    /// in every run. The oracle then judges what the agent sent, not how fast it was killed.
    /// One command when nothing is pending.
    pub(crate) async fn settle_last_click(&self) {
        self.shared.click_pending.store(false, Ordering::Release);
        if !self.shared.clicked.swap(false, Ordering::AcqRel) || self.shared.fault.halted() {
            return;
        }
        match self.settle(Duration::ZERO, SETTLE_BUSY_LIMIT, true).await {
            Ok(Settled::Busy) => self.shared.log.line(&format!(
                "last click: what it started was not answered within {} s",
                SETTLE_BUSY_LIMIT.as_secs()
            )),
            Ok(Settled::Answered) => {}
            Err(e) => self.shared.log.line(&format!(
                "last click: could not see it settle ({})",
                crate::error::error_chain(&e)
            )),
        }
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

    /// The text of the element matching `selector`.
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

    async fn location(&self) -> Result<Location, TaskError> {
        let ret = self
            .driver()?
            .execute(LOCATION_JS, Vec::new())
            .await
            .map_err(BrowserError::from)?;
        ret.convert().map_err(|_| TaskError::UnexpectedReply {
            what: "the page's location",
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

    /// What the page shows, as the site's adapter reads it ([`Site::read_page`]).
    ///
    /// [`Site::read_page`]: crate::site::Site::read_page
    pub fn read(&self) -> impl Future<Output = Result<PageFacts, TaskError>> + Send + use<> {
        self.stepped("read_page", |this| async move {
            let site = this.shared.site.clone();
            site.read_page(&this).await
        })
    }

    /// Whether the site shows its sign-in page.
    pub fn is_sign_in(&self) -> impl Future<Output = Result<bool, TaskError>> + Send + use<> {
        let read = self.read();
        async move { Ok(read.await?.kind == PageKind::SignIn) }
    }

    /// Signs in as `account` through the site's adapter ([`Site::sign_in`]), then crosses
    /// the `after_login` fault point. A refused sign-in is a safe stop
    /// ([`SafeStop::NotSignedIn`]).
    ///
    /// [`Site::sign_in`]: crate::site::Site::sign_in
    pub fn sign_in(
        &self,
        account: &Account,
    ) -> impl Future<Output = Result<(), TaskError>> + Send + use<> {
        let this = self.clone();
        let account = account.clone();
        async move {
            let site = this.shared.site.clone();
            site.sign_in(&this, &account).await?;
            this.shared.log.line("signed in");
            strike(&this.shared, this.token, Boundary::AfterLogin).await;
            Ok(())
        }
    }

    /// Who the site says this session is ([`Site::identity`]). Not signed in is a safe stop.
    ///
    /// [`Site::identity`]: crate::site::Site::identity
    pub fn identity(&self) -> impl Future<Output = Result<Identity, TaskError>> + Send + use<> {
        let this = self.clone();
        async move {
            let site = this.shared.site.clone();
            site.identity(&this).await
        }
    }

    /// The read-only reconciliation of an effect through the site's adapter
    /// ([`Site::effect_status`]), usable as `.reconcile(|p, key| p.effect_status(key))`.
    ///
    /// [`Site::effect_status`]: crate::site::Site::effect_status
    pub fn effect_status(
        &self,
        key: RequestKey,
    ) -> impl Future<Output = Result<EffectStatus, TaskError>> + Send + use<> {
        let this = self.clone();
        async move {
            let site = this.shared.site.clone();
            site.effect_status(&this, &key).await
        }
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

/// Whether `path` is `route` or lies under it, by whole path segments: `/threads/4` is
/// not a prefix of `/threads/42`.
fn route_matches(path: &str, route: &str) -> bool {
    match path.strip_prefix(route) {
        Some(rest) => rest.is_empty() || rest.starts_with('/') || route.ends_with('/'),
        None => false,
    }
}

fn is_no_such_element(e: &WebDriverError) -> bool {
    matches!(
        e.as_inner(),
        thirtyfour::error::WebDriverErrorInner::NoSuchElement(_)
    )
}

/// Whether a script failed because its page went away (a navigation unloaded it), not
/// because of the script or the browser.
fn is_page_gone(e: &WebDriverError) -> bool {
    use thirtyfour::error::WebDriverErrorInner as E;
    matches!(
        e.as_inner(),
        // chromedriver answers a script whose page unloaded with "script timeout" at once.
        E::ScriptTimeout(_)
            | E::JavascriptError(_)
            | E::UnknownError(_)
            | E::StaleElementReference(_)
    )
}

#[cfg(test)]
mod tests {
    use super::route_matches;

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
