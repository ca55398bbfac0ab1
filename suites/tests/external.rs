//! A site the harness did not start and cannot steer: `SiteSpec::external` with a
//! read-only ledger. The fixture site plays the part here, started once for the whole
//! binary and reached only through its URL and its ledger, as a user's own site would be.
//! Trials that need fault knobs are listed as ignored; the rest must pass.

use std::sync::{Arc, OnceLock};

use browser_fault::fixtures::{DEMO_ACCOUNTS, FixtureSite, SiteConfig};
use browser_fault::prelude::*;
use browser_fault::site::{RemoteEffect, RemoteLedger, SiteSpec};
use browser_fault::worker::{Account, Secret};

/// The ledger as a user would expose it: a read-only view.
#[derive(Debug)]
struct Ledger(FixtureSite);

impl RemoteLedger for Ledger {
    fn effects(&self) -> Vec<RemoteEffect> {
        self.0
            .ledger()
            .into_iter()
            .map(RemoteEffect::from)
            .collect()
    }
}

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

fn external_site() -> SiteSpec {
    let site = running_site();
    let demo = &DEMO_ACCOUNTS[0];
    let account = Account {
        id: demo.id.to_owned(),
        tenant: demo.tenant.to_owned(),
        username: demo.username.to_owned(),
        password: Secret::new(demo.password),
    };
    SiteSpec::external(site.base_url(), Arc::new(Ledger(site.clone())), account)
        .with_secrets(site.secrets())
}

#[browser_fault(at = "all", site = external_site, effects = "42")]
async fn send_external(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

browser_fault::main!();
