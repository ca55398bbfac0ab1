//! The account switch a trial makes while worker 1 is down (`account_switched`, the
//! `account_switch` hazard, a stale restore of another account): the profile's sign-in comes
//! to belong to the site's other account.

use crate::journal::{Journal, NewRun};
use crate::plan::Hazard;
use crate::trial::context::UnitCtx;
use crate::worker::{TaskError, Worker};

/// Why a trial whose session was switched to another account demands a stop (what
/// `FaultUnit::demands_stop` says for every account switch): the agent cannot tell whose
/// work it was doing, and signing in again as itself to act is a guess.
pub(super) const DEMANDS_STOP: &str =
    "the profile's session was switched to another account under the worker";

/// Signs the trial's profile in as the site's other account while no worker runs on it: the
/// fixture's account-switch knob, or, on a user's site, a browser of the harness's own on
/// the profile that signs out and signs in as the spec's other account through the adapter.
/// The cookie values that browser held become secrets of the trial.
pub(super) async fn switch_profile_account(e: &mut UnitCtx<'_, '_>) -> Result<(), String> {
    let cookies = harness_sign_in(e).await?;
    e.harness_cookies.extend(cookies);
    Ok(())
}

/// The switch itself; returns the cookie values its browsers held.
async fn harness_sign_in(e: &UnitCtx<'_, '_>) -> Result<Vec<String>, String> {
    let site = e.site;
    if site.is_fixture() {
        site.set_hazard(Hazard::AccountSwitch, true)?;
        return Ok(Vec::new());
    }
    // The harness's browsers bump the profile's generation as any worker's do; the switch
    // is the world's, so the generation goes back to what it was (a restored backup stays
    // older than the run's last session, and reads as rolled back, not advanced).
    let generation = e
        .store
        .marker(&e.profile)
        .map_err(|err| format!("the profile's marker: {err}"))?
        .generation;
    let switched = browsers_sign_in(e).await;
    e.store
        .rewind_generation(&e.profile, generation)
        .map_err(|err| format!("the profile's generation could not be put back: {err}"))?;
    switched
}

/// Signs the profile in as the spec's other account with a browser of the harness's own,
/// and checks with a second one that the sign-in outlived the first.
async fn browsers_sign_in(e: &UnitCtx<'_, '_>) -> Result<Vec<String>, String> {
    let site = e.site;
    let other = site
        .spec()
        .other_account
        .clone()
        .ok_or("the site spec names no other account")?;
    let fail =
        |what: &str, e: &dyn std::error::Error| format!("{what}: {}", crate::error::error_chain(e));
    // A journal of its own: this browser is the harness's, not an incarnation of the run.
    let journal_path = e.root.join("account-switch.sqlite3");
    let journal = Journal::open(&journal_path).map_err(|e| fail("the switch's journal", &e))?;
    let run_id = format!("switch-{:08x}", rand::random::<u32>());
    journal
        .create_run(&NewRun::new(
            run_id.clone(),
            "account-switch",
            "account-switch",
        ))
        .map_err(|e| fail("the switch's journal", &e))?;
    let mut spec = e.crew.base.clone();
    spec.run_id = run_id;
    spec.incarnation = 1;
    spec.journal_path = journal_path;
    spec.tmp_dir = e.root.join("tmp-switch");
    spec.account = other.clone();
    spec.armed = None;
    // Straight to the site, so the proxy's log and marks stay the trial's own workers';
    // through it only where nothing else reaches the site (its HTTPS intercepted, its
    // name resolved by the proxy).
    if !site.reached_only_through_proxy() {
        spec.proxy = None;
        spec.proxy_trust = None;
    }
    spec.evidence_dir = None;
    let mut worker = Worker::start_standalone(spec.clone(), site.adapter())
        .await
        .map_err(|e| fail("the switch's browser", &e))?;
    let home = site.spec().site.home();
    let switched = async {
        let page = worker.open(&home).await?;
        page.delete_cookies().await?;
        let page = worker.open(&home).await?;
        if !page.is_sign_in().await? {
            return Err(TaskError::UnexpectedReply {
                what: "the home route after signing out (no sign-in page)",
            });
        }
        page.sign_in(&other).await
    }
    .await;
    let mut cookies = worker.cookie_values().await;
    worker.finish().await;
    switched.map_err(|e| fail("signing in as the other account", &e))?;
    // The switch counts only if it outlived its browser: a session cookie that Chromium
    // never wrote to the profile signs nobody in. A second browser reads who it is.
    spec.incarnation = 2;
    let mut check = Worker::start_standalone(spec, site.adapter())
        .await
        .map_err(|e| fail("the switch's check browser", &e))?;
    let seen = async { check.open(&home).await?.read().await }.await;
    cookies.extend(check.cookie_values().await);
    check.finish().await;
    let seen = seen.map_err(|e| fail("reading who the profile is signed in as", &e))?;
    if seen.account.as_deref() != Some(other.id.as_str()) {
        return Err(format!(
            "the profile was signed in as the other account, but a new browser on it is {} (the site's session cookie did not outlive the browser)",
            seen.account.map_or_else(
                || "signed out".to_owned(),
                |a| format!("signed in as `{a}`")
            )
        ));
    }
    Ok(cookies)
}
