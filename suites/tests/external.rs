//! A site the harness did not start: `SiteSpec::new` with the bundled site's adapter
//! (`Fixture`, wrapped with a reset in `AdminFixture`) and its ledger read over HTTP; and the
//! same site with the live changes a user's adapter offers (`Site::can_change`), on which
//! the live `after_login` variants run. The fixture site plays the part here,
//! started once for the whole binary and reached only through its URL, as a user's own site
//! would be; the fault proxy stands between the browsers and it. The trials this site
//! cannot make are listed as ignored, with their reason; the rest must pass.

use browser_fault::prelude::*;
use browser_fault::site::SiteChange;
use browser_fault_suites::admin_site::AdminFixture;
use browser_fault_suites::https_front::{HOST, https_front};
use browser_fault_suites::{demo_account, shared_fixture_site};

fn external_site() -> SiteSpec {
    let site = shared_fixture_site();
    SiteSpec::new(site.base_url(), AdminFixture::new(), demo_account(0))
        .other_account(demo_account(1))
        .with_secrets(site.secrets())
}

/// The same site with the live changes a user's adapter can offer through its admin API
/// (`Site::can_change`): the live `after_login` variants run here too.
fn admin_site() -> SiteSpec {
    let site = shared_fixture_site();
    SiteSpec::new(
        site.base_url(),
        AdminFixture::new().with_changes(&SiteChange::ALL),
        demo_account(0),
    )
    .other_account(demo_account(1))
    .with_secrets(site.secrets())
}

/// The same site served over HTTPS under a real-looking name (`https_front`): the fault
/// proxy resolves the name to 127.0.0.1, checks the site's certificate against the front's
/// authority, and intercepts the browsers' TLS with an authority of its own, so every
/// network fault strikes as over plain HTTP.
fn https_site() -> SiteSpec {
    let front = https_front();
    let site = shared_fixture_site();
    SiteSpec::new(front.origin(), AdminFixture::over(front), demo_account(0))
        .resolve(HOST, front.ip())
        .trust_root_pem(front.ca_pem())
        .other_account(demo_account(1))
        .with_secrets(site.secrets())
}

/// `external_site`'s adapter shows no interstitial of its own: the fault proxy stands its own.
#[browser_fault(
    at = "all",
    hazards = ["login_interstitial", "consent_interstitial"],
    site = external_site,
    effects = "42"
)]
async fn send_external(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

#[browser_fault(at = "after_login", hazards = "all", site = admin_site, effects = "42")]
async fn send_admin(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

#[browser_fault(
    at = "all",
    hazards = ["expired_session", "login_interstitial"],
    site = https_site,
    effects = "42"
)]
async fn send_https(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

browser_fault::main!();
