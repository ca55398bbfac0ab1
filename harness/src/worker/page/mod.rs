//! The page a scenario drives: navigation, auto-waiting element actions, scripts and
//! read-only API calls made inside the browser (with its cookies), and the site's own
//! conventions (sign-in, page facts, identity, effect status) through its
//! [`Site`](crate::site::Site) adapter.
//!
//! Every method returns a future that owns what it needs (`'static`), so a closure like
//! `|p| p.click("button#send")` can hand it back directly. Every step has a timeout; on
//! timeout the session is retired through the identity-checked registry and its browser
//! killed, so the timed-out future can never drive a browser again.

mod actions;
mod click;
mod site;
mod target;
mod wait;

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use thirtyfour::prelude::*;

use super::Shared;
use crate::browser::{BrowserError, SessionToken};
use crate::worker::TaskError;

pub use target::{Target, TargetCheck};

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
