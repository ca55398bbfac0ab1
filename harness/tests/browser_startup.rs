//! A regression guard for the fast first navigation: with the `session.*` start-up
//! preferences (the default), a session starts on `about:blank`, so its first navigation
//! never waits on Chromium's internal new-tab page. Without them, 15–25% of first
//! navigations of concurrent sessions stalled 5–6 s on this machine.
//!
//! This is a correctness check, not a benchmark: it checks what the stall comes from (the
//! page a session starts on, and the preferences that choose it), never a duration, so load
//! cannot make it flake. It used to bound the first navigation at 3 s, and failed once under
//! a load of 23. The numbers are in `benches/browser.rs`.

mod common;

use browser_fault::_internal::browser::{Browser, BrowserOptions};
use browser_fault::_internal::worker::start_standalone;
use browser_fault::BrowserBinaries;
use browser_fault::fixtures::{FixtureSite, SiteConfig};
use common::Rig;

const SESSIONS: usize = 3;
const ROUNDS: usize = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_start_with_the_start_up_preferences_and_load_their_first_page() {
    let site = FixtureSite::start(SiteConfig::default()).await.unwrap();
    for round in 0..ROUNDS {
        let rigs: Vec<Rig> = (0..SESSIONS)
            .map(|i| Rig::on_site(&format!("fast{round}{i}"), site.clone()))
            .collect();
        let tasks: Vec<_> = rigs
            .iter()
            .map(|rig| {
                let spec = rig.spec.clone();
                let prefs = rig.profile_dir().join("Default").join("Preferences");
                tokio::spawn(async move {
                    assert!(spec.fast_first_navigation, "the fast path is the default");
                    let mut w = start_standalone(
                        spec,
                        std::sync::Arc::new(browser_fault::site::Fixture::new()),
                    )
                    .await
                    .unwrap();
                    // What chromedriver wrote into the profile before launching Chromium.
                    let prefs: serde_json::Value =
                        serde_json::from_slice(&std::fs::read(prefs).unwrap()).unwrap();
                    let page = w.open("/login").await.unwrap();
                    assert!(page.is_sign_in().await.unwrap());
                    let (_, driver) = w.browser_pids();
                    w.finish().await;
                    (prefs, driver)
                })
            })
            .collect();
        for (rig, task) in rigs.iter().zip(tasks) {
            let (prefs, driver) = task.await.unwrap();
            assert_eq!(prefs["session"]["restore_on_startup"], 4, "{prefs}");
            assert_eq!(
                prefs["session"]["startup_urls"],
                serde_json::json!(["about:blank"])
            );
            rig.assert_no_browser_left(driver).await;
        }
    }
}

/// What the stall came from, checked directly: a session with the fast path starts on
/// `about:blank`; the control without it starts on Chromium's new-tab page (so the check
/// can fail).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_starts_on_about_blank_never_on_the_new_tab_page() {
    let binaries = BrowserBinaries::discover().unwrap();
    for fast in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("profile");
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&profile).unwrap();
        std::fs::create_dir(&tmp).unwrap();
        let mut options = BrowserOptions::default();
        options.fast_first_navigation = fast;
        let browser = Browser::launch(&binaries, &profile, &tmp, &options)
            .await
            .unwrap();
        let url = browser.driver().current_url().await.unwrap();
        browser.end_now().await;
        if fast {
            assert_eq!(url.as_str(), "about:blank", "the fast path's first page");
        } else {
            assert!(
                url.scheme() == "chrome" && url.as_str().contains("new-tab"),
                "the control starts on the new-tab page, not {url}"
            );
        }
    }
}
