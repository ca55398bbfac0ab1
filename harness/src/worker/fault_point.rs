//! A fault point, worker side: the screenshot, the report to the trial, the wait for its
//! word (and the reload it may ask for), and the cookie values reported as secrets.

use std::path::Path;
use std::time::Duration;

use super::{Shared, WorkerSpec};
use crate::browser::{Browser, SessionToken};
use crate::fault::{Resume, ScreenshotRef};
use crate::plan::FaultPoint;

pub(crate) async fn strike(shared: &Shared, token: Option<SessionToken>, boundary: FaultPoint) {
    shared.fault.crossed(boundary).await;
    if !shared.fault.is_armed_for(boundary) {
        return;
    }
    let screenshot = take_screenshot(shared, token, boundary).await;
    report_strike(shared, token, boundary, screenshot).await;
}

pub(super) async fn take_screenshot(
    shared: &Shared,
    token: Option<SessionToken>,
    boundary: FaultPoint,
) -> Option<ScreenshotRef> {
    let driver = token.and_then(|t| shared.registry.driver(t).ok())?;
    let dir = shared.fault.screenshot_dir()?;
    let png = tokio::time::timeout(Duration::from_secs(5), driver.screenshot_as_png())
        .await
        .ok()?
        .ok()?;
    save_screenshot(dir, &shared.spec, boundary, &png)
}

pub(super) async fn report_strike(
    shared: &Shared,
    token: Option<SessionToken>,
    boundary: FaultPoint,
    screenshot: Option<ScreenshotRef>,
) {
    let pid = token.and_then(|t| {
        shared
            .registry
            .with_browser(t, Browser::browser_pid)
            .ok()
            .flatten()
    });
    // After a click the site may hold the navigation, and every command would wait on it:
    // the recovery worker reports the cookies of the same profile at its end instead.
    let cookies = if boundary == FaultPoint::AfterClick {
        Vec::new()
    } else {
        cookie_values(shared, token).await
    };
    shared.log.line(&format!("fault point {boundary} reached"));
    let word = shared
        .fault
        .strike(boundary, screenshot, pid, cookies)
        .await;
    if word == Resume::Reload
        && let Some(driver) = token.and_then(|t| shared.registry.driver(t).ok())
    {
        // The world changed while the worker waited; its tab shows the new world.
        let _ = tokio::time::timeout(shared.spec.step_timeout, driver.refresh()).await;
        shared.log.line("the page was reloaded under the worker");
    }
}

/// The shortest cookie value treated as a secret: shorter ones (`1`, `yes`, a consent flag)
/// would redact ordinary words.
const MIN_SECRET_LEN: usize = 8;

pub(super) async fn cookie_values(shared: &Shared, token: Option<SessionToken>) -> Vec<String> {
    let Some(driver) = token.and_then(|t| shared.registry.driver(t).ok()) else {
        return Vec::new();
    };
    match tokio::time::timeout(Duration::from_secs(2), driver.get_all_cookies()).await {
        Ok(Ok(cookies)) => cookies
            .into_iter()
            .map(|c| c.value)
            .filter(|v| v.len() >= MIN_SECRET_LEN)
            .collect(),
        _ => Vec::new(),
    }
}

fn save_screenshot(
    dir: &Path,
    spec: &WorkerSpec,
    boundary: FaultPoint,
    png: &[u8],
) -> Option<ScreenshotRef> {
    use sha2::Digest;
    let file = format!("w{}-{}.png", spec.incarnation, boundary);
    std::fs::create_dir_all(dir).ok()?;
    std::fs::write(dir.join(&file), png).ok()?;
    let sha256 = sha2::Sha256::digest(png)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(ScreenshotRef { file, sha256 })
}
