//! The adoption of `existing-agent` by browser-fault: this file is all of it. The agent's own
//! code is unchanged; it gets the worker's browser as its WebDriver URL, the run's scratch
//! folder for its state file, and an observer that journals its progress under the agent's
//! own request key and marks the fault points its steps stand for.
//!
//! `cargo test -p existing-agent` runs every boundary against it.

use browser_fault::prelude::*;
use browser_fault::worker::BrowserError;
use existing_agent::{AgentError, Config, Done, Event, Observer, Verdict, post_hello};

/// The side effect, as the journal names it.
const EFFECT: &str = "post-hello";

#[browser_fault(at = "all", effects = "42")]
async fn post_hello_once(w: &mut Worker) -> TaskResult {
    w.require_trusted_profile()?;
    let config = Config {
        webdriver_url: w.webdriver_url().await?,
        origin: w.origin().to_owned(),
        state_dir: w.scratch_dir()?,
        username: w.account().username.clone(),
        password: w.account().password.expose().to_owned(),
        account_id: w.account().id.clone(),
        tenant: w.account().tenant.clone(),
        thread: "42".to_owned(),
    };
    let journaled = Journaled { w };
    match post_hello(&config, &journaled).await {
        Ok(Done::Sent) => Ok(Outcome::Confirmed),
        Ok(Done::Unknown) => Ok(Outcome::Unknown),
        Err(e) => Err(task_error(w, e)),
    }
}

/// The agent's stops, as browser-fault's typed outcomes.
fn task_error(w: &Worker, e: AgentError) -> TaskError {
    match e {
        AgentError::WrongAccount => SafeStop::WrongAccount.into(),
        AgentError::WrongTenant => SafeStop::WrongTenant.into(),
        AgentError::WrongThread => SafeStop::WrongObject.into(),
        AgentError::NotSignedIn => SafeStop::NotSignedIn.into(),
        AgentError::Interstitial => SafeStop::Interstitial.into(),
        AgentError::Stale => SafeStop::StaleTarget.into(),
        AgentError::Stopped(e) => match e.downcast::<TaskError>() {
            Ok(e) => *e,
            Err(e) => TaskError::Scenario(e),
        },
        // The worker's browser died under it: a typed stop, the next worker verifies again.
        AgentError::Browser(_) if !w.browser_alive() => BrowserError::Crashed.into(),
        other => TaskError::scenario(other),
    }
}

/// The agent's telemetry, journaled: each event moves its side effect (under its own key)
/// and marks the fault point it stands for.
struct Journaled<'w> {
    w: &'w Worker,
}

impl Journaled<'_> {
    async fn journal(&self, event: Event<'_>) -> Result<(), TaskError> {
        let w = self.w;
        let record = |key: &str| {
            w.journal()
                .record_intent_with_key(EFFECT, "thread=42;body=hello", key)
        };
        match event {
            Event::SignedIn => w.fault_point(Boundary::AfterLogin).await,
            Event::Verifying { key } => {
                record(key)?;
                w.fault_point(FaultPoint::BeforeVerify).await;
            }
            Event::Verified { key } => {
                let rec = record(key)?;
                w.record_checks(&[
                    TargetCheck::Account,
                    TargetCheck::Tenant,
                    TargetCheck::Object,
                ]);
                w.journal()
                    .transition(&rec.request_key, rec.state, Checkpoint::TargetVerified)?;
                w.fault_point(Boundary::AfterTargetVerified).await;
            }
            Event::Submitting { key } | Event::Resending { key } => {
                // A resend (found absent after a restart) is ACTION_SUBMITTED again, by this
                // worker; a restart that crashed before its first submit was journaled
                // submits now.
                let rec = record(key)?;
                w.journal()
                    .transition(&rec.request_key, rec.state, Checkpoint::ActionSubmitted)?;
            }
            Event::Clicked => w.fault_point(Boundary::AfterClick).await,
            Event::Confirmed { key } => {
                let rec = record(key)?;
                if rec.state == Checkpoint::ActionSubmitted {
                    w.fault_point(Boundary::AfterRemoteEffect).await;
                    w.journal().transition(
                        &rec.request_key,
                        Checkpoint::ActionSubmitted,
                        Checkpoint::RemoteConfirmed,
                    )?;
                }
            }
            Event::Unknown { key } => {
                let rec = record(key)?;
                w.journal()
                    .transition(&rec.request_key, rec.state, Checkpoint::Unknown)?;
            }
        }
        Ok(())
    }
}

impl Observer for Journaled<'_> {
    async fn on(&self, event: Event<'_>) -> Verdict {
        // A journal that refuses a step stops the agent before it acts on it.
        self.journal(event).await.map_err(|e| Box::new(e) as _)
    }
}

browser_fault::main!();
