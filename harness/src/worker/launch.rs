//! A worker's browser: launched on its profile once the journal has the session's record,
//! and quit (or, for a profile about to be removed, ended at once).

use super::locks::recover_stale_singleton_lock;
use super::{TaskError, Worker, trace};
use crate::browser::{Browser, BrowserOptions};
use crate::fault::WorkerEvent;
use crate::journal::BrowserSessionRecord;
use crate::plan::Boundary;

impl Worker {
    /// A browser on the profile before the agent uses it: launched once the orphans holding
    /// the profile are proven gone ([`Worker::end_orphaned_sessions`]), or, on a profile its
    /// check refused ([`Worker::start`]), launched now and `after_profile_created` crossed.
    /// Does nothing when the browser is up.
    pub(super) async fn ensure_browser(&mut self) -> Result<(), TaskError> {
        if self.token.is_none() && !self.orphans.is_empty() {
            self.end_orphaned_sessions().await?;
        }
        if self.launch_pending {
            self.launch_browser().await?;
            self.strike(Boundary::AfterProfileCreated).await;
        }
        Ok(())
    }

    /// Writes the session record, then launches a browser on the profile and installs it.
    pub(super) async fn launch_browser(&mut self) -> Result<(), TaskError> {
        self.launch_pending = false;
        let spec = &self.shared.spec;
        recover_stale_singleton_lock(self.profile.path())?;
        std::fs::create_dir_all(&spec.tmp_dir).map_err(|source| {
            TaskError::Browser(crate::browser::BrowserError::TempDir {
                path: spec.tmp_dir.clone(),
                source,
            })
        })?;
        // The step's own timer must fire before the WebDriver client's or chromedriver's
        // page-load limit: only a step timeout retires the session. With equal limits the
        // client won the race, and the timed-out step came back as a live command error.
        // The client's limit is a backstop, and must leave room to create a session under
        // load whatever the step timeout.
        let mut extra_args = Vec::new();
        if let Some(proxy) = &spec.proxy {
            // Chromium goes straight to loopback unless told otherwise (`<-loopback>`).
            extra_args.push(format!("--proxy-server={proxy}"));
            extra_args.push("--proxy-bypass-list=<-loopback>".to_owned());
            if let Some(spki) = &spec.proxy_trust {
                // The proxy's certificates for the HTTPS origins it intercepts, and only
                // those: trusted by their keys' hashes, for this browser alone.
                extra_args.push(format!("--ignore-certificate-errors-spki-list={spki}"));
            }
        }
        let options = BrowserOptions {
            extra_args,
            command_timeout: (spec.step_timeout * 2).max(BrowserOptions::default().command_timeout),
            own_process_group: spec.own_process_group,
            fast_first_navigation: spec.fast_first_navigation,
            ..BrowserOptions::default()
        };
        trace(&self.shared.log, || "launch".to_owned());
        let launch_started = std::time::Instant::now();
        // chromedriver comes up while the journal records are written; Chromium itself is
        // launched only after the browser-session record is durable.
        let endpoint = match (&spec.webdriver_url, &self.binaries) {
            (Some(url), _) => Endpoint::Remote(url),
            (None, Some(binaries)) => Endpoint::Local(crate::browser::DriverStart::spawn(
                binaries,
                &spec.tmp_dir,
                &options,
            )?),
            (None, None) => {
                return Err(crate::browser::BrowserError::from(
                    crate::browser::PreflightError::NotFound {
                        what: "chromedriver",
                        env: crate::browser::CHROMEDRIVER_ENV,
                    },
                )
                .into());
            }
        };
        let generation = self.store.bump_generation(&self.profile)?;
        self.sessions_started += 1;
        self.session_id = format!(
            "{}-w{}-s{}",
            spec.run_id, spec.incarnation, self.sessions_started
        );
        let last_checkpoint = self
            .shared
            .journal
            .side_effects(&spec.run_id)?
            .iter()
            .map(|e| e.state)
            .next_back();
        let mut record = BrowserSessionRecord::new(
            spec.run_id.clone(),
            self.session_id.clone(),
            self.profile.path(),
            spec.origin.clone(),
            spec.account.id.clone(),
            generation,
            spec.incarnation,
        );
        record.last_checkpoint = last_checkpoint;
        self.shared.journal.record_browser_session(&record)?;
        let browser = match endpoint {
            Endpoint::Local(driver) => driver.open_session(self.profile.path(), &options).await?,
            Endpoint::Remote(url) => {
                let browser = Browser::connect_remote(url, self.profile.path(), &options).await?;
                // Durable before the worker drives it: if this worker is killed, the browser
                // lives on at the endpoint, and this is how it is found and ended.
                let journaled = self.shared.journal.set_remote_session(
                    &self.session_id,
                    url,
                    &browser.webdriver_session_id(),
                );
                if let Err(e) = journaled {
                    browser.quit().await;
                    return Err(e.into());
                }
                browser
            }
        };
        let launch_time = launch_started.elapsed();
        self.shared.fault.add_launch_time(launch_time);
        trace(&self.shared.log, || {
            format!("launched in {} ms", launch_time.as_millis())
        });
        let pid = browser.browser_pid();
        let (token, previous) = self.shared.registry.install(browser);
        if let Some(previous) = previous {
            previous.quit().await;
        }
        self.token = Some(token);
        self.log(&format!("browser session {} started", self.session_id));
        self.shared
            .fault
            .report(WorkerEvent::Started {
                browser_pid: pid,
                browser_session_id: self.session_id.clone(),
                launch_ms: u64::try_from(launch_time.as_millis()).unwrap_or(u64::MAX),
            })
            .await;
        Ok(())
    }

    /// Quits the current browser session, if this worker still holds it.
    pub(super) async fn quit_browser(&mut self) {
        if let Some(token) = self.token.take()
            && let Some(browser) = self.shared.registry.retire(token)
        {
            let started = std::time::Instant::now();
            if self.shared.spec.discard_profile_after && browser.driver_pid().is_some() {
                browser.end_now().await;
            } else {
                browser.quit().await;
            }
            self.shared.fault.add_quit_time(started.elapsed());
            trace(&self.shared.log, || {
                format!("quit in {} ms", started.elapsed().as_millis())
            });
        }
    }
}

/// Where a worker's browser session comes from.
enum Endpoint<'a> {
    /// A chromedriver this worker started (and that is coming up).
    Local(crate::browser::DriverStart),
    /// A WebDriver endpoint someone else runs.
    Remote(&'a str),
}

pub(super) fn short(run_id: &str) -> &str {
    &run_id[..run_id.len().min(12)]
}
