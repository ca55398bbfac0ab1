//! The Worker API end to end, with a real headless Chromium against the fixture site:
//! sign in, verify the target, send a message under the checkpoint protocol, confirm; every
//! typed refusal of `expect_target`; and the same journey through a WebDriver endpoint the
//! harness did not start.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use browser_fault::_internal::browser::process::{kill_group, kill_profile_processes, wait_dead};
use browser_fault::_internal::worker::start_standalone;
use browser_fault::BrowserBinaries;
use browser_fault::fixtures::{LedgerEntry, SiteHazard};
use browser_fault::journal::Checkpoint;
use browser_fault::worker::{Outcome, Page, SafeStop, TaskError, TaskResult, Worker};
use common::{DEATH_LIMIT, ROUTE, Rig, open_signed_in};

/// The reference way to send one message: fill the key and the body, click, wait for the
/// key on the page; reconcile read-only.
async fn send_hello(w: &mut Worker) -> TaskResult {
    let target = w.target().route(ROUTE).object("42").api();
    w.side_effect("send-hello")
        .args("thread=42;body=hello")
        .verify(move |p| p.expect_target(target.clone()))
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

/// Asserts the journal went through the four states once, in order, and the site accepted
/// exactly one effect, under the expected account and tenant, with the journal's key.
fn assert_sent_once(rig: &Rig) {
    use Checkpoint::*;
    assert_eq!(
        rig.history(),
        [
            (None, IntentRecorded),
            (Some(IntentRecorded), TargetVerified),
            (Some(TargetVerified), ActionSubmitted),
            (Some(ActionSubmitted), RemoteConfirmed),
        ]
    );
    let effect = rig
        .journal
        .side_effect(&rig.run_id, "send-hello")
        .unwrap()
        .expect("the effect is journaled");
    assert_eq!(effect.state, RemoteConfirmed);
    let ledger: Vec<LedgerEntry> = rig.site.ledger();
    assert_eq!(ledger.len(), 1, "exactly one accepted effect: {ledger:?}");
    let entry = &ledger[0];
    assert_eq!(entry.account, rig.spec.account.id);
    assert_eq!(Some(&entry.tenant), rig.spec.account.tenant.as_ref());
    assert_eq!(entry.object, "42");
    assert_eq!(entry.request_key, effect.request_key.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signs_in_verifies_sends_once_and_journals_every_state() {
    let rig = Rig::new("journey").await;
    let mut w = start_standalone(
        rig.spec.clone(),
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .unwrap();
    let page = w.open(ROUTE).await.unwrap();
    assert!(
        page.is_sign_in().await.unwrap(),
        "a fresh profile is signed out"
    );
    let account = w.account().clone();
    page.sign_in(&account).await.unwrap();
    assert_eq!(page.read().await.unwrap().label.as_deref(), Some("thread"));
    let me = w.probe_identity().await.unwrap();
    assert_eq!(me.account_id, "acct-test-42");
    assert!(
        rig.history().is_empty(),
        "nothing journaled before the effect"
    );

    // `fill` replaces what a field held and fires its `input` event, in one DevTools
    // insertion; `type_keys` types key by key.
    page.script(
        "window.__inputs = 0; document.querySelector('#body').addEventListener('input', () => window.__inputs++); return null;",
    )
    .await
    .unwrap();
    page.fill("#body", "first draft").await.unwrap();
    page.fill("#body", "héllo, wörld").await.unwrap();
    let field = page
        .script("return [document.querySelector('#body').value, window.__inputs];")
        .await
        .unwrap();
    assert_eq!(field, serde_json::json!(["héllo, wörld", 2]));
    page.type_keys("#body", "typed").await.unwrap();
    let typed = page
        .script("return document.querySelector('#body').value;")
        .await
        .unwrap();
    assert_eq!(typed, "typed");

    assert_eq!(send_hello(&mut w).await.unwrap(), Outcome::Confirmed);
    assert_sent_once(&rig);

    // Run again: the journal says REMOTE_CONFIRMED, so nothing is sent twice.
    assert_eq!(send_hello(&mut w).await.unwrap(), Outcome::Confirmed);
    assert_eq!(rig.site.ledger().len(), 1);
    assert_eq!(rig.history().len(), 4);

    let log = w.log_tail().expect("a standalone worker keeps its log");
    assert!(log.contains("REMOTE_CONFIRMED"), "{log}");
    assert!(
        !log.contains(account.password.expose()),
        "no secret in the log"
    );
    let (_, driver) = w.browser_pids();
    w.finish().await;
    rig.assert_no_browser_left(driver).await;
}

async fn refusal(page: &Page, target: browser_fault::worker::Target) -> Option<SafeStop> {
    match page.expect_target(target).await {
        Ok(()) => None,
        Err(TaskError::SafeStop(stop)) => Some(stop),
        Err(e) => panic!("expected a typed safe stop, got {e:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_target_refuses_each_mismatch_with_its_typed_safe_stop() {
    let rig = Rig::new("target").await;
    let site = rig.site.clone();
    let mut w = start_standalone(
        rig.spec.clone(),
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .unwrap();
    let page = open_signed_in(&mut w, ROUTE).await.unwrap();
    let right = w.target().route(ROUTE).object("42").api();

    assert_eq!(
        refusal(&page, right.clone()).await,
        None,
        "the right target"
    );
    assert_eq!(
        refusal(&page, w.target().route("/threads/7")).await,
        Some(SafeStop::WrongRoute)
    );
    // A route is matched by path segments: `/threads/4` is not a prefix of `/threads/42`.
    assert_eq!(
        refusal(&page, w.target().route("/threads/4")).await,
        Some(SafeStop::WrongRoute)
    );
    assert_eq!(
        refusal(&page, w.target().route("/threads").object("42")).await,
        None,
        "a parent route is a prefix"
    );
    assert_eq!(
        refusal(&page, w.target().route(ROUTE).object("7")).await,
        Some(SafeStop::WrongObject)
    );
    page.goto("/threads/7").await.unwrap();
    assert_eq!(
        refusal(&page, w.target().route("/threads").object("42")).await,
        Some(SafeStop::WrongObject)
    );

    // The session is served as another account: the markers say so.
    site.set_hazard(SiteHazard::AccountSwitch, true);
    page.goto(ROUTE).await.unwrap();
    assert_eq!(
        refusal(&page, right.clone()).await,
        Some(SafeStop::WrongAccount)
    );
    site.set_hazard(SiteHazard::AccountSwitch, false);

    // The page looks right while its API answers for another tenant: only `.api()` sees it.
    site.set_hazard(SiteHazard::TenantMismatch, true);
    page.goto(ROUTE).await.unwrap();
    assert_eq!(
        refusal(&page, w.target().route(ROUTE).object("42")).await,
        None,
        "the page's markers alone look right"
    );
    assert_eq!(
        refusal(&page, right.clone()).await,
        Some(SafeStop::WrongTenant)
    );
    site.set_hazard(SiteHazard::TenantMismatch, false);

    for hazard in [
        SiteHazard::ConsentInterstitial,
        SiteHazard::LoginInterstitial,
    ] {
        site.set_hazard(hazard, true);
        page.goto(ROUTE).await.unwrap();
        assert_eq!(
            refusal(&page, right.clone()).await,
            Some(SafeStop::Interstitial),
            "{hazard}"
        );
        site.set_hazard(hazard, false);
    }

    site.expire_sessions();
    page.goto(ROUTE).await.unwrap();
    assert_eq!(
        refusal(&page, right.clone()).await,
        Some(SafeStop::NotSignedIn)
    );

    assert!(site.ledger().is_empty(), "verification never sends");
    let (_, driver) = w.browser_pids();
    w.finish().await;
    rig.assert_no_browser_left(driver).await;
}

/// A chromedriver this test starts, as if it were a remote endpoint.
struct RemoteDriver {
    child: std::process::Child,
    port: u16,
}

impl RemoteDriver {
    fn start(tmp: &std::path::Path) -> RemoteDriver {
        let binaries = BrowserBinaries::discover().unwrap();
        std::fs::create_dir_all(tmp).unwrap();
        let mut child = Command::new(&binaries.chromedriver)
            .arg("--port=0")
            .env("TMPDIR", tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start chromedriver");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = loop {
            let line = lines
                .next()
                .expect("chromedriver said which port it chose")
                .unwrap();
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                break rest.trim().trim_end_matches('.').parse().unwrap();
            }
        };
        // Keep draining its stdout so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        RemoteDriver { child, port }
    }
}

impl Drop for RemoteDriver {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_the_journey_through_a_remote_webdriver_endpoint() {
    let mut rig = Rig::new("remote").await;
    let remote = RemoteDriver::start(&rig.root.path().join("rtmp"));
    rig.spec.webdriver_url = Some(format!("http://127.0.0.1:{}", remote.port));
    let mut w = start_standalone(
        rig.spec.clone(),
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .unwrap();
    let (browser, driver) = w.browser_pids();
    assert!(browser.is_some(), "the remote session names its browser");
    assert_eq!(driver, None, "the harness did not start this chromedriver");
    open_signed_in(&mut w, ROUTE).await.unwrap();
    w.probe_identity().await.unwrap();
    assert_eq!(send_hello(&mut w).await.unwrap(), Outcome::Confirmed);
    assert_sent_once(&rig);
    w.finish().await;
    // The endpoint is ours to end, with any browser it still runs on the profile.
    let driver_pid = remote.child.id();
    drop(remote);
    kill_profile_processes(rig.profile_dir());
    assert!(wait_dead(driver_pid, DEATH_LIMIT).await);
    rig.assert_no_browser_left(Some(driver_pid)).await;
}
