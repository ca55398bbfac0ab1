//! browser-fault's own end-to-end suites: the careful reference agent, and the bug zoo of
//! faulty agents that the harness must catch (each by the intended invariant only).
//!
//! The agents are plain async fns; the test targets in `tests/` register them as scenarios
//! with `#[browser_fault]`.
#![forbid(unsafe_code)]

use browser_fault::prelude::*;

/// The thread every suite scenario writes to.
pub const THREAD: &str = "42";

/// Opens `route`, signing in when the profile holds no valid login, and stops safely at an
/// interstitial it must not click through.
pub async fn open_signed_in(w: &mut Worker, route: &str) -> Result<Page, TaskError> {
    let page = w.open(route).await?;
    match page.kind().await?.as_deref() {
        Some("login") => {
            let account = w.account().clone();
            page.login(&account).await?;
            // The login form sends us back to `route`.
            Ok(w.page())
        }
        Some("login-interstitial" | "consent") => Err(SafeStop::Interstitial.into()),
        _ => Ok(page),
    }
}

/// The careful reference agent: signs in when needed, probes its identity before any side
/// effect, verifies the target (route, object, account, tenant, and the API's tenant) in
/// every incarnation, journals each step, and reconciles read-only instead of retrying.
pub async fn send_hello(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let target = w.target().route(&route).object(THREAD).api();
    w.side_effect("send-hello")
        .args(format!("thread={THREAD};body=hello"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(|p, key| async move {
            p.fill("#request-key", key.as_str()).await?;
            p.fill("#body", "hello").await?;
            p.click("button#send").await
        })
        .confirm(|p, key| async move {
            let sent = format!("[data-sent-key=\"{key}\"]");
            match p.wait_for_any(&[&sent, "body[data-page=stale]"]).await? {
                0 => Ok(()),
                _ => Err(SafeStop::StaleTarget.into()),
            }
        })
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}
