//! `browser_crash`: Chromium is SIGKILLed under a live worker, which must notice.

use std::time::Duration;

use super::FaultUnit;
use crate::browser::process;
use crate::plan::FaultPoint;
use crate::trial::context::{AtStrike, UnitCtx};
use crate::trial::drive::{Strike, Tracked};
use crate::trial::error::TrialError;

pub(super) static UNIT: BrowserCrash = BrowserCrash;

pub(super) struct BrowserCrash;

#[async_trait::async_trait]
impl FaultUnit for BrowserCrash {
    fn planned(&self) -> String {
        "browser killed under a live worker at browser_crash".to_owned()
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        Some(FaultPoint::BrowserCrash)
    }

    fn cannot_run_at(&self, webdriver_url: Option<&str>) -> Option<&'static str> {
        webdriver_url
            .is_some_and(|u| !crate::browser::remote::is_loopback_url(u))
            .then_some("kills the browser process, which runs on the endpoint's host, not this one")
    }

    async fn at_strike(
        &self,
        e: &mut UnitCtx<'_, '_>,
        first: &mut Tracked,
        strike: Strike,
        _later: &mut Vec<Tracked>,
    ) -> Result<AtStrike, TrialError> {
        let mut browsers = process::processes_using_profile(e.profile.path());
        // A remote endpoint's pid is its host's: only a loopback endpoint's is ours.
        if e.webdriver_url()
            .is_none_or(crate::browser::remote::is_loopback_url)
        {
            browsers.extend(strike.browser_pid);
        }
        process::kill_and_wait(&browsers, Duration::from_secs(10)).await;
        first.handle.resume().await;
        Ok(AtStrike::Resumed)
    }
}
