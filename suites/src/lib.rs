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

/// Bug zoo: retries blindly after losing the response. Its "reconciliation" sends again
/// and claims success, so a request that landed is duplicated. Caught by `no_duplicate` at
/// `after_click::landed`, and by nothing else.
pub async fn blind_retry(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let target = w.target().route(&route).object(THREAD);
    let send = |p: Page, key: RequestKey| async move {
        p.fill("#request-key", key.as_str()).await?;
        p.fill("#body", "hello").await?;
        p.click("button#send").await
    };
    w.side_effect("send-hello")
        .args(format!("thread={THREAD};body=hello"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(send)
        .confirm(|p, key| p.wait_for(&format!("[data-sent-key=\"{key}\"]")))
        .reconcile(move |p, key| async move {
            // The bug: no read-only check, just send again and call it done.
            p.goto(&format!("/threads/{THREAD}")).await?;
            send(p.clone(), key.clone()).await?;
            // Wait for the second copy: the first is on the page already.
            p.wait_for(&format!(
                "[data-sent-key=\"{key}\"] ~ [data-sent-key=\"{key}\"]"
            ))
            .await?;
            Ok(EffectStatus::Present)
        })
        .run()
        .await
}

/// Bug zoo: trusts the profile it finds: no profile check, no identity probe, and a
/// verification that looks at the route only. After a stale restore signed in as another
/// account it sends under that account. Caught by `no_wrong_account` at
/// `stale_profile_restore::other_account`, and by nothing else.
pub async fn trusting(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    open_signed_in(w, &route).await?;
    w.side_effect("send-hello")
        .args(format!("thread={THREAD};body=hello"))
        .verify(|p| p.wait_for("#send-form"))
        .act(|p, key| async move {
            p.fill("#request-key", key.as_str()).await?;
            p.fill("#body", "hello").await?;
            p.click("button#send").await
        })
        .confirm(|p, key| p.wait_for(&format!("[data-sent-key=\"{key}\"]")))
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// Bug zoo: a recovery worker that "starts clean" on a fresh profile and never removes the
/// one it abandoned. Caught by `no_leak` at `after_profile_created`, and by nothing else.
pub async fn leaky(w: &mut Worker) -> TaskResult {
    if w.incarnation() > 1 {
        // The bug: the old profile's cleanup is the caller's, and it never happens.
        let _abandoned = w.adopt_fresh_profile().await?;
    }
    send_hello(w).await
}

/// Bug zoo: writes its password into its log "for debugging". The log's tail is evidence,
/// and evidence is scanned for the site's canaries. Caught by `no_secret_in_evidence` at
/// `after_login`, and by nothing else.
pub async fn chatty(w: &mut Worker) -> TaskResult {
    let line = format!(
        "signing in as {} with {}",
        w.account().username,
        w.account().password.expose()
    );
    w.log(&line);
    send_hello(w).await
}
