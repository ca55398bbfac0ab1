//! The side-effect protocol: `INTENT_RECORDED → TARGET_VERIFIED → ACTION_SUBMITTED →
//! REMOTE_CONFIRMED`, or `UNKNOWN`, each transition durable before the next step.
//!
//! ```text
//! record intent (idempotent: same key for every incarnation)
//!   REMOTE_CONFIRMED / UNKNOWN  → done, nothing is sent again
//!   ACTION_SUBMITTED            → left by a dead worker: reconcile read-only, never retry
//!   INTENT_RECORDED / TARGET_VERIFIED
//!     → verify (again: a stale verification is never trusted) → TARGET_VERIFIED
//!     ◆ after_target_verified, browser_crash
//!     → ACTION_SUBMITTED → act   ◆ after_click
//!     → confirm (observe the result)   ◆ after_remote_effect
//!     → REMOTE_CONFIRMED
//!   confirm failed → reconcile read-only → REMOTE_CONFIRMED, or UNKNOWN
//! ```

use std::future::Future;
use std::pin::Pin;

use super::{Page, TaskError, TaskResult, Worker};
use crate::browser::BrowserError;
use crate::journal::{Checkpoint, RequestKey};
use crate::plan::{Boundary, FaultPoint};
use crate::worker::Outcome;

type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, TaskError>> + Send>>;
type PageFn<T> = Box<dyn Fn(Page) -> BoxFuture<T> + Send + Sync>;
type KeyedFn<T> = Box<dyn Fn(Page, RequestKey) -> BoxFuture<T> + Send + Sync>;

/// What a read-only reconciliation found at the site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EffectStatus {
    /// The site has the effect with this request key.
    Present,
    /// The site has no effect with this request key.
    Absent,
}

/// One side effect under the checkpoint protocol. Build it with [`Worker::side_effect`],
/// give it its steps, and [`run`](SideEffect::run) it.
#[must_use = "a side effect does nothing until `run().await`"]
pub struct SideEffect<'w> {
    worker: &'w mut Worker,
    name: String,
    args: String,
    verify: Option<PageFn<()>>,
    act: Option<KeyedFn<()>>,
    confirm: Option<KeyedFn<()>>,
    reconcile: Option<KeyedFn<EffectStatus>>,
}

impl std::fmt::Debug for SideEffect<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SideEffect")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<'w> SideEffect<'w> {
    pub(crate) fn new(worker: &'w mut Worker, name: &str) -> Self {
        SideEffect {
            worker,
            name: name.to_owned(),
            args: String::new(),
            verify: None,
            act: None,
            confirm: None,
            reconcile: None,
        }
    }

    /// The effect's normalized arguments; their hash is journaled with the intent, and a
    /// recovery worker that would send different arguments under the same key is refused.
    pub fn args(mut self, normalized: impl Into<String>) -> Self {
        self.args = normalized.into();
        self
    }

    /// Verifies the target before acting (typically `p.expect_target(...)`). Runs again in
    /// every incarnation that has not submitted yet.
    pub fn verify<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Page) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), TaskError>> + Send + 'static,
    {
        self.verify = Some(Box::new(move |p| Box::pin(f(p))));
        self
    }

    /// Dispatches the action, carrying the request key (typically fill the key, click).
    /// Should return once the action is dispatched; [`confirm`](Self::confirm) observes it.
    pub fn act<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Page, RequestKey) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), TaskError>> + Send + 'static,
    {
        self.act = Some(Box::new(move |p, k| Box::pin(f(p, k))));
        self
    }

    /// Observes that the site accepted the effect (typically wait for the key on the page).
    pub fn confirm<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Page, RequestKey) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), TaskError>> + Send + 'static,
    {
        self.confirm = Some(Box::new(move |p, k| Box::pin(f(p, k))));
        self
    }

    /// Asks the site, read-only, whether the effect with this key exists. Without it an
    /// unobserved submission can only become `UNKNOWN`.
    pub fn reconcile<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Page, RequestKey) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<EffectStatus, TaskError>> + Send + 'static,
    {
        self.reconcile = Some(Box::new(move |p, k| Box::pin(f(p, k))));
        self
    }

    /// Runs the protocol. Returns `Confirmed` or `Unknown`, or a typed error; never sends an
    /// effect twice on its own.
    pub async fn run(self) -> TaskResult {
        let SideEffect {
            worker,
            name,
            args,
            verify,
            act,
            confirm,
            reconcile,
        } = self;
        worker.ensure_browser().await?;
        let record = worker.journal().record_intent(&name, &args)?;
        let key = record.request_key.clone();
        let journal = worker.journal();
        match record.state {
            Checkpoint::RemoteConfirmed => {
                worker.log(&format!("{name}: already REMOTE_CONFIRMED; nothing to do"));
                return Ok(Outcome::Confirmed);
            }
            Checkpoint::Unknown => {
                worker.log(&format!(
                    "{name}: UNKNOWN; left for a human, nothing is sent"
                ));
                return Ok(Outcome::Unknown);
            }
            Checkpoint::ActionSubmitted => {
                worker.log(&format!(
                    "{name}: ACTION_SUBMITTED by an earlier worker; reconciling"
                ));
                return settle(worker, &reconcile, &key).await;
            }
            Checkpoint::IntentRecorded | Checkpoint::TargetVerified => {}
        }
        // Where the live variants change the world: after sign-in and the identity probe,
        // before this verification.
        worker.strike(FaultPoint::BeforeVerify).await;
        worker.shared.take_checks();
        if let Some(verify) = &verify {
            verify(worker.page()).await?;
        }
        // The transition reports what the verify step checked (flagged when nothing).
        journal.transition(&key, record.state, Checkpoint::TargetVerified)?;
        worker.log(&format!("{name}: TARGET_VERIFIED"));
        worker.strike(Boundary::AfterTargetVerified).await;
        worker.strike(Boundary::BrowserCrash).await;
        if !worker.browser_alive() {
            // Noticed before anything was submitted: the checkpoint stays TARGET_VERIFIED and
            // the next worker verifies again.
            worker.log(&format!(
                "{name}: the browser died before the action; stopping"
            ));
            return Err(BrowserError::Crashed.into());
        }
        let journal = worker.journal();
        journal.transition(
            &key,
            Checkpoint::TargetVerified,
            Checkpoint::ActionSubmitted,
        )?;
        worker.log(&format!("{name}: ACTION_SUBMITTED"));
        // The page before the click is what the fault point shows: once the click is
        // dispatched, a screenshot would wait on the navigation the site holds.
        let shot = worker.screenshot_ahead(Boundary::AfterClick).await;
        if let Some(act) = &act {
            act(worker.page(), key.clone()).await?;
        }
        worker.strike_with(Boundary::AfterClick, shot).await;
        let observed = match &confirm {
            Some(confirm) => confirm(worker.page(), key.clone()).await,
            None => Ok(()),
        };
        if let Err(e) = observed {
            worker.log(&format!(
                "{name}: result not observed ({:?}); reconciling",
                e.kind()
            ));
            return settle(worker, &reconcile, &key).await;
        }
        worker.strike(Boundary::AfterRemoteEffect).await;
        worker.journal().transition(
            &key,
            Checkpoint::ActionSubmitted,
            Checkpoint::RemoteConfirmed,
        )?;
        worker.log(&format!("{name}: REMOTE_CONFIRMED"));
        Ok(Outcome::Confirmed)
    }
}

/// Resolves an `ACTION_SUBMITTED` by a read-only check, never by sending again.
async fn settle(
    worker: &mut Worker,
    reconcile: &Option<KeyedFn<EffectStatus>>,
    key: &RequestKey,
) -> TaskResult {
    let status = match reconcile {
        Some(reconcile) => Some(reconcile(worker.page(), key.clone()).await?),
        None => None,
    };
    let journal = worker.journal();
    match status {
        Some(EffectStatus::Present) => {
            journal.transition(
                key,
                Checkpoint::ActionSubmitted,
                Checkpoint::RemoteConfirmed,
            )?;
            worker.log("reconciled: the site has the effect; REMOTE_CONFIRMED");
            Ok(Outcome::Confirmed)
        }
        Some(EffectStatus::Absent) | None => {
            // Absent now does not prove it never lands: the request may still be in flight.
            journal.transition(key, Checkpoint::ActionSubmitted, Checkpoint::Unknown)?;
            worker.log("reconciled: the site shows no effect; UNKNOWN");
            Ok(Outcome::Unknown)
        }
    }
}
