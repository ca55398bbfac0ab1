//! A regression guard for the fast first navigation: with the `session.*` start-up
//! preferences (the default), the first navigation of several concurrent sessions never
//! waits on Chromium's internal new-tab page. Without them, 15–25% of first navigations of
//! concurrent sessions stalled 5–6 s on this machine.
//!
//! This is a correctness check, not a benchmark: the bound (3 s) is far above a normal
//! first navigation (about 0.07 s) and far below a stall, so load cannot make it flake.
//! The numbers are in `benches/browser.rs`.

mod common;

use std::time::{Duration, Instant};

use browser_fault::_internal::worker::start_standalone;
use browser_fault::fixtures::{FixtureSite, SiteConfig};
use common::Rig;

const SESSIONS: usize = 3;
const ROUNDS: usize = 2;
const STALL: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_navigation_of_concurrent_sessions_never_stalls() {
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
                    let start = Instant::now();
                    let page = w.open("/login").await.unwrap();
                    let first = start.elapsed();
                    assert!(page.is_sign_in().await.unwrap());
                    let (_, driver) = w.browser_pids();
                    w.finish().await;
                    (first, prefs, driver)
                })
            })
            .collect();
        for (rig, task) in rigs.iter().zip(tasks) {
            let (first, prefs, driver) = task.await.unwrap();
            assert_eq!(prefs["session"]["restore_on_startup"], 4, "{prefs}");
            assert_eq!(
                prefs["session"]["startup_urls"],
                serde_json::json!(["about:blank"])
            );
            assert!(
                first < STALL,
                "round {round}: a first navigation stalled for {first:?}"
            );
            rig.assert_no_browser_left(driver).await;
        }
    }
}
