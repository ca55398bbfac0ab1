//! The bug zoo: each faulty agent must be caught by the intended invariant at the intended
//! boundary, and by nothing else. A faulty agent that passes is a bug in the harness.
//!
//! Some cases also check what the evidence says (who made a leaked profile, what a verify
//! step checked, that no file on disk holds a secret), and one checks what the runner's
//! gate sees: a scenario that never acts.

use browser_fault::evidence::Evidence;
use browser_fault::oracle::Invariant;
use browser_fault::prelude::*;
use browser_fault::trial::{self, TrialSettings};
use libtest_mimic::{Failed, Trial as Test};

#[browser_fault(at = "after_click", effects = "42")]
async fn blind_retry(w: &mut Worker) -> TaskResult {
    browser_fault_suites::blind_retry(w).await
}

#[browser_fault(
    at = "stale_profile_restore",
    hazards = ["browser_version_changed"],
    effects = "42"
)]
async fn trusting(w: &mut Worker) -> TaskResult {
    browser_fault_suites::trusting(w).await
}

#[browser_fault(at = "after_profile_created", effects = "42")]
async fn leaky(w: &mut Worker) -> TaskResult {
    browser_fault_suites::leaky(w).await
}

#[browser_fault(at = "after_login", effects = "42")]
async fn chatty(w: &mut Worker) -> TaskResult {
    browser_fault_suites::chatty(w).await
}

#[browser_fault(at = "after_login", effects = "42")]
async fn own_login_unmarked(w: &mut Worker) -> TaskResult {
    browser_fault_suites::own_login_unmarked(w).await
}

#[browser_fault(at = "after_profile_created", effects = "42")]
async fn stray_helper(w: &mut Worker) -> TaskResult {
    browser_fault_suites::stray_helper(w).await
}

#[browser_fault(at = "after_profile_created", effects = "42")]
async fn never_acts(w: &mut Worker) -> TaskResult {
    browser_fault_suites::never_acts(w).await
}

#[browser_fault(at = "after_target_verified", effects = "42")]
async fn pastes_password(w: &mut Worker) -> TaskResult {
    browser_fault_suites::pastes_password(w).await
}

#[browser_fault(at = "after_click", effects = "42")]
async fn sends_password(w: &mut Worker) -> TaskResult {
    browser_fault_suites::sends_password(w).await
}

#[browser_fault(at = "after_target_verified", effects = "42")]
async fn password_in_url(w: &mut Worker) -> TaskResult {
    browser_fault_suites::password_in_url(w).await
}

#[browser_fault(at = "after_click", effects = "42")]
async fn boastful(w: &mut Worker) -> TaskResult {
    browser_fault_suites::boastful(w).await
}

#[browser_fault(at = "after_click", effects = "42")]
async fn reminting(w: &mut Worker) -> TaskResult {
    browser_fault_suites::reminting(w).await
}

#[browser_fault(at = "after_click", effects = "42")]
async fn absent_means_failed(w: &mut Worker) -> TaskResult {
    browser_fault_suites::absent_means_failed(w).await
}

#[browser_fault(at = "after_login", effects = "42")]
async fn cookie_logger(w: &mut Worker) -> TaskResult {
    browser_fault_suites::cookie_logger(w).await
}

#[browser_fault(at = "after_login", hazards = "tenant_mismatch", effects = "42")]
async fn page_markers_only(w: &mut Worker) -> TaskResult {
    browser_fault_suites::page_markers_only(w).await
}

#[browser_fault(at = "after_login", effects = "42")]
async fn route_only(w: &mut Worker) -> TaskResult {
    browser_fault_suites::route_only(w).await
}

/// `route_only` on a site of the user's own whose adapter offers the live changes
/// (`Site::can_change`): the bundled site reached by URL through `AdminFixture`.
#[browser_fault(at = "after_login", effects = "42", site = admin_site)]
async fn route_only_on_admin_site(w: &mut Worker) -> TaskResult {
    browser_fault_suites::route_only(w).await
}

/// `stale_credential` on a site of the user's own whose adapter rotates a password
/// (`SiteChange::RotatePassword`).
#[browser_fault(
    at = "after_login",
    hazards = ["credential_rotated"],
    effects = "42",
    timeout = "20s",
    site = admin_site
)]
async fn stale_credential_on_admin_site(w: &mut Worker) -> TaskResult {
    browser_fault_suites::stale_credential(w).await
}

/// `click_through` on a site of the user's own whose adapter shows its interstitials
/// (`SiteChange::LoginInterstitial`, `SiteChange::ConsentInterstitial`).
#[browser_fault(
    at = "after_profile_created",
    hazards = ["login_interstitial", "consent_interstitial"],
    effects = "42",
    site = admin_site
)]
async fn click_through_on_admin_site(w: &mut Worker) -> TaskResult {
    browser_fault_suites::click_through(w).await
}

/// `page_markers_only` on a site of the user's own whose adapter makes its API answer for
/// another tenant (`SiteChange::ApiForOtherTenant`).
#[browser_fault(
    at = "after_login",
    hazards = "tenant_mismatch",
    effects = "42",
    site = admin_site
)]
async fn page_markers_only_on_admin_site(w: &mut Worker) -> TaskResult {
    browser_fault_suites::page_markers_only(w).await
}

/// `credulous` on a site of the user's own whose adapter makes a look-alike success
/// (`SiteChange::LookAlike`, `Site::look_alike`): the proxy answers its lost send with the
/// look-alike's page.
#[browser_fault(at = "after_click", effects = "42", site = admin_site)]
async fn credulous_on_admin_site(w: &mut Worker) -> TaskResult {
    browser_fault_suites::credulous(w).await
}

fn admin_site() -> SiteSpec {
    use browser_fault_suites::admin_site::AdminFixture;
    use browser_fault_suites::{demo_account, shared_fixture_site};
    let site = shared_fixture_site();
    SiteSpec::new(
        site.base_url(),
        AdminFixture::new().with_changes(&browser_fault::site::SiteChange::ALL),
        demo_account(0),
    )
    .other_account(demo_account(1))
    .with_secrets(site.secrets())
}

/// The trials on the one shared admin site take turns: each changes and resets it.
static ADMIN_SITE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[browser_fault(at = "after_click", effects = "42")]
async fn unobservant(w: &mut Worker) -> TaskResult {
    browser_fault_suites::unobservant(w).await
}

#[browser_fault(
    at = "after_login",
    hazards = ["credential_rotated"],
    effects = "42",
    timeout = "20s"
)]
async fn stale_credential(w: &mut Worker) -> TaskResult {
    browser_fault_suites::stale_credential(w).await
}

#[browser_fault(
    at = "after_profile_created",
    hazards = ["login_interstitial", "consent_interstitial"],
    effects = "42"
)]
async fn click_through(w: &mut Worker) -> TaskResult {
    browser_fault_suites::click_through(w).await
}

#[browser_fault(at = ["after_profile_created", "concurrent_profile"], effects = "42")]
async fn lock_picker(w: &mut Worker) -> TaskResult {
    browser_fault_suites::lock_picker(w).await
}

#[browser_fault(at = "after_click", effects = "42")]
async fn credulous(w: &mut Worker) -> TaskResult {
    browser_fault_suites::credulous(w).await
}

/// A user's site whose ledger can be read when the trial starts, and never again: the site
/// went down mid-trial. Not an agent's bug: the harness must say "site unreachable" in the
/// verdicts that judge the site, never pass them on an empty ledger, never panic, and still
/// remove every profile with proof.
#[derive(Debug)]
struct GoesDown {
    pages: browser_fault::site::Fixture,
    reads: std::sync::atomic::AtomicUsize,
}

#[browser_fault::async_trait]
impl Site for GoesDown {
    async fn sign_in(&self, page: &Page, account: &Account) -> Result<(), TaskError> {
        self.pages.sign_in(page, account).await
    }
    async fn read_page(&self, page: &Page) -> Result<PageFacts, TaskError> {
        self.pages.read_page(page).await
    }
    async fn identity(&self, page: &Page) -> Result<Identity, TaskError> {
        self.pages.identity(page).await
    }
    async fn effect_status(
        &self,
        page: &Page,
        key: &RequestKey,
    ) -> Result<EffectStatus, TaskError> {
        self.pages.effect_status(page, key).await
    }
    async fn ledger(&self) -> Result<Vec<RemoteEffect>, SiteError> {
        if self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            self.pages.ledger().await
        } else {
            Err(SiteError::Status {
                url: "http://127.0.0.1/__ledger".to_owned(),
                status: 503,
            })
        }
    }
    fn is_effect_request(&self, method: &str, path: &str) -> bool {
        self.pages.is_effect_request(method, path)
    }
}

fn site_going_down() -> SiteSpec {
    let site = browser_fault_suites::shared_fixture_site();
    let pages = browser_fault::site::Fixture::new().with_ledger_url(site.ledger_url());
    let adapter = GoesDown {
        pages,
        reads: std::sync::atomic::AtomicUsize::new(0),
    };
    SiteSpec::new(
        site.base_url(),
        adapter,
        browser_fault_suites::demo_account(0),
    )
    .with_secrets(site.secrets())
}

#[browser_fault(at = "after_login", site = site_going_down, effects = "42")]
async fn site_down(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

/// What a case checks of the evidence beyond which invariants broke.
type Extra = fn(&Evidence, &std::path::Path) -> Result<(), String>;

/// (trial, the invariants that must break (exactly these), what else to check)
const CASES: &[(&str, &[Invariant], Extra)] = &[
    (
        "site_down::after_login",
        &[
            Invariant::NoWrongAccount,
            Invariant::NoDuplicate,
            Invariant::AmbiguityVisible,
            Invariant::ClaimsMatchFacts,
            Invariant::NoWrongObject,
        ],
        |e, _| {
            explains(e, Invariant::NoDuplicate, "site unreachable")?;
            explains(e, Invariant::NoWrongAccount, "503")?;
            if !e.profile_cleaned {
                return Err("the profiles were not removed with proof".to_owned());
            }
            Ok(())
        },
    ),
    (
        "blind_retry::after_click::landed",
        &[Invariant::NoDuplicate],
        |e, _| explains(e, Invariant::NoDuplicate, "the same key sent twice"),
    ),
    (
        "trusting::stale_profile_restore::other_account",
        &[Invariant::NoWrongAccount, Invariant::ProfileTrusted],
        |e, _| {
            // Its verify step looks at a form only: the evidence says it checked nothing.
            let unchecked = e
                .workers
                .iter()
                .flat_map(|w| &w.verified)
                .any(|v| v.checked.is_empty());
            if unchecked && e.warnings.iter().any(|w| w.contains("checked nothing")) {
                Ok(())
            } else {
                Err("no warning that the verify step checked nothing".into())
            }
        },
    ),
    (
        "leaky::after_profile_created",
        &[Invariant::NoLeak],
        |e, _| {
            explains(
                e,
                Invariant::NoLeak,
                "a profile created by the trial (for worker 1) was abandoned",
            )?;
            match e.leaks.as_slice() {
                [leak] if leak.abandoned && !leak.profile.is_empty() => Ok(()),
                other => Err(format!("the leak is not named: {other:?}")),
            }
        },
    ),
    (
        "stray_helper::after_profile_created",
        &[Invariant::NoLeak],
        |e, _| {
            explains(
                e,
                Invariant::NoLeak,
                "worker 2 left 1 process(es) of its process group running after it ended (sleep)",
            )
        },
    ),
    (
        "chatty::after_login",
        &[Invariant::NoSecretInEvidence],
        no_canary_on_disk,
    ),
    (
        "own_login_unmarked::after_login",
        &[Invariant::FaultStruck],
        |e, _| {
            explains(
                e,
                Invariant::FaultStruck,
                "worker 1 finished (confirmed) without crossing `after_login`",
            )
        },
    ),
    // Every verdict holds: the trial alone cannot tell. The runner's gate can: the trial
    // is one where a correct agent acts, and nobody did.
    ("never_acts::after_profile_created", &[], |e, _| {
        if e.acted() {
            Err("the agent acted".into())
        } else {
            Ok(())
        }
    }),
    (
        "boastful::after_click::lost",
        &[Invariant::ClaimsMatchFacts],
        |e, _| {
            explains(
                e,
                Invariant::ClaimsMatchFacts,
                "worker 2 claimed confirmed, but the journal holds 1 UNKNOWN and the ledger 0 effect(s)",
            )
        },
    ),
    (
        "reminting::after_click::landed",
        &[Invariant::NoDuplicate],
        |e, _| explains(e, Invariant::NoDuplicate, "two keys for one intent"),
    ),
    (
        "sends_password::after_click::landed",
        &[Invariant::NoSecretSent],
        |e, dir| {
            explains(
                e,
                Invariant::NoSecretSent,
                "an account's password in the body of POST /threads/42/messages",
            )?;
            no_file_holds_a_canary(dir)
        },
    ),
    (
        "password_in_url::after_target_verified",
        &[Invariant::NoSecretSent],
        |e, dir| {
            explains(
                e,
                Invariant::NoSecretSent,
                "an account's password in the query string of GET /threads/42",
            )?;
            no_file_holds_a_canary(dir)
        },
    ),
    (
        "cookie_logger::after_login",
        &[Invariant::NoSecretInEvidence],
        no_canary_on_disk,
    ),
    (
        "route_only::after_login::live_account_switch",
        &[Invariant::NoWrongAccount],
        |e, _| struck(e),
    ),
    (
        "route_only::after_login::live_tenant_switch",
        &[Invariant::NoWrongAccount],
        |e, _| explains(e, Invariant::NoWrongAccount, "1 in another tenant"),
    ),
    (
        "page_markers_only::hazard::tenant_mismatch",
        &[Invariant::NoWrongAccount],
        |e, _| explains(e, Invariant::NoWrongAccount, "1 in another tenant"),
    ),
    (
        "page_markers_only_on_admin_site::hazard::tenant_mismatch",
        &[Invariant::NoWrongAccount],
        |e, _| explains(e, Invariant::NoWrongAccount, "1 in another tenant"),
    ),
    (
        "route_only::after_login::live_object_swap",
        &[Invariant::NoWrongObject],
        |e, _| struck(e),
    ),
    (
        "route_only_on_admin_site::after_login::live_account_switch",
        &[Invariant::NoWrongAccount],
        |e, _| struck(e),
    ),
    (
        "route_only_on_admin_site::after_login::live_tenant_switch",
        &[Invariant::NoWrongAccount],
        |e, _| explains(e, Invariant::NoWrongAccount, "1 in another tenant"),
    ),
    (
        "route_only_on_admin_site::after_login::live_object_swap",
        &[Invariant::NoWrongObject],
        |e, _| struck(e),
    ),
    (
        "trusting::hazard::browser_version_changed",
        &[Invariant::ProfileTrusted],
        |e, _| {
            explains(
                e,
                Invariant::ProfileTrusted,
                "worker 2 acted on a profile its own check flagged (browser version changed)",
            )
        },
    ),
    (
        "stale_credential::hazard::credential_rotated",
        &[Invariant::RecoverOrStopSafely],
        |e, _| explains(e, Invariant::RecoverOrStopSafely, "worker 2 timed out"),
    ),
    (
        "stale_credential_on_admin_site::hazard::credential_rotated",
        &[Invariant::RecoverOrStopSafely],
        |e, _| explains(e, Invariant::RecoverOrStopSafely, "worker 2 timed out"),
    ),
    (
        "lock_picker::after_profile_created",
        &[Invariant::LocksIntact],
        |e, _| {
            explains(
                e,
                Invariant::LocksIntact,
                "worker 2: lease lock file removed or replaced; worker 2: browser profile lock removed",
            )
        },
    ),
    // It passes where every unknown outcome never committed, as it did before late landings:
    (
        "absent_means_failed::after_click::landed",
        &[],
        passes_and_acts,
    ),
    (
        "absent_means_failed::after_click::lost",
        &[],
        passes_and_acts,
    ),
    (
        "absent_means_failed::after_click::late_landing",
        &[Invariant::NoDuplicate],
        |e, _| explains(e, Invariant::NoDuplicate, "two keys for one intent"),
    ),
    (
        "click_through::hazard::login_interstitial",
        &[Invariant::RecoverOrStopSafely],
        |e, _| {
            explains(
                e,
                Invariant::RecoverOrStopSafely,
                "the trial demands a stop (a login interstitial stands before the target), and the site accepted 1 effect(s) under the agent's own account all the same",
            )
        },
    ),
    (
        "click_through::hazard::consent_interstitial",
        &[Invariant::RecoverOrStopSafely],
        |e, _| {
            explains(
                e,
                Invariant::RecoverOrStopSafely,
                "a consent interstitial stands before the target",
            )
        },
    ),
    (
        "click_through_on_admin_site::hazard::login_interstitial",
        &[Invariant::RecoverOrStopSafely],
        |e, _| {
            explains(
                e,
                Invariant::RecoverOrStopSafely,
                "the trial demands a stop (a login interstitial stands before the target), and the site accepted 1 effect(s) under the agent's own account all the same",
            )
        },
    ),
    (
        "click_through_on_admin_site::hazard::consent_interstitial",
        &[Invariant::RecoverOrStopSafely],
        |e, _| {
            explains(
                e,
                Invariant::RecoverOrStopSafely,
                "a consent interstitial stands before the target",
            )
        },
    ),
    (
        // It removed the locks itself before the trial could: the trial's removal never
        // happened (not struck), and the agent's own removal is not taken for the trial's.
        "lock_picker::concurrent_profile::lock_removed",
        &[Invariant::FaultStruck, Invariant::LocksIntact],
        |e, _| {
            explains(
                e,
                Invariant::FaultStruck,
                "the lease's lock file was not there",
            )?;
            explains(
                e,
                Invariant::LocksIntact,
                "worker 1: lease lock file removed or replaced",
            )
        },
    ),
    (
        "credulous::after_click::live_look_alike",
        &[Invariant::AmbiguityVisible, Invariant::ClaimsMatchFacts],
        |e, _| {
            explains(
                e,
                Invariant::AmbiguityVisible,
                "REMOTE_CONFIRMED with no effect",
            )
        },
    ),
    (
        "credulous_on_admin_site::after_click::live_look_alike",
        &[Invariant::AmbiguityVisible, Invariant::ClaimsMatchFacts],
        |e, _| {
            explains(
                e,
                Invariant::AmbiguityVisible,
                "REMOTE_CONFIRMED with no effect",
            )
        },
    ),
    // It confirms by any notice, but where its own send lands the notice is its own.
    ("credulous::after_click::landed", &[], passes_and_acts),
    // It sends nothing it should not: it passes, but the page it verified showed its
    // password, and the fault point's screenshot of that page is not kept.
    ("pastes_password::after_target_verified", &[], |e, dir| {
        passes_and_acts(e, dir)?;
        screenshot_withheld(
            e,
            dir,
            "not kept: the page showed the account's password in a field's value",
        )
    }),
    (
        "unobservant::after_click::live_request_lost",
        &[Invariant::AmbiguityVisible, Invariant::ClaimsMatchFacts],
        |e, _| {
            explains(
                e,
                Invariant::AmbiguityVisible,
                "REMOTE_CONFIRMED with no effect",
            )
        },
    ),
];

/// A case that breaks nothing and acted: the agent passes this trial (unlike `never_acts`,
/// which passes by never acting and is left to the never-acted gate).
fn passes_and_acts(e: &Evidence, _: &std::path::Path) -> Result<(), String> {
    if e.acted() && e.fault.struck {
        Ok(())
    } else {
        Err("it did not act, or the fault did not strike".into())
    }
}

/// The fault point's screenshot was withheld for `why`, and no screenshot is on disk.
fn screenshot_withheld(e: &Evidence, dir: &std::path::Path, why: &str) -> Result<(), String> {
    if e.screenshot.is_some() {
        return Err(format!("a screenshot was kept: {:?}", e.screenshot));
    }
    if e.screenshot_withheld.as_deref() != Some(why) {
        return Err(format!(
            "the evidence says {:?} of its screenshot, not {why:?}",
            e.screenshot_withheld
        ));
    }
    if let Some(png) = walk(dir)
        .into_iter()
        .find(|f| f.extension().is_some_and(|x| x == "png"))
    {
        return Err(format!("{} is on disk", png.display()));
    }
    Ok(())
}

/// The trial's fault struck.
fn struck(e: &Evidence) -> Result<(), String> {
    if e.fault.struck {
        Ok(())
    } else {
        Err(format!("the fault did not strike: {:?}", e.fault.instead))
    }
}

/// The verdict of `invariant` explains itself with `needle`.
fn explains(e: &Evidence, invariant: Invariant, needle: &str) -> Result<(), String> {
    let v = e
        .verdicts
        .iter()
        .find(|v| v.invariant == invariant)
        .ok_or("no such verdict")?;
    if v.explanation.contains(needle) {
        Ok(())
    } else {
        Err(format!(
            "`{invariant}` says {:?}, not {needle:?}",
            v.explanation
        ))
    }
}

/// The secret was found and counted, and no file the trial wrote holds it: every secret of
/// the fixture site is a `…CANARY…` string.
fn no_canary_on_disk(e: &Evidence, dir: &std::path::Path) -> Result<(), String> {
    let found = e
        .verdicts
        .iter()
        .find(|v| v.invariant == Invariant::NoSecretInEvidence)
        .is_some_and(|v| !v.held);
    if !found {
        return Err("the secret was not found".into());
    }
    let tails: String = e.workers.iter().map(|w| w.log_tail.as_str()).collect();
    if !tails.contains("[REDACTED]") {
        return Err("the log tails show no redaction".into());
    }
    no_file_holds_a_canary(dir)
}

/// No file the trial wrote holds a secret of the fixture site (each a `…CANARY…` string).
fn no_file_holds_a_canary(dir: &std::path::Path) -> Result<(), String> {
    for entry in walk(dir) {
        let bytes = std::fs::read(&entry).map_err(|e| e.to_string())?;
        if bytes.windows(6).any(|w| w == b"CANARY") {
            return Err(format!("{} still holds a secret", entry.display()));
        }
    }
    Ok(())
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

fn main() {
    browser_fault::runner::enter_worker_role_if_asked();
    // Several filters, as libtest takes them (`-- route_only unobservant`).
    let (args, filters) = browser_fault::runner::arguments(std::env::args());
    let mut settings = TrialSettings::from_env();
    settings.snapshot_dir = None;
    let all: Vec<trial::Trial> = browser_fault::trial::scenarios()
        .into_iter()
        .flat_map(trial::expand)
        .collect();
    let tests = CASES
        .iter()
        .filter(|(name, ..)| {
            filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
        })
        .map(|&(name, invariants, extra)| {
            let trial = all.iter().find(|t| t.name() == name).copied();
            let settings = settings.clone();
            let label = match invariants {
                [] if name.starts_with("never_acts::") => {
                    "caught_by_the_never_acted_gate".to_owned()
                }
                [] => "passes".to_owned(),
                _ => format!(
                    "caught_by_{}",
                    invariants
                        .iter()
                        .map(|i| i.as_str())
                        .collect::<Vec<_>>()
                        .join("_and_")
                ),
            };
            Test::test(format!("{name}::{label}"), move || {
                let trial = trial.ok_or_else(|| Failed::from(format!("no trial {name}")))?;
                if invariants.is_empty() && !trial.expects_action() {
                    return Err("the gate judges only trials where a correct agent acts".into());
                }
                let _turn = name
                    .contains("_on_admin_site::")
                    .then(|| ADMIN_SITE.lock().unwrap_or_else(|p| p.into_inner()));
                let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
                let report = runtime
                    .block_on(trial::run_trial(&trial, &settings))
                    .map_err(|e| e.to_string())?;
                let broken: Vec<Invariant> =
                    report.evidence.broken().map(|v| v.invariant).collect();
                let evidence_dir = report
                    .evidence_path
                    .parent()
                    .unwrap_or(std::path::Path::new("."));
                if broken != invariants {
                    return Err(format!(
                        "expected exactly {invariants:?} to break, got {broken:?}; evidence: {}",
                        report.evidence_path.display()
                    )
                    .into());
                }
                extra(&report.evidence, evidence_dir).map_err(|why| {
                    Failed::from(format!(
                        "{why}; evidence: {}",
                        report.evidence_path.display()
                    ))
                })
            })
        })
        .collect();
    libtest_mimic::run(&args, tests).exit();
}
