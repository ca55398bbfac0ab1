//! What the worker's WebDriver endpoint (`Worker::webdriver_url`) adds to a WebDriver command,
//! and its CDP endpoint (`Worker::cdp_url`) to a CDP call: the same commands of one session
//! sent straight to its chromedriver and through the endpoint, and the same call on a
//! WebSocket straight to the browser's DevTools and on one through the endpoint,
//! interleaved, in one run. Medians and p90 per command kind, and the difference.
//!
//! `cargo bench -p browser-fault --bench endpoint`. `BROWSER_FAULT_BENCH_ROUNDS` sets the
//! rounds (default 300). Figures are for reading, never for asserting.

use std::time::{Duration, Instant};

use browser_fault::_internal::worker::{
    WorkerSpec, devtools_address, start_standalone, webdriver_server,
};
use browser_fault::BrowserBinaries;
use browser_fault::fixtures::{DEMO_ACCOUNTS, FixtureSite, SiteConfig};
use browser_fault::journal::{Journal, NewRun};
use browser_fault::profile::{ProfileSpec, ProfileStore};
use browser_fault::worker::{Account, Secret};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

fn main() {
    let rounds: usize = std::env::var("BROWSER_FAULT_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build the runtime");
    rt.block_on(run(rounds));
}

fn quantile(v: &[Duration], q: f64) -> Duration {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(((v.len().max(1) - 1) as f64 * q).round() as usize)
        .copied()
        .unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:8.3}", d.as_secs_f64() * 1e3)
}

/// One command of each kind, on `base` (chromedriver's URL or the endpoint's).
async fn command(client: &reqwest::Client, base: &str, session: &str, kind: usize) -> Duration {
    let start = Instant::now();
    let answer = match kind {
        0 => {
            client
                .get(format!("{base}/session/{session}/title"))
                .send()
                .await
        }
        _ => {
            client
                .post(format!("{base}/session/{session}/elements"))
                .header("content-type", "application/json")
                .body(r##"{"using":"css selector","value":"#send"}"##)
                .send()
                .await
        }
    };
    let answer = answer.expect("the command is answered");
    assert!(answer.status().is_success(), "the command succeeded");
    answer.bytes().await.expect("its body");
    start.elapsed()
}

async fn run(rounds: usize) {
    let site = FixtureSite::start(SiteConfig::default())
        .await
        .expect("start site");
    let binaries = BrowserBinaries::discover().expect("chromium and chromedriver");
    let root = tempfile::Builder::new()
        .prefix("bfe")
        .tempdir_in("/tmp")
        .expect("bench root");
    let journal = Journal::open(&root.path().join("journal.sqlite3")).expect("journal");
    let store = ProfileStore::open(root.path().join("profiles")).expect("store");
    journal
        .create_run(&NewRun::new("run-e", "bench", "bench"))
        .expect("create run");
    let profile = store
        .create(&ProfileSpec::new(
            "e1",
            "browser-fault-bench",
            "bench",
            "run-e",
            binaries.major_version(),
        ))
        .expect("create profile");
    let demo = &DEMO_ACCOUNTS[0];
    let spec = WorkerSpec::new(
        "run-e".to_owned(),
        journal.path(),
        store.root(),
        profile.path().to_owned(),
        root.path().join("tmp"),
        site.base_url(),
        Account {
            id: demo.id.to_owned(),
            tenant: Some(demo.tenant.to_owned()),
            username: demo.username.to_owned(),
            password: Secret::new(demo.password),
        },
    );
    let mut w = start_standalone(
        spec,
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .expect("start worker");
    let page = w.open("/threads/42").await.expect("open");
    let account = w.account().clone();
    page.sign_in(&account).await.expect("login");
    let endpoint = w.webdriver_url().await.expect("the endpoint");
    let direct = webdriver_server(&w).expect("the worker's chromedriver");
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{endpoint}/session"))
        .body(r#"{"capabilities":{"alwaysMatch":{"browserName":"chrome"}}}"#)
        .send()
        .await
        .expect("new session");
    let created: serde_json::Value =
        serde_json::from_slice(&created.bytes().await.expect("body")).expect("json");
    let session = created["value"]["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();
    let names = ["GET title", "POST elements (find)"];
    let mut samples: [[Vec<Duration>; 2]; 2] = Default::default();
    for round in 0..rounds {
        for (kind, sides) in samples.iter_mut().enumerate() {
            // Alternate which side goes first, so drift in the machine's load falls on both.
            for via_endpoint in [round % 2 == 0, round % 2 != 0] {
                let base = if via_endpoint { &endpoint } else { &direct };
                let took = command(&client, base, &session, kind).await;
                sides[usize::from(via_endpoint)].push(took);
            }
        }
    }
    println!(
        "\n## A WebDriver command straight to chromedriver and through the worker's endpoint, {rounds} rounds, ms"
    );
    println!(
        "{:<22} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "command", "direct", "p90", "endpoint", "p90", "added p50"
    );
    for (kind, name) in names.iter().enumerate() {
        let [d, e] = &samples[kind];
        let (dm, em) = (quantile(d, 0.5), quantile(e, 0.5));
        println!(
            "{:<22} {} {} {} {} {}",
            name,
            ms(dm),
            ms(quantile(d, 0.9)),
            ms(em),
            ms(quantile(e, 0.9)),
            ms(em.saturating_sub(dm))
        );
    }
    cdp(&mut w, &client, rounds).await;
    w.finish().await;
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The browser WebSocket named by `http_base`'s `/json/version`.
async fn browser_socket(client: &reqwest::Client, http_base: &str) -> Socket {
    let version: serde_json::Value = serde_json::from_slice(
        &client
            .get(format!("{http_base}/json/version"))
            .send()
            .await
            .expect("/json/version")
            .bytes()
            .await
            .expect("its body"),
    )
    .expect("json");
    let ws = version["webSocketDebuggerUrl"]
        .as_str()
        .expect("a WebSocket");
    tokio_tungstenite::connect_async(ws)
        .await
        .expect("connect")
        .0
}

/// One `Browser.getVersion` call and its answer.
async fn call(socket: &mut Socket, id: u64) -> Duration {
    let start = Instant::now();
    let message = format!(r#"{{"id":{id},"method":"Browser.getVersion"}}"#);
    socket
        .send(Message::text(message))
        .await
        .expect("send the call");
    loop {
        let Some(Ok(Message::Text(text))) = socket.next().await else {
            panic!("the socket closed");
        };
        let v: serde_json::Value = serde_json::from_str(text.as_str()).expect("json");
        if v["id"] == id {
            return start.elapsed();
        }
    }
}

async fn cdp(w: &mut browser_fault::worker::Worker, client: &reqwest::Client, rounds: usize) {
    let endpoint = w.cdp_url().await.expect("the CDP endpoint");
    let direct = format!(
        "http://{}",
        devtools_address(w).expect("the browser's DevTools address")
    );
    let mut sockets = [
        browser_socket(client, &direct).await,
        browser_socket(client, &endpoint).await,
    ];
    let mut samples: [Vec<Duration>; 2] = Default::default();
    let mut id = 0;
    for round in 0..rounds {
        for via_endpoint in [round % 2 == 0, round % 2 != 0] {
            id += 1;
            let side = usize::from(via_endpoint);
            samples[side].push(call(&mut sockets[side], id).await);
        }
    }
    println!(
        "\n## A CDP call straight to the browser's DevTools and through the worker's CDP endpoint, {rounds} rounds, ms"
    );
    println!(
        "{:<22} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "call", "direct", "p90", "endpoint", "p90", "added p50"
    );
    let [d, e] = &samples;
    let (dm, em) = (quantile(d, 0.5), quantile(e, 0.5));
    println!(
        "{:<22} {} {} {} {} {}",
        "Browser.getVersion",
        ms(dm),
        ms(quantile(d, 0.9)),
        ms(em),
        ms(quantile(e, 0.9)),
        ms(em.saturating_sub(dm))
    );
}
