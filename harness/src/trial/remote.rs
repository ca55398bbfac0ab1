//! Trials whose browsers run on a remote WebDriver endpoint (a Selenium Grid): the reaping
//! of a killed worker's orphaned session, and the count of the run's sessions left open for
//! `no_leak`. (What cannot run there is each fault unit's `cannot_run_at`.)
//!
//! On a grid, SIGKILLing a worker kills nothing on the node: its browser session lives on,
//! signed in and holding the profile, until someone ends it (a pool reaps idle sessions
//! after its timeout, five minutes by default on Selenium Grid). In every crash trial but
//! `after_target_verified::orphaned_session` the harness plays that reaper right after the
//! crash (it ends the session through the endpoint and waits until the endpoint proves it
//! gone), so the trial tests the crash it planned, as on a local browser. `orphaned_session`
//! leaves it live for the recovery worker to face.

use std::time::Duration;

use crate::browser::remote::{RemoteEndpoint, SessionState};
use crate::journal::Journal;

/// How long the harness waits for the endpoint to prove one ended session gone.
const END_WITHIN: Duration = Duration::from_secs(30);

/// Ends the run's journaled remote sessions (of `incarnation` only, when given) through
/// their endpoints, each waited on until the endpoint proves it gone.
pub(crate) async fn end_sessions(journal: &Journal, run_id: &str, incarnation: Option<u32>) {
    for record in journal.browser_sessions(run_id).unwrap_or_default() {
        if incarnation.is_some_and(|i| i != record.incarnation) {
            continue;
        }
        if let Some(remote) = record.remote {
            RemoteEndpoint::new(&remote.endpoint)
                .end_session(&remote.session_id, END_WITHIN)
                .await;
        }
    }
}

/// The incarnations whose journaled remote sessions the endpoint does not prove gone (one
/// entry per session; unreachable counts as open).
///
/// A session that still answers commands is open at once. One that does not, but is not
/// proven gone yet, is waited on (at most [`END_WITHIN`]): a Selenium Grid frees a deleted
/// session's slot after the delete has returned, so right after a worker quit its session
/// the hub's `/status` may still list it, the longer the more loaded the machine (CI caught
/// worker 2's session so, beside a second matrix).
pub(crate) async fn open_sessions(journal: &Journal, run_id: &str) -> Vec<u32> {
    let mut open = Vec::new();
    for record in journal.browser_sessions(run_id).unwrap_or_default() {
        if let Some(remote) = record.remote {
            let endpoint = RemoteEndpoint::new(&remote.endpoint);
            let state = if endpoint.answers_commands(&remote.session_id).await {
                SessionState::Live
            } else {
                endpoint.wait_gone(&remote.session_id, END_WITHIN).await
            };
            if state != SessionState::Gone {
                open.push(record.incarnation);
            }
        }
    }
    open
}
