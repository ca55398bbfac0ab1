//! A site the harness did not start: `SiteSpec::new` with the bundled site's adapter
//! ([`Fixture`]) and its ledger read over HTTP. The fixture site plays the part here,
//! started once for the whole binary and reached only through its URL, as a user's own site
//! would be; the fault proxy stands between the browsers and it. The trials this site
//! cannot make are listed as ignored, with their reason; the rest must pass.

use std::sync::OnceLock;

use browser_fault::fixtures::{DEMO_ACCOUNTS, FixtureSite, SiteConfig};
use browser_fault::prelude::*;
use browser_fault::site::Fixture;

/// Starts the site once, on a runtime of its own that lives as long as the process.
fn running_site() -> &'static FixtureSite {
    static SITE: OnceLock<FixtureSite> = OnceLock::new();
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

fn account(index: usize) -> Account {
    let demo = &DEMO_ACCOUNTS[index];
    Account {
        id: demo.id.to_owned(),
        tenant: Some(demo.tenant.to_owned()),
        username: demo.username.to_owned(),
        password: Secret::new(demo.password),
    }
}

fn external_site() -> SiteSpec {
    let site = running_site();
    let adapter = Fixture::new().with_ledger_url(site.ledger_url());
    SiteSpec::new(site.base_url(), adapter, account(0))
        .other_account(account(1))
        .with_secrets(site.secrets())
}

#[browser_fault(at = "all", site = external_site, effects = "42")]
async fn send_external(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

browser_fault::main!();
