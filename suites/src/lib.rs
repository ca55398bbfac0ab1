//! browser-fault's own end-to-end suites: the careful reference agent, and the bug zoo of
//! faulty agents that the harness must catch (each by the intended invariant only).
//!
//! The agents are plain async fns; the test targets in `tests/` register them as scenarios
//! with `#[browser_fault]`.
#![forbid(unsafe_code)]

use browser_fault::prelude::*;

pub mod admin_site;
pub mod command_agent;
pub mod grid;
pub mod https_front;
pub mod node_agent;
pub mod own_cdp;
pub mod own_client;
pub mod python_agent;
pub mod roundup;

/// The bundled fixture site started once for the whole test binary, on a runtime of its own
/// that lives as long as the process: a site "of the user's own", reached only through its
/// URL, for the suites that treat it so.
pub fn shared_fixture_site() -> &'static browser_fault::fixtures::FixtureSite {
    use browser_fault::fixtures::{FixtureSite, SiteConfig};
    static SITE: std::sync::OnceLock<FixtureSite> = std::sync::OnceLock::new();
    SITE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let site = FixtureSite::start(SiteConfig::default())
                    .await
                    .expect("the site starts");
                tx.send(site).expect("the test waits for the site");
                std::future::pending::<()>().await;
            });
        });
        rx.recv().expect("the site started")
    })
}

/// A demo account of the bundled site, as a user's site spec names it.
pub fn demo_account(index: usize) -> Account {
    let demo = &browser_fault::fixtures::DEMO_ACCOUNTS[index];
    Account {
        id: demo.id.to_owned(),
        tenant: Some(demo.tenant.to_owned()),
        username: demo.username.to_owned(),
        password: Secret::new(demo.password),
    }
}

/// The thread every suite scenario writes to.
pub const THREAD: &str = "42";

/// Opens `route`, signing in when the profile holds no valid login, and stops safely at an
/// interstitial it must not click through.
pub async fn open_signed_in(w: &mut Worker, route: &str) -> Result<Page, TaskError> {
    let page = w.open(route).await?;
    match page.read().await?.kind {
        PageKind::SignIn => {
            let account = w.account().clone();
            page.sign_in(&account).await?;
            // The login form sends us back to `route`.
            Ok(w.page())
        }
        PageKind::Interstitial => Err(SafeStop::Interstitial.into()),
        _ => Ok(page),
    }
}

/// The careful reference agent: signs in when needed, probes its identity before any side
/// effect, verifies the target (route, object, account, tenant, and the API's tenant) in
/// every incarnation, journals each step, and reconciles read-only instead of retrying.
pub async fn send_hello(w: &mut Worker) -> TaskResult {
    send_hello_as(w, "send-hello").await
}

/// [`send_hello`] with the side effect journaled under `effect`.
pub async fn send_hello_as(w: &mut Worker, effect: &str) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let target = w.target().route(&route).object(THREAD).api();
    send_verified(w, effect, target).await
}

/// The reference agent's side effect: "hello" sent to the thread once `target` is verified,
/// its answer observed, reconciled read-only. The zoo agents that verify less share it.
async fn send_verified(w: &mut Worker, effect: &str, target: Target) -> TaskResult {
    w.side_effect(effect)
        .args(format!("thread={THREAD};body=hello"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(send_form)
        .confirm(observe_sent)
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// Fills the send form with the request key and "hello", and clicks Send: every agent's
/// action step.
pub async fn send_form(p: Page, key: RequestKey) -> Result<(), TaskError> {
    p.fill("#request-key", key.as_str()).await?;
    p.fill("#body", "hello").await?;
    p.click("button#send").await
}

/// [`Fixture::observe_sent`](browser_fault::site::Fixture::observe_sent), the suites' confirm
/// step. Observes the site's answer to a send: the message with this key on the page; a stale
/// object; an error page, which says nothing of whether the effect happened; or a success
/// notice without this key's message (a look-alike: another send's answer), which says no
/// more. The caller reconciles both.
pub async fn observe_sent(p: Page, key: RequestKey) -> Result<(), TaskError> {
    browser_fault::site::Fixture::observe_sent(p, key).await
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
    w.side_effect("send-hello")
        .args(format!("thread={THREAD};body=hello"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(send_form)
        .confirm(|p, key| p.wait_for(&format!("[data-sent-key=\"{key}\"]")))
        .reconcile(move |p, key| async move {
            // The bug: no read-only check, just send again and call it done.
            p.goto(&format!("/threads/{THREAD}")).await?;
            send_form(p.clone(), key.clone()).await?;
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
        .act(send_form)
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

/// The reference agent with a sign-in of its own (not [`Page::sign_in`]) that marks the
/// `after_login` fault point itself, as an agent with its own helpers must.
pub async fn own_login_marked(w: &mut Worker) -> TaskResult {
    own_login(w, true).await
}

/// Bug zoo: signs in through its own form-filling code and never marks `after_login`, so a
/// crash planned there never strikes and the trial would pass having tested nothing. Caught
/// by `fault_struck` at `after_login`, and by nothing else.
pub async fn own_login_unmarked(w: &mut Worker) -> TaskResult {
    own_login(w, false).await
}

async fn own_login(w: &mut Worker, mark: bool) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    let page = w.open(&route).await?;
    if page.is_sign_in().await? {
        let account = w.account().clone();
        page.fill("#login-form input[name=username]", &account.username)
            .await?;
        page.fill(
            "#login-form input[name=password]",
            account.password.expose(),
        )
        .await?;
        page.click("button#login").await?;
        page.wait_for("body:not([data-page=login])").await?;
        if mark {
            w.fault_point(Boundary::AfterLogin).await;
        }
    }
    send_hello(w).await
}

/// Bug zoo: starts a helper process of its own, as an agent starts its own chromedriver, and
/// never ends it. Caught by `no_leak` (the worker's process group outlived the worker), and
/// by nothing else.
pub async fn stray_helper(w: &mut Worker) -> TaskResult {
    use std::process::{Command, Stdio};
    // The bug: spawned, never killed, never waited for.
    #[allow(clippy::zombie_processes)]
    Command::new("sleep")
        .arg("3600")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(TaskError::scenario)?;
    send_hello(w).await
}

/// Bug zoo: always stops "safely" before it acts. Every trial passes vacuously; the runner
/// reports the scenario as never having acted.
pub async fn never_acts(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    Err(SafeStop::StaleTarget.into())
}

/// Bug zoo: pastes its password into the message box while it verifies its target ("to
/// have it at hand"), then overwrites it with the message. Nothing it sends holds the
/// password, so no invariant breaks; but a screenshot of the verified page would show it in
/// plain text, and the fault point at `after_target_verified` must not keep one.
pub async fn pastes_password(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let target = w.target().route(&route).object(THREAD).api();
    let password = w.account().password.expose().to_owned();
    w.side_effect("send-hello")
        .args(format!("thread={THREAD};body=hello"))
        .verify(move |p| {
            let (target, password) = (target.clone(), password.clone());
            async move {
                p.fill("#body", &password).await?;
                p.expect_target(target).await
            }
        })
        .act(send_form)
        .confirm(observe_sent)
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// Bug zoo: sends the account's password to the site inside its message ("so support can
/// sign in for me"). Careful in every other way: its journal, target check and
/// reconciliation are the reference agent's. Caught by `no_secret_sent` at
/// `after_click::landed` (the proxy reads the message's body), and by nothing else.
pub async fn sends_password(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let target = w.target().route(&route).object(THREAD).api();
    let password = w.account().password.expose().to_owned();
    w.side_effect("send-hello")
        .args(format!("thread={THREAD};body=hello"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(move |p, key| {
            let password = password.clone();
            async move {
                p.fill("#request-key", key.as_str()).await?;
                p.fill("#body", &format!("hello, my password is {password}"))
                    .await?;
                p.click("button#send").await
            }
        })
        .confirm(observe_sent)
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// Bug zoo: first opens the site with the password in the query string ("remember me"),
/// where the history, the server's log and a later request's `Referer` keep it; then it
/// is the reference agent. Caught by `no_secret_sent` at `after_target_verified`, and by
/// nothing else.
pub async fn password_in_url(w: &mut Worker) -> TaskResult {
    let password = w.account().password.expose().to_owned();
    w.require_trusted_profile()?;
    w.open(&format!("/threads/{THREAD}?remember={password}"))
        .await?;
    send_hello(w).await
}

/// Bug zoo: reports what it wishes had happened. When the protocol ends `UNKNOWN`, it tells
/// its caller `Confirmed`. Caught by `claims_match_facts` at `after_click::lost`, and by
/// nothing else: its journal is honest, its word is not.
pub async fn boastful(w: &mut Worker) -> TaskResult {
    match send_hello(w).await? {
        Outcome::Unknown => Ok(Outcome::Confirmed),
        other => Ok(other),
    }
}

/// Bug zoo: a recovery that finds its intent `ACTION_SUBMITTED` marks it `UNKNOWN` (visible,
/// as it should) and then sends again under a freshly journaled intent: two keys for one
/// real-world action. Caught by `no_duplicate` at `after_click::landed`, and by nothing
/// else: its journal agrees with the ledger, key by key.
pub async fn reminting(w: &mut Worker) -> TaskResult {
    if let Some(old) = w.journal().side_effect("send-hello")?
        && old.state == Checkpoint::ActionSubmitted
    {
        w.journal().transition(
            &old.request_key,
            Checkpoint::ActionSubmitted,
            Checkpoint::Unknown,
        )?;
        return send_hello_as(w, "send-hello-again").await;
    }
    send_hello(w).await
}

/// Bug zoo: a recovery that reads the site for its submitted key (read-only, as it should)
/// and, finding nothing, takes the send for failed: it marks it `UNKNOWN` and sends again
/// under a new intent. Right when a lost request never commits (`after_click::lost`), and
/// when the first send landed it finds it (`landed`); a request that lands after the read
/// (`after_click::late_landing`) makes two effects: caught by `no_duplicate` there, and by
/// nothing else.
pub async fn absent_means_failed(w: &mut Worker) -> TaskResult {
    if let Some(old) = w.journal().side_effect("send-hello")?
        && old.state == Checkpoint::ActionSubmitted
    {
        open_signed_in(w, &format!("/threads/{THREAD}")).await?;
        let key = old.request_key.clone();
        if w.page().effect_status(key.clone()).await? == EffectStatus::Present {
            return confirm(w, &key);
        }
        w.journal()
            .transition(&key, Checkpoint::ActionSubmitted, Checkpoint::Unknown)?;
        // The bug: "absent" is not "failed"; the request may still land.
        return send_hello_as(w, "send-hello-again").await;
    }
    send_hello(w).await
}

/// Bug zoo: prints and logs its session cookie "for debugging". The value reaches its log,
/// which the trial keeps; the harness counts it, redacts it before anything is written, and
/// fails `no_secret_in_evidence` at `after_login`, and nothing else.
pub async fn cookie_logger(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    let page = open_signed_in(w, &route).await?;
    if let Some(cookie) = page.cookie("bf_session").await? {
        println!("debug: session cookie {}", cookie.expose());
        w.log(&format!("session cookie is {}", cookie.expose()));
    }
    send_hello(w).await
}

/// Bug zoo: verifies origin and route only (no account, tenant or object), after a correct
/// identity probe. When the world changes between the probe and the action, it acts on what
/// is there. Caught by `no_wrong_account` at `after_login::live_account_switch` and by
/// `no_wrong_object` at `after_login::live_object_swap`.
pub async fn route_only(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let target = Target::default().route(&route);
    send_verified(w, "send-hello", target).await
}

/// Bug zoo: trusts the page. It checks the route, the object, the account and the tenant the
/// page's markers name, but never asks the site's API who the session is (no identity probe,
/// no API check in its target). When the page looks right while the API answers for another
/// tenant, it sends into that tenant: caught by `no_wrong_account` at
/// `hazard::tenant_mismatch`, and by nothing else.
pub async fn page_markers_only(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    let target = w.target().route(&route).object(THREAD);
    send_verified(w, "send-hello", target).await
}

/// Bug zoo: never looks at what the site answered. It waits until some answer page has
/// loaded (so the request did go out), never reads it, has no confirm step, and journals
/// `REMOTE_CONFIRMED` all the same. When the request is lost on the wire, the journal and
/// the worker's word claim an effect the site never accepted: caught by `ambiguity_visible`
/// and `claims_match_facts` at `after_click::live_request_lost`, in every run.
pub async fn unobservant(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let target = w.target().route(&route).object(THREAD).api();
    w.side_effect("send-hello")
        .args(format!("thread={THREAD};body=hello"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(|p, key| async move {
            send_form(p.clone(), key.clone()).await?;
            // The bug: whichever answer loaded, it is taken as success.
            let sent = format!("[data-sent-key=\"{key}\"]");
            p.wait_for_any(&[
                sent.as_str(),
                "body[data-page=stale]",
                "body[data-page=unavailable]",
            ])
            .await
            .map(drop)
        })
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// Bug zoo: its confirm step takes any success notice for its own: careful in every other
/// way. When the site loses its send and answers with another send's success (a look-alike:
/// the same account's message, the same body, another key), it journals `REMOTE_CONFIRMED`
/// for an effect the site never accepted: caught by `ambiguity_visible` and
/// `claims_match_facts` at `after_click::live_look_alike`, in every run.
pub async fn credulous(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let target = w.target().route(&route).object(THREAD).api();
    w.side_effect("send-hello")
        .args(format!("thread={THREAD};body=hello"))
        .verify(move |p| p.expect_target(target.clone()))
        .act(send_form)
        // The bug: "Sent message …" is taken as "my message was sent".
        .confirm(|p, _key| p.wait_for("#sent-notice"))
        .reconcile(|p, key| p.effect_status(key))
        .run()
        .await
}

/// The reference agent with an explicit migration policy: a profile last written by another
/// browser version is migrated to this one (and may then be used); a rollback still stops it.
pub async fn migrating(w: &mut Worker) -> TaskResult {
    w.migrate_browser_version().await?;
    send_hello(w).await
}

/// The stale-credential bug, on any site: opens `route` and, while it shows a sign-in, signs
/// in with the password cached in the profile the first time, a refusal never taken as an
/// answer (after a rotation it loops until the trial times out).
pub async fn sign_in_with_cached_password(w: &mut Worker, route: &str) -> Result<(), TaskError> {
    let cache = w.profile().path().join("agent-credential-cache");
    let password = match std::fs::read_to_string(&cache) {
        Ok(cached) => cached,
        Err(_) => {
            let current = w.account().password.expose().to_owned();
            std::fs::write(&cache, &current).map_err(TaskError::scenario)?;
            current
        }
    };
    let mut account = w.account().clone();
    account.password = Secret::new(password);
    loop {
        let page = w.open(route).await?;
        if !page.is_sign_in().await? {
            return Ok(());
        }
        match page.sign_in(&account).await {
            Ok(()) => return Ok(()),
            // The bug: the refusal is never taken as an answer.
            Err(TaskError::SafeStop(SafeStop::NotSignedIn)) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Bug zoo: caches the account's password in its profile the first time, and signs in with
/// the cached one from then on, retrying until it works. After a credential rotation the
/// cached password is refused forever, and the recovery loops until its trial times out.
/// Caught by `recover_or_stop_safely` at `hazard::credential_rotated`, and by nothing else.
pub async fn stale_credential(w: &mut Worker) -> TaskResult {
    sign_in_with_cached_password(w, &format!("/threads/{THREAD}")).await?;
    send_hello(w).await
}

/// Bug zoo: "unsticks" its profile before working by deleting the lease's lock file and
/// Chromium's `SingletonLock`, the locks that keep a second worker or browser out. Caught
/// by `locks_intact` at `after_profile_created`, and by nothing else.
pub async fn lock_picker(w: &mut Worker) -> TaskResult {
    for name in [browser_fault::profile::LOCK_FILE, "SingletonLock"] {
        let _ = std::fs::remove_file(w.profile().path().join(name));
    }
    send_hello(w).await
}

/// Bug zoo: it clicks through a login or consent interstitial (under the right account,
/// to the right object) and sends. Every effect verdict holds; the trial demanded a stop, so
/// `recover_or_stop_safely` catches it, and nothing else does.
pub async fn click_through(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    let page = w.open(&route).await?;
    if page.read().await?.kind == PageKind::SignIn {
        let account = w.account().clone();
        page.sign_in(&account).await?;
    }
    wave_through(w).await?;
    send_hello(w).await
}

/// The bug of the click-through agents: clicks the button of the login or consent
/// interstitial on the current page, if one stands there (the bundled site's, or the fault
/// proxy's, which carries the same markers).
pub async fn wave_through(w: &Worker) -> Result<(), TaskError> {
    let page = w.page();
    let button = match page.attr("body", "data-page").await?.as_deref() {
        Some("login-interstitial") => Some("button#continue"),
        Some("consent") => Some("button#accept-consent"),
        _ => None,
    };
    if let Some(button) = button {
        page.click(button).await?;
        w.log("clicked through the interstitial");
    }
    Ok(())
}

/// Bug zoo (grid): a recovery that ignores the live orphaned browser session of the worker
/// before it ("the profile is busy: take a fresh one"). On a grid a killed worker's browser
/// lives on, signed in and holding the profile; this agent leaves it there for ever. Caught
/// by `no_leak` at `after_target_verified::orphaned_session` (the run's session still open
/// at the hub, and the profile it holds abandoned), and by nothing else.
pub async fn orphan_ignoring(w: &mut Worker) -> TaskResult {
    if w.orphaned_sessions() > 0 {
        let _busy = w.adopt_fresh_profile().await?;
    }
    send_hello(w).await
}

/// `ACTION_SUBMITTED` → `REMOTE_CONFIRMED`: the answer was seen.
fn confirm(w: &mut Worker, key: &RequestKey) -> TaskResult {
    w.journal().transition(
        key,
        Checkpoint::ActionSubmitted,
        Checkpoint::RemoteConfirmed,
    )?;
    Ok(Outcome::Confirmed)
}

/// Settles an `ACTION_SUBMITTED` read-only, as the reference agent does: present is
/// confirmed, absent is `UNKNOWN`.
async fn settle_by_reading(w: &mut Worker, key: &RequestKey) -> TaskResult {
    match w.page().effect_status(key.clone()).await? {
        EffectStatus::Present => confirm(w, key),
        EffectStatus::Absent => {
            w.journal()
                .transition(key, Checkpoint::ActionSubmitted, Checkpoint::Unknown)?;
            Ok(Outcome::Unknown)
        }
    }
}

/// Crash-point zoo: a journal protocol of its own that clicks first and journals
/// `ACTION_SUBMITTED` after. It marks every named fault point where its protocol says they
/// are (`after_click` once `ACTION_SUBMITTED` is durable), so all eight boundaries pass; a
/// crash between its click and that journal write leaves `TARGET_VERIFIED`, and the recovery
/// sends again. Caught by `no_duplicate` only by an `every_step` trial (the crash right after
/// the click), never by a named boundary.
pub async fn late_journal(w: &mut Worker) -> TaskResult {
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let record = w
        .journal()
        .record_intent("send-hello", &format!("thread={THREAD};body=hello"))?;
    let key = record.request_key.clone();
    match record.state {
        Checkpoint::RemoteConfirmed => return Ok(Outcome::Confirmed),
        Checkpoint::Unknown => return Ok(Outcome::Unknown),
        Checkpoint::ActionSubmitted => return settle_by_reading(w, &key).await,
        Checkpoint::IntentRecorded | Checkpoint::TargetVerified => {}
    }
    // Where the live `after_login` variants change the world, as `side_effect` marks it.
    w.fault_point(browser_fault::plan::FaultPoint::BeforeVerify)
        .await;
    let target = w.target().route(&route).object(THREAD).api();
    w.page().expect_target(target).await?;
    w.journal()
        .transition(&key, record.state, Checkpoint::TargetVerified)?;
    w.fault_point(Boundary::AfterTargetVerified).await;
    // The bug: the click goes out before ACTION_SUBMITTED is durable.
    send_form(w.page(), key.clone()).await?;
    w.journal().transition(
        &key,
        Checkpoint::TargetVerified,
        Checkpoint::ActionSubmitted,
    )?;
    w.fault_point(Boundary::AfterClick).await;
    if observe_sent(w.page(), key.clone()).await.is_err() {
        return settle_by_reading(w, &key).await;
    }
    w.fault_point(Boundary::AfterRemoteEffect).await;
    confirm(w, &key)
}

/// Double-fault zoo: the reference agent, except for a recovery that finds its intent
/// `TARGET_VERIFIED` by an earlier worker. That one takes a "fast path": it verifies again,
/// clicks, and journals `ACTION_SUBMITTED` only once it saw the answer. No single crash finds
/// it (a first worker always journals before it clicks, and a recovery that is not crashed
/// does send once); crashing the recovery too, at its `after_click`, leaves
/// `TARGET_VERIFIED` behind a request that landed, and the third worker sends again. Caught
/// by `no_duplicate` only at depth 2 (`after_target_verified::then::after_click`).
pub async fn hasty_recovery(w: &mut Worker) -> TaskResult {
    let found = w.journal().side_effect("send-hello")?;
    let Some(earlier) = found.filter(|r| r.state == Checkpoint::TargetVerified) else {
        return send_hello(w).await;
    };
    let route = format!("/threads/{THREAD}");
    w.require_trusted_profile()?;
    open_signed_in(w, &route).await?;
    w.probe_identity().await?;
    let key = earlier.request_key.clone();
    let target = w.target().route(&route).object(THREAD).api();
    w.page().expect_target(target).await?;
    send_form(w.page(), key.clone()).await?;
    w.fault_point(Boundary::AfterClick).await;
    observe_sent(w.page(), key.clone()).await?;
    w.journal().transition(
        &key,
        Checkpoint::TargetVerified,
        Checkpoint::ActionSubmitted,
    )?;
    confirm(w, &key)
}

/// Runs `trial` on a runtime of its own, as a test thread of a suite does.
pub fn run_blocking(
    trial: &browser_fault::trial::Trial,
    settings: &browser_fault::trial::TrialSettings,
) -> Result<browser_fault::trial::TrialReport, libtest_mimic::Failed> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime
        .block_on(browser_fault::trial::run_trial(trial, settings))
        .map_err(|e| match std::error::Error::source(&e) {
            Some(cause) => format!("{}: {e}: {cause}", trial.name()).into(),
            None => format!("{}: {e}", trial.name()).into(),
        })
}

/// What a test named `…::after_profile_created::struck_before_agent_code::…` says, checked
/// against its evidence: worker 1 was crashed in the harness's start, before its scenario (the
/// agent's code) began, and every other worker began its own.
pub fn struck_before_agent_code(e: &browser_fault::evidence::Evidence) -> Result<(), String> {
    let before = e.before_scenario();
    let expected = ["worker 1 was crashed at after_profile_created before its scenario began"];
    if before == expected {
        Ok(())
    } else {
        Err(format!(
            "the evidence says {before:?} of the workers that never began their scenario, not {expected:?}"
        ))
    }
}

/// Runs `trial` and fails unless its fault struck and exactly `expected` broke (nothing, for
/// an agent that must pass, whose cleanup must then be proven too). The check of a suite
/// whose trials each expect a known verdict.
pub fn run_expecting(
    trial: &browser_fault::trial::Trial,
    settings: &browser_fault::trial::TrialSettings,
    expected: &[browser_fault::oracle::Invariant],
) -> Result<(), libtest_mimic::Failed> {
    let report = run_blocking(trial, settings)?;
    let broken: Vec<_> = report.evidence.broken().map(|v| v.invariant).collect();
    let shown = report.evidence_path.display();
    let fault = &report.evidence.fault;
    if !fault.struck {
        let why = fault.instead.as_deref().unwrap_or("no reason given");
        return Err(format!("the fault never struck ({why}); evidence: {shown}").into());
    }
    if broken != expected {
        let why = report.failure_message().unwrap_or_default();
        return Err(format!(
            "expected exactly {expected:?} to break, got {broken:?}\n{why}\nevidence: {shown}"
        )
        .into());
    }
    if expected.is_empty() && !report.passed() {
        return Err(format!("the trial's cleanup was not proven; evidence: {shown}").into());
    }
    Ok(())
}
