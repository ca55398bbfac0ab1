//! The crash trials of this crate's agent, against the bundled fixture site.
//!
//! `cargo test --test agent -- --list` lists them by stable name
//! (`send_hello::after_click::landed`, …); `cargo test --test agent -- after_click` runs one
//! boundary.

use browser_fault::prelude::*;

/// The thread the agent writes to.
const THREAD: &str = "42";

/// The careful agent: signs in when the profile holds no valid login, probes its identity
/// before any side effect, verifies the target in every incarnation, journals each step,
/// and after a crash reconciles read-only instead of sending again.
#[browser_fault(at = ["after_click", "stale_profile_restore"], effects = "42")]
async fn send_hello(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    // A profile the harness cannot vouch for (an older backup, another account) is refused.
    w.require_trusted_profile()?;
    let page = w.open(&route).await?;
    match page.read().await?.kind {
        PageKind::SignIn => {
            let account = w.account().clone();
            page.sign_in(&account).await?;
        }
        // An interstitial is never clicked through.
        PageKind::Interstitial => return Err(SafeStop::Interstitial.into()),
        _ => {}
    }
    // Never trust a profile's login: ask the site who we are.
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
            // The message on the page, a stale object, an error page, or a success notice
            // without this key's message (another send's answer): the last two say nothing
            // of whether the message was sent, so the protocol reconciles. The selectors are
            // tried in order, and the site lists its messages before its notice.
            let sent = format!("[data-sent-key=\"{key}\"]");
            let answers = [
                sent.as_str(),
                "body[data-page=stale]",
                "body[data-page=unavailable]",
                // Not the site's page at all: a proxy's error.
                "body:not([data-page])",
                "#sent-notice",
            ];
            match p.wait_for_any(&answers).await? {
                0 => Ok(()),
                1 => Err(SafeStop::StaleTarget.into()),
                _ => Err(TaskError::UnexpectedReply {
                    what: "the send (an error page, or another's answer)",
                }),
            }
        })
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// A deliberately faulty agent: it never checks its profile or asks the site who it is
/// signed in as, and its "verification" only checks that the send form is there. After a
/// crash, when an older backup signed in as another account replaces the profile, it sends
/// under that account: `send_hello_unprobed::stale_profile_restore::other_account` fails on
/// `no_wrong_account` (and `profile_trusted`: it acted on a rolled-back profile, which also
/// fails its `older_generation` trial).
#[browser_fault(at = "stale_profile_restore", effects = "42")]
async fn send_hello_unprobed(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    let page = w.open(&route).await?;
    if page.is_sign_in().await? {
        let account = w.account().clone();
        page.sign_in(&account).await?;
    }
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

browser_fault::main!();
