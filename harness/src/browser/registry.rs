//! The identity-checked session registry.
//!
//! A worker's browser session lives in one slot. Every driver call first presents the
//! [`SessionToken`] it was given; a token that is no longer the slot's current one is refused.
//! So when a step times out and its session is retired, the timed-out future can finish its
//! own work but can never drive a browser again, and a stale caller can never retire (evict)
//! the session that replaced its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use thirtyfour::WebDriver;

use super::{Browser, BrowserError};

/// Proof of which session a caller was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SessionToken(u64);

/// One worker's browser slot.
#[derive(Clone, Debug, Default)]
pub(crate) struct SessionRegistry {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: AtomicU64,
    current: Mutex<Option<(SessionToken, Browser)>>,
}

impl SessionRegistry {
    /// An empty registry.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn slot(&self) -> MutexGuard<'_, Option<(SessionToken, Browser)>> {
        self.inner
            .current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Installs `browser` as the current session and returns its token. A session already
    /// installed is returned to the caller, which must end it.
    pub(crate) fn install(&self, browser: Browser) -> (SessionToken, Option<Browser>) {
        let token = SessionToken(self.inner.next.fetch_add(1, Ordering::Relaxed) + 1);
        let previous = self.slot().replace((token, browser)).map(|(_, b)| b);
        (token, previous)
    }

    /// The driver of the session `token` names, if it is still the current one.
    pub(crate) fn driver(&self, token: SessionToken) -> Result<WebDriver, BrowserError> {
        match &*self.slot() {
            Some((current, browser)) if *current == token => Ok(browser.driver().clone()),
            _ => Err(BrowserError::Retired),
        }
    }

    /// Runs `f` on the session `token` names, if it is still the current one.
    pub(crate) fn with_browser<T>(
        &self,
        token: SessionToken,
        f: impl FnOnce(&Browser) -> T,
    ) -> Result<T, BrowserError> {
        match &*self.slot() {
            Some((current, browser)) if *current == token => Ok(f(browser)),
            _ => Err(BrowserError::Retired),
        }
    }

    /// The current session, if any: its token, and what `f` reads of its browser.
    pub(crate) fn with_current<T>(
        &self,
        f: impl FnOnce(&Browser) -> T,
    ) -> Option<(SessionToken, T)> {
        self.slot()
            .as_ref()
            .map(|(token, browser)| (*token, f(browser)))
    }

    /// Takes the session out of the slot if, and only if, `token` is still current.
    /// A stale token gets `None` and the successor stays.
    pub(crate) fn retire(&self, token: SessionToken) -> Option<Browser> {
        let mut slot = self.slot();
        if slot.as_ref().is_some_and(|(current, _)| *current == token) {
            slot.take().map(|(_, b)| b)
        } else {
            None
        }
    }
}
