//! A site the harness did not start: `SiteSpec::new` with the bundled site's adapter
//! ([`Fixture`]) and its ledger read over HTTP. The fixture site plays the part here,
//! started once for the whole binary and reached only through its URL, as a user's own site
//! would be; the fault proxy stands between the browsers and it. The trials this site
//! cannot make are listed as ignored, with their reason; the rest must pass.

use browser_fault::prelude::*;
use browser_fault::site::Fixture;
use browser_fault_suites::{demo_account, shared_fixture_site};

fn external_site() -> SiteSpec {
    let site = shared_fixture_site();
    let adapter = Fixture::new().with_ledger_url(site.ledger_url());
    SiteSpec::new(site.base_url(), adapter, demo_account(0))
        .other_account(demo_account(1))
        .with_secrets(site.secrets())
}

#[browser_fault(at = "all", site = external_site, effects = "42")]
async fn send_external(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

browser_fault::main!();
