//! Clicks, and waiting until what a click started is answered.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Page;
use crate::browser::BrowserError;
use crate::worker::TaskError;

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

impl Page {
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

    /// Clicks `element` (a W3C element reference an agent's own WebDriver client sent to the
    /// worker's endpoint) as [`Page::click`] clicks a selector: dispatched from the page's
    /// timer, and, when the worker is crashed right after it, answered only once what it
    /// started was answered. Returns whether the page took the element.
    pub(crate) async fn click_element(
        &self,
        element: serde_json::Value,
    ) -> Result<bool, TaskError> {
        let dispatched = self.dispatch_click(element).await?;
        if !dispatched {
            return Ok(false);
        }
        if self.shared.fault.next_step_is_armed() {
            self.settle_before_crash().await?;
        } else {
            self.shared.click_pending.store(true, Ordering::Release);
        }
        self.shared.clicked.store(true, Ordering::Release);
        Ok(true)
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
        self.settle_before_crash().await
    }

    /// After a click the worker is crashed right after: waits until what it started was
    /// answered, or the page stayed quiet for [`SETTLE_QUIET`], up to [`SETTLE_BUSY_LIMIT`].
    async fn settle_before_crash(&self) -> Result<(), TaskError> {
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
    pub(crate) async fn settle_after_click(&self) {
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
}
