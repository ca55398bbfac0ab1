//! What the browser layer does when a step times out or Chromium dies under a live worker,
//! with a real headless Chromium: the exact session is retired and its tree killed, a stale
//! page can never drive a browser again, a killed browser is noticed and relaunched on the
//! same profile over its stale lock, and a lock a live process holds is refused.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use browser_fault::_internal::browser::BrowserError;
use browser_fault::_internal::browser::process::{processes_using_profile, wait_dead};
use browser_fault::_internal::worker::start_standalone;
use browser_fault::worker::{SafeStop, TaskError};
use common::{DEATH_LIMIT, ROUTE, Rig, open_signed_in, singleton_lock};

fn is_retired<T: std::fmt::Debug>(r: Result<T, TaskError>) -> bool {
    matches!(r, Err(TaskError::Browser(BrowserError::Retired)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_step_retires_its_session_kills_its_browser_and_disarms_the_old_page() {
    let mut rig = Rig::new("timeout").await;
    // Long enough that no other step times out with two matrices running on the same two
    // cores (1 s and then 4 s did, under that load: a fill types one key per command).
    rig.spec.step_timeout = Duration::from_secs(15);
    let mut w = start_standalone(
        rig.spec.clone(),
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .unwrap();
    let page = open_signed_in(&mut w, ROUTE).await.unwrap();
    let (Some(browser), Some(driver)) = w.browser_pids() else {
        panic!("a local browser names both pids");
    };

    // Every response now takes far longer than the step's limit.
    rig.site.set_response_delay(Duration::from_secs(60));
    let err = page.goto(ROUTE).await.unwrap_err();
    assert!(
        matches!(err, TaskError::Timeout { step: "goto", after } if after == rig.spec.step_timeout),
        "{err:?}"
    );
    rig.site.set_response_delay(Duration::ZERO);

    // The session's whole tree is gone, and the worker knows it has no browser.
    assert!(
        wait_dead(browser, DEATH_LIMIT).await,
        "chromium outlived the timeout"
    );
    rig.assert_no_browser_left(Some(driver)).await;
    assert!(!w.browser_alive());
    assert_eq!(w.browser_pids(), (None, None));
    // The timed-out caller can no longer act, whatever it tries.
    assert!(is_retired(page.goto(ROUTE).await));
    assert!(is_retired(page.read().await));
    assert!(is_retired(page.click("button#send").await));

    // A relaunched session works; the stale page still cannot drive it.
    w.relaunch_browser().await.unwrap();
    let (Some(browser2), Some(driver2)) = w.browser_pids() else {
        panic!("the relaunched browser names both pids");
    };
    assert_ne!(browser2, browser);
    let fresh = open_signed_in(&mut w, ROUTE).await.unwrap();
    assert_eq!(fresh.read().await.unwrap().label.as_deref(), Some("thread"));
    w.probe_identity().await.unwrap();
    assert!(is_retired(page.goto(ROUTE).await));
    assert!(is_retired(page.fill("#body", "stale").await));
    assert!(
        w.browser_alive(),
        "the stale page did not evict its successor"
    );
    assert!(rig.site.ledger().is_empty());

    let log = w.log_tail().unwrap();
    assert!(
        log.contains("step goto timed out; session retired"),
        "{log}"
    );
    w.finish().await;
    rig.assert_no_browser_left(Some(driver2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_browser_is_noticed_and_relaunched_on_its_profile_over_the_stale_lock() {
    let rig = Rig::new("crash").await;
    let mut w = start_standalone(
        rig.spec.clone(),
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .unwrap();
    let page = open_signed_in(&mut w, ROUTE).await.unwrap();
    w.probe_identity().await.unwrap();
    let (Some(browser), Some(driver)) = w.browser_pids() else {
        panic!("a local browser names both pids");
    };
    assert!(w.browser_alive());

    w.kill_browser();
    assert!(
        wait_dead(browser, DEATH_LIMIT).await,
        "SIGKILL did not end chromium"
    );
    assert!(!w.browser_alive(), "the worker notices the dead browser");
    let err = page.read().await.unwrap_err();
    assert!(
        matches!(err, TaskError::Browser(BrowserError::Crashed)),
        "{err:?}"
    );
    let lock = singleton_lock(rig.profile_dir()).expect("a SIGKILLed chromium keeps its lock");
    assert!(
        lock.to_string_lossy().ends_with(&format!("-{browser}")),
        "{lock:?} names the dead browser"
    );

    w.relaunch_browser().await.unwrap();
    assert!(
        wait_dead(driver, DEATH_LIMIT).await,
        "the old chromedriver ended"
    );
    let (Some(browser2), Some(driver2)) = w.browser_pids() else {
        panic!("the relaunched browser names both pids");
    };
    assert_ne!(browser2, browser);
    let lock2 = singleton_lock(rig.profile_dir()).expect("the new browser holds the lock");
    assert!(lock2.to_string_lossy().ends_with(&format!("-{browser2}")));
    let fresh = open_signed_in(&mut w, ROUTE).await.unwrap();
    assert_eq!(fresh.read().await.unwrap().label.as_deref(), Some("thread"));
    w.probe_identity().await.unwrap();
    assert!(
        is_retired(page.read().await),
        "the old page is bound to the dead session"
    );

    w.finish().await;
    rig.assert_no_browser_left(Some(driver2)).await;
}

/// A process that lives until its stdin closes.
fn live_process() -> Child {
    Command::new("sh")
        .args(["-c", "read line"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap()
}

fn lock_with_owner(profile: &std::path::Path, pid: u32) {
    let lock = profile.join("SingletonLock");
    let _ = std::fs::remove_file(&lock);
    let target = format!("{}-{pid}", browser_fault::_internal::liveness::host_name());
    std::os::unix::fs::symlink(target, lock).unwrap();
}

async fn end(mut holder: Child) {
    drop(holder.stdin.take());
    holder.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_naming_a_live_process_is_refused_at_start_and_at_relaunch() {
    let rig = Rig::new("livelock").await;

    // At start: nothing is launched on a profile a live process holds.
    let holder = live_process();
    lock_with_owner(rig.profile_dir(), holder.id());
    let err = start_standalone(
        rig.spec.clone(),
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, TaskError::SafeStop(SafeStop::ProfileInUse)),
        "{err:?}"
    );
    assert_eq!(
        processes_using_profile(rig.profile_dir()),
        Vec::<u32>::new()
    );
    assert!(
        singleton_lock(rig.profile_dir()).is_some(),
        "a live lock is kept"
    );
    end(holder).await;

    // Its owner is dead now: the same lock is stale and recovered (and the refused worker
    // gave its lease back). The next worker is the run's next incarnation.
    let mut spec = rig.spec.clone();
    spec.incarnation = 2;
    let mut w = start_standalone(
        spec,
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .unwrap();
    open_signed_in(&mut w, ROUTE).await.unwrap();
    let (Some(browser), Some(driver)) = w.browser_pids() else {
        panic!("a local browser names both pids");
    };

    // At relaunch: the dead browser's lock is taken over by a live process.
    w.kill_browser();
    assert!(wait_dead(browser, DEATH_LIMIT).await);
    let holder = live_process();
    lock_with_owner(rig.profile_dir(), holder.id());
    let err = w.relaunch_browser().await.unwrap_err();
    assert!(
        matches!(err, TaskError::SafeStop(SafeStop::ProfileInUse)),
        "{err:?}"
    );
    rig.assert_no_browser_left(Some(driver)).await;
    end(holder).await;

    w.relaunch_browser().await.unwrap();
    let (_, driver2) = w.browser_pids();
    assert_eq!(
        open_signed_in(&mut w, ROUTE)
            .await
            .unwrap()
            .read()
            .await
            .unwrap()
            .label
            .as_deref(),
        Some("thread")
    );
    w.finish().await;
    rig.assert_no_browser_left(driver2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_browser_process_outlives_a_finished_worker() {
    let rig = Rig::new("finish").await;
    let mut w = start_standalone(
        rig.spec.clone(),
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .unwrap();
    open_signed_in(&mut w, ROUTE).await.unwrap();
    let (Some(browser), Some(driver)) = w.browser_pids() else {
        panic!("a local browser names both pids");
    };
    let before = processes_using_profile(rig.profile_dir());
    assert!(
        before.contains(&browser),
        "the profile path finds the browser: {before:?}"
    );
    w.finish().await;
    assert!(wait_dead(browser, DEATH_LIMIT).await);
    rig.assert_no_browser_left(Some(driver)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_browser_process_outlives_a_worker_whose_browser_was_killed() {
    let rig = Rig::new("killed").await;
    let mut w = start_standalone(
        rig.spec.clone(),
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .unwrap();
    open_signed_in(&mut w, ROUTE).await.unwrap();
    let (Some(browser), Some(driver)) = w.browser_pids() else {
        panic!("a local browser names both pids");
    };
    w.kill_browser();
    assert!(wait_dead(browser, DEATH_LIMIT).await);
    // chromedriver survives its browser; ending the worker must end it too.
    assert!(browser_fault::_internal::liveness::pid_alive(driver));
    w.finish().await;
    rig.assert_no_browser_left(Some(driver)).await;
}
