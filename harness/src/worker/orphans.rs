//! Orphaned remote sessions: on a grid, a killed worker's browser lives on, signed in and
//! holding the profile. A worker finds them in the journal (each remote session's WebDriver id
//! is journaled before it is driven), asks the endpoint, and launches a browser on the profile
//! only once every one of them is proven gone.

use std::time::Duration;

use super::{SafeStop, TaskError, Worker};
use crate::browser::remote::{RemoteEndpoint, SessionState};
use crate::journal::RemoteSession;

/// How long ending one orphan may take before the worker gives up and stops safely.
const END_WITHIN: Duration = Duration::from_secs(30);
/// How long the orphan's browser processes (same host) may take to exit after the endpoint
/// ended the session.
const EXIT_WITHIN: Duration = Duration::from_secs(15);

impl Worker {
    /// The live remote sessions of earlier workers of this run on this worker's profile.
    /// A session the endpoint cannot answer for counts as live: it is not proven gone.
    pub(super) async fn find_orphans(&self) -> Result<Vec<RemoteSession>, TaskError> {
        if self.shared.spec.webdriver_url.is_none() {
            return Ok(Vec::new());
        }
        let spec = &self.shared.spec;
        let mut orphans = Vec::new();
        for record in self.shared.journal.browser_sessions(&spec.run_id)? {
            let Some(remote) = record.remote else {
                continue;
            };
            if record.incarnation == spec.incarnation || record.profile_path != self.profile.path()
            {
                continue;
            }
            let endpoint = RemoteEndpoint::new(&remote.endpoint);
            match endpoint.session_state(&remote.session_id).await {
                SessionState::Gone => {}
                state => {
                    self.log(&format!(
                        "worker {}'s browser session is {} at the endpoint",
                        record.incarnation,
                        state_name(&state)
                    ));
                    orphans.push(remote);
                }
            }
        }
        Ok(orphans)
    }

    /// How many live orphaned sessions of earlier workers hold this worker's profile: a
    /// killed worker's browser on a remote endpoint (a grid) lives on. `0` once they are
    /// ended, or when the worker moved to another profile.
    pub fn orphaned_sessions(&self) -> usize {
        self.orphans.len()
    }

    /// Ends every orphaned session holding the profile through its endpoint
    /// (`DELETE /session/{id}`), and proves each gone: the endpoint answers "invalid session
    /// id", a grid's `/status` no longer lists it, and, when the endpoint runs on this host,
    /// no browser process is left on the profile. Then launches this worker's browser. When
    /// an orphan cannot be proven gone, the worker stops safely
    /// ([`SafeStop::OrphanedSession`]) and leaves the profile alone.
    pub async fn end_orphaned_sessions(&mut self) -> Result<(), TaskError> {
        while let Some(orphan) = self.orphans.first().cloned() {
            let endpoint = RemoteEndpoint::new(&orphan.endpoint);
            let state = endpoint.end_session(&orphan.session_id, END_WITHIN).await;
            if state != SessionState::Gone {
                self.log(&format!(
                    "an orphaned session could not be proven gone ({})",
                    state_name(&state)
                ));
                return Err(SafeStop::OrphanedSession.into());
            }
            if endpoint.is_on_this_host() {
                let left = crate::browser::process::browsers_using_profile(self.profile.path());
                crate::browser::process::wait_all_dead(&left, EXIT_WITHIN).await;
                if !crate::browser::process::browsers_using_profile(self.profile.path()).is_empty()
                {
                    self.log("the orphaned session's browser outlived its session");
                    return Err(SafeStop::OrphanedSession.into());
                }
            }
            self.log("an orphaned session of an earlier worker was ended and proven gone");
            self.orphans.remove(0);
        }
        if self.token.is_none() {
            self.launch_browser().await?;
        }
        Ok(())
    }
}

fn state_name(state: &SessionState) -> String {
    match state {
        SessionState::Live => "live".to_owned(),
        SessionState::Gone => "gone".to_owned(),
        SessionState::Unknown(why) => format!("unknown: {why}"),
    }
}
