//! What the fault proxy adds to a request: sequential keep-alive GETs of a small page from an
//! axum site on 127.0.0.1, direct and through the proxy (unarmed), with p50, p90 and p99 of
//! each and the added p50. `cargo bench -p browser-fault --bench proxy`.
//!
//! `BROWSER_FAULT_BENCH_SAMPLES` sets the samples per side (default 2000). Each round sends
//! one request each way and alternates which goes first, so drift in the machine's load falls
//! on both. Ratios are for reading, never for asserting.

use std::time::{Duration, Instant};

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use browser_fault::_internal::proxy::FaultProxy;

const PAGE: &str = "<!doctype html><html><head><title>bench</title></head>\
    <body><h1>A small page</h1><p>Served by the bench's site.</p></body></html>";
const WARMUP: usize = 200;

fn main() {
    let samples: usize = std::env::var("BROWSER_FAULT_BENCH_SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(samples));
}

async fn run(samples: usize) {
    let app = Router::new().route("/page", get(|| async { Html(PAGE) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind site");
    let site = listener.local_addr().expect("site addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    let url = format!("http://{site}/page");

    let proxy = FaultProxy::start().expect("start proxy");
    let direct = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("direct client");
    let proxied = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(proxy.proxy_url()).expect("proxy"))
        .build()
        .expect("proxied client");

    let mut times = [Vec::with_capacity(samples), Vec::with_capacity(samples)];
    for round in 0..WARMUP + samples {
        for side in [round % 2, 1 - round % 2] {
            let client = if side == 0 { &direct } else { &proxied };
            let start = Instant::now();
            let body = client
                .get(&url)
                .send()
                .await
                .expect("get")
                .text()
                .await
                .expect("body");
            let took = start.elapsed();
            assert_eq!(body.len(), PAGE.len());
            if round >= WARMUP {
                times[side].push(took);
            }
        }
    }
    let through = proxy
        .requests()
        .iter()
        .filter(|r| r.status == Some(200))
        .count();
    assert_eq!(
        through,
        WARMUP + samples,
        "every proxied GET went through it"
    );
    proxy.shutdown().await;

    println!(
        "browser-fault proxy benchmark ({samples} sequential keep-alive GETs of a {} B page each way)",
        PAGE.len()
    );
    println!("{:<16} {:>10} {:>10} {:>10}", "path", "p50", "p90", "p99");
    let mut p50 = [Duration::ZERO; 2];
    for (side, name) in ["direct", "through proxy"].into_iter().enumerate() {
        let t = &mut times[side];
        t.sort();
        let pick = |q: f64| t[((t.len() - 1) as f64 * q).round() as usize];
        p50[side] = pick(0.5);
        println!(
            "{name:<16} {:>10} {:>10} {:>10}",
            ms(pick(0.5)),
            ms(pick(0.9)),
            ms(pick(0.99))
        );
    }
    println!(
        "added at p50: {} per request (target <= 2 ms)",
        ms(p50[1].saturating_sub(p50[0]))
    );
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}
