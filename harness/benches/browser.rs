//! The browser layer next to raw thirtyfour, in one run, on the same page of the fixture
//! site: medians and p90 of launch, first navigation, a warm navigation, a click whose
//! navigation is observed, and quit; the cost of the unarmed fault points; the first
//! navigation with the fast-start preferences off and on; and how the click's dispatch delay
//! behaves before a held navigation.
//!
//! `cargo bench -p browser-fault --bench browser`. `BROWSER_FAULT_BENCH_ROUNDS` sets the
//! rounds (default 15). The rounds alternate which side goes first, so drift in the machine's
//! load falls on both. Ratios are for reading, never for asserting.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use browser_fault::_internal::browser::process::{kill_group, kill_profile_processes};
use browser_fault::_internal::fault::FaultHook;
use browser_fault::_internal::worker::{WorkerSpec, start_standalone};
use browser_fault::fixtures::{DEMO_ACCOUNTS, FixtureSite, SiteConfig};
use browser_fault::journal::{Checkpoint, Journal, NewRun};
use browser_fault::plan::FaultPoint;
use browser_fault::profile::{ProfileSpec, ProfileStore};
use browser_fault::worker::{Account, Outcome, Secret};
use browser_fault::{_internal::browser::HEADLESS_FLAGS, BrowserBinaries};
use thirtyfour::prelude::*;
use thirtyfour::{Capabilities, WebDriver};

/// The page every navigation loads, and the click that leaves it: the login form posted
/// empty, answered with the form again and its error (no state changes at the site).
const PAGE: &str = "/login";
const BUTTON: &str = "button#login";
const RESULT: &str = "#login-error";
/// The dispatch of `Page::click`, with its delay as a parameter.
const CLICK_JS_DELAYED: &str = "const el = arguments[0]; el.scrollIntoView({ block: 'center' }); \
                                setTimeout(() => el.click(), arguments[1]);";
const CLICK_JS_RAF: &str = "const el = arguments[0]; el.scrollIntoView({ block: 'center' }); \
                            requestAnimationFrame(() => setTimeout(() => el.click(), 0));";

fn main() {
    let rounds: usize = std::env::var("BROWSER_FAULT_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build the runtime");
    rt.block_on(run(rounds));
}

#[derive(Default)]
struct Samples(Vec<Duration>);

impl Samples {
    fn push(&mut self, d: Duration) {
        self.0.push(d);
    }
    fn time<T>(&mut self, start: Instant, value: T) -> T {
        self.0.push(start.elapsed());
        value
    }
    fn quantile(&self, q: f64) -> Duration {
        let mut v = self.0.clone();
        v.sort_unstable();
        if v.is_empty() {
            return Duration::ZERO;
        }
        let i = ((v.len() - 1) as f64 * q).round() as usize;
        v[i]
    }
    fn median(&self) -> Duration {
        self.quantile(0.5)
    }
    fn p90(&self) -> Duration {
        self.quantile(0.9)
    }
}

fn ms(d: Duration) -> String {
    format!("{:8.1}", d.as_secs_f64() * 1e3)
}

struct Bench {
    site: FixtureSite,
    binaries: BrowserBinaries,
    root: tempfile::TempDir,
    journal: Journal,
    store: ProfileStore,
    profiles: usize,
}

impl Bench {
    /// A fresh profile (and a run for it) for the next session.
    fn profile(&mut self, tag: &str) -> (String, std::path::PathBuf) {
        self.profiles += 1;
        let name = format!("{tag}{}", self.profiles);
        let run_id = format!("run-{name}");
        self.journal
            .create_run(&NewRun::new(&run_id, "bench", "bench"))
            .expect("create run");
        let profile = self
            .store
            .create(&ProfileSpec::new(
                &name,
                "browser-fault-bench",
                "bench",
                &run_id,
                self.binaries.major_version(),
            ))
            .expect("create profile");
        (run_id, profile.path().to_owned())
    }

    fn spec(&mut self) -> WorkerSpec {
        let (run_id, profile) = self.profile("l");
        let demo = &DEMO_ACCOUNTS[0];
        WorkerSpec::new(
            run_id,
            self.journal.path(),
            self.store.root(),
            profile,
            self.root.path().join("tmp"),
            self.site.base_url(),
            Account {
                id: demo.id.to_owned(),
                tenant: Some(demo.tenant.to_owned()),
                username: demo.username.to_owned(),
                password: Secret::new(demo.password),
            },
        )
    }

    fn url(&self, route: &str) -> String {
        format!("{}{route}", self.site.base_url())
    }
}

#[derive(Default)]
struct Ops {
    launch: Samples,
    first_nav: Samples,
    nav: Samples,
    click: Samples,
    quit: Samples,
}

/// One session through the layer: Worker and Page.
async fn layer_round(b: &mut Bench, ops: &mut Ops) {
    let spec = b.spec();
    let start = Instant::now();
    let w = ops.launch.time(
        start,
        start_standalone(
            spec,
            std::sync::Arc::new(browser_fault::site::Fixture::new()),
        )
        .await
        .expect("start worker"),
    );
    let page = w.page();
    let start = Instant::now();
    page.goto(PAGE).await.expect("first navigation");
    ops.first_nav.push(start.elapsed());
    let start = Instant::now();
    page.goto(PAGE).await.expect("navigation");
    ops.nav.push(start.elapsed());
    let start = Instant::now();
    page.click(BUTTON).await.expect("click");
    page.wait_for(RESULT).await.expect("observe the click");
    ops.click.push(start.elapsed());
    let start = Instant::now();
    w.finish().await;
    ops.quit.push(start.elapsed());
}

/// chromedriver started by hand, as a raw thirtyfour user would.
struct RawDriver {
    child: Child,
    port: u16,
}

impl RawDriver {
    fn start(b: &Bench) -> RawDriver {
        let tmp = b.root.path().join("tmp");
        std::fs::create_dir_all(&tmp).expect("tmp");
        let mut child = Command::new(&b.binaries.chromedriver)
            .arg("--port=0")
            .env("TMPDIR", tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start chromedriver");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let port = loop {
            let line = lines.next().expect("chromedriver's port").expect("read");
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                break rest.trim().trim_end_matches('.').parse().expect("port");
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        RawDriver { child, port }
    }

    fn stop(mut self) {
        kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn raw_caps(b: &Bench, profile: &Path, fast: bool) -> Capabilities {
    let mut args: Vec<String> = HEADLESS_FLAGS.iter().map(|s| (*s).to_owned()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    let mut opts = serde_json::json!({
        "args": args,
        "binary": b.binaries.chrome.display().to_string(),
    });
    if fast {
        opts["prefs"] = serde_json::json!({
            "session.restore_on_startup": 4,
            "session.startup_urls": ["about:blank"],
        });
    }
    let caps = serde_json::json!({
        "browserName": "chrome",
        "pageLoadStrategy": "normal",
        "goog:chromeOptions": opts,
    });
    match caps {
        serde_json::Value::Object(map) => Capabilities::from(map),
        _ => unreachable!("an object"),
    }
}

async fn raw_launch(b: &mut Bench, fast: bool) -> (RawDriver, WebDriver, std::path::PathBuf) {
    let (_, profile) = b.profile("r");
    let raw = RawDriver::start(b);
    let driver = WebDriver::new(
        format!("http://127.0.0.1:{}", raw.port),
        raw_caps(b, &profile, fast),
    )
    .await
    .expect("raw session");
    (raw, driver, profile)
}

async fn raw_quit(raw: RawDriver, driver: WebDriver, profile: &Path) {
    driver.quit().await.expect("quit");
    raw.stop();
    kill_profile_processes(profile);
}

/// Polls for `selector` like `Page::wait_for` does (5 ms doubling to 50 ms).
async fn poll_find(driver: &WebDriver, selector: &str) {
    let mut backoff = Duration::from_millis(5);
    let deadline = Instant::now() + Duration::from_secs(20);
    while driver.find(By::Css(selector)).await.is_err() {
        assert!(Instant::now() < deadline, "{selector} never appeared");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_millis(50));
    }
}

#[derive(Default)]
struct Clicks {
    /// chromedriver's Element Click, then one find: it waits for the navigation itself.
    native: Samples,
    /// The layer's script dispatch after `delay` ms, then polling like `Page::wait_for`.
    script: Vec<(u64, Samples)>,
    raf: Samples,
}

const DELAYS: [u64; 5] = [0, 5, 10, 20, 50];

/// One raw session: the same operations as [`layer_round`], plus every click variant.
async fn raw_round(b: &mut Bench, ops: &mut Ops, clicks: &mut Clicks) {
    let start = Instant::now();
    let (raw, driver, profile) = raw_launch(b, true).await;
    ops.launch.push(start.elapsed());
    let url = b.url(PAGE);
    let start = Instant::now();
    driver.goto(&url).await.expect("first navigation");
    ops.first_nav.push(start.elapsed());
    let start = Instant::now();
    driver.goto(&url).await.expect("navigation");
    ops.nav.push(start.elapsed());
    let start = Instant::now();
    driver
        .find(By::Css(BUTTON))
        .await
        .expect("button")
        .click()
        .await
        .expect("click");
    // Its wait for the navigation is best effort (a form's navigation may start after
    // chromedriver looked), so the result is polled for like everywhere else.
    poll_find(&driver, RESULT).await;
    ops.click.push(start.elapsed());
    clicks.native.push(ops.click.0[ops.click.0.len() - 1]);
    if clicks.script.is_empty() {
        clicks.script = DELAYS.iter().map(|d| (*d, Samples::default())).collect();
    }
    for (delay, samples) in &mut clicks.script {
        driver.goto(&url).await.expect("navigation");
        let start = Instant::now();
        let el = driver.find(By::Css(BUTTON)).await.expect("button");
        driver
            .execute(
                CLICK_JS_DELAYED,
                vec![el.to_json().expect("json"), serde_json::json!(*delay)],
            )
            .await
            .expect("dispatch");
        poll_find(&driver, RESULT).await;
        samples.push(start.elapsed());
    }
    driver.goto(&url).await.expect("navigation");
    let start = Instant::now();
    let el = driver.find(By::Css(BUTTON)).await.expect("button");
    driver
        .execute(CLICK_JS_RAF, vec![el.to_json().expect("json")])
        .await
        .expect("dispatch");
    poll_find(&driver, RESULT).await;
    clicks.raf.push(start.elapsed());
    let start = Instant::now();
    raw_quit(raw, driver, &profile).await;
    ops.quit.push(start.elapsed());
}

/// First and warm navigation of a raw session with the fast-start preferences on or off.
async fn startup_round(b: &mut Bench, fast: bool, first: &mut Samples, warm: &mut Samples) {
    let (raw, driver, profile) = raw_launch(b, fast).await;
    let url = b.url(PAGE);
    let start = Instant::now();
    driver.goto(&url).await.expect("first navigation");
    first.push(start.elapsed());
    let start = Instant::now();
    driver.goto(&url).await.expect("navigation");
    warm.push(start.elapsed());
    raw_quit(raw, driver, &profile).await;
}

/// How long the click's dispatch command takes when the navigation it starts is held by
/// the site (`held`): a command that returns at once did not wait for it.
async fn blocking_round(b: &mut Bench, blocked: &mut [(String, usize, Samples)]) {
    let (raw, driver, profile) = raw_launch(b, true).await;
    let url = b.url(PAGE);
    let held = Duration::from_millis(600);
    for (name, count, samples) in blocked.iter_mut() {
        b.site.set_response_delay(Duration::ZERO);
        driver.goto(&url).await.expect("navigation");
        let el = driver.find(By::Css(BUTTON)).await.expect("button");
        b.site.set_response_delay(held);
        let (script, args) = match name.strip_prefix("setTimeout ") {
            Some(d) => (
                CLICK_JS_DELAYED,
                vec![
                    el.to_json().expect("json"),
                    serde_json::json!(d.trim_end_matches(" ms").parse::<u64>().expect("delay")),
                ],
            ),
            None => (CLICK_JS_RAF, vec![el.to_json().expect("json")]),
        };
        let start = Instant::now();
        driver.execute(script, args).await.expect("dispatch");
        let took = start.elapsed();
        samples.push(took);
        if took >= held / 2 {
            *count += 1;
        }
        // Let the held navigation finish before the next variant.
        poll_find(&driver, RESULT).await;
    }
    b.site.set_response_delay(Duration::ZERO);
    raw_quit(raw, driver, &profile).await;
}

/// The side-effect protocol (fault points unarmed) against the same steps by hand, on one
/// signed-in worker, alternating.
async fn protocol_rounds(b: &mut Bench, rounds: usize) -> (Samples, Samples, Samples) {
    let spec = b.spec();
    let mut w = start_standalone(
        spec,
        std::sync::Arc::new(browser_fault::site::Fixture::new()),
    )
    .await
    .expect("start worker");
    let page = w.open("/threads/42").await.expect("open");
    let account = w.account().clone();
    page.sign_in(&account).await.expect("login");
    let (mut protocol, mut by_hand, mut alive) =
        (Samples::default(), Samples::default(), Samples::default());
    for i in 0..rounds {
        for first in [i % 2 == 0, i % 2 != 0] {
            w.page().goto("/threads/42").await.expect("open");
            let name = format!("e{i}{}", u8::from(first));
            let target = w.target().route("/threads/42").object("42").api();
            let start = Instant::now();
            if first {
                let outcome = w
                    .side_effect(&name)
                    .verify(move |p| p.expect_target(target.clone()))
                    .act(|p, key| async move {
                        p.fill("#request-key", key.as_str()).await?;
                        p.click("button#send").await
                    })
                    .confirm(|p, key| p.wait_for(&format!("[data-sent-key=\"{key}\"]")))
                    .reconcile(|p, key| p.effect_status(key))
                    .run()
                    .await
                    .expect("protocol");
                assert_eq!(outcome, Outcome::Confirmed);
                protocol.push(start.elapsed());
            } else {
                let j = w.journal();
                let key = j.record_intent(&name, "").expect("intent").request_key;
                let p = w.page();
                p.expect_target(target).await.expect("verify");
                j.transition(&key, Checkpoint::IntentRecorded, Checkpoint::TargetVerified)
                    .expect("verified");
                j.transition(
                    &key,
                    Checkpoint::TargetVerified,
                    Checkpoint::ActionSubmitted,
                )
                .expect("submitted");
                p.fill("#request-key", key.as_str()).await.expect("fill");
                p.click("button#send").await.expect("click");
                p.wait_for(&format!("[data-sent-key=\"{key}\"]"))
                    .await
                    .expect("confirm");
                j.transition(
                    &key,
                    Checkpoint::ActionSubmitted,
                    Checkpoint::RemoteConfirmed,
                )
                .expect("confirmed");
                by_hand.push(start.elapsed());
            }
        }
        let start = Instant::now();
        assert!(w.browser_alive());
        alive.push(start.elapsed());
    }
    w.finish().await;
    (protocol, by_hand, alive)
}

fn is_armed_cost() -> f64 {
    let hook = FaultHook::detached();
    let n: u32 = 20_000_000;
    let start = Instant::now();
    let mut hits = 0u32;
    for i in 0..n {
        let b = if i % 2 == 0 {
            FaultPoint::AfterClick
        } else {
            FaultPoint::AfterLogin
        };
        hits += u32::from(std::hint::black_box(&hook).is_armed_for(std::hint::black_box(b)));
    }
    assert_eq!(hits, 0);
    start.elapsed().as_secs_f64() * 1e9 / f64::from(n)
}

async fn run(rounds: usize) {
    let site = FixtureSite::start(SiteConfig::default())
        .await
        .expect("start site");
    let binaries = BrowserBinaries::discover().expect("chromium and chromedriver");
    let root = tempfile::Builder::new()
        .prefix("bfb")
        .tempdir_in("/tmp")
        .expect("bench root");
    let journal = Journal::open(&root.path().join("journal.sqlite3")).expect("journal");
    let store = ProfileStore::open(root.path().join("profiles")).expect("store");
    let mut b = Bench {
        site,
        binaries,
        root,
        journal,
        store,
        profiles: 0,
    };
    eprintln!("{rounds} rounds; chromium {}", b.binaries.major_version());

    let (mut layer, mut raw, mut clicks) = (Ops::default(), Ops::default(), Clicks::default());
    let (mut off_first, mut off_warm, mut on_first, mut on_warm): (
        Samples,
        Samples,
        Samples,
        Samples,
    ) = Default::default();
    for round in 0..rounds {
        if round % 2 == 0 {
            layer_round(&mut b, &mut layer).await;
            raw_round(&mut b, &mut raw, &mut clicks).await;
        } else {
            raw_round(&mut b, &mut raw, &mut clicks).await;
            layer_round(&mut b, &mut layer).await;
        }
        for fast in [round % 2 == 0, round % 2 != 0] {
            if fast {
                startup_round(&mut b, true, &mut on_first, &mut on_warm).await;
            } else {
                startup_round(&mut b, false, &mut off_first, &mut off_warm).await;
            }
        }
        eprint!(".");
    }
    eprintln!();

    println!(
        "\n## The layer (Worker/Page, fault points unarmed) vs raw thirtyfour, {rounds} rounds, ms"
    );
    println!(
        "{:<34} {:>8} {:>8} {:>8} {:>8} {:>7}",
        "operation", "layer", "p90", "raw", "p90", "ratio"
    );
    let rows: [(&str, &Samples, &Samples); 5] = [
        (
            "launch (Worker::start vs new session)",
            &layer.launch,
            &raw.launch,
        ),
        ("first navigation", &layer.first_nav, &raw.first_nav),
        ("navigation (warm)", &layer.nav, &raw.nav),
        ("click + observe the navigation", &layer.click, &raw.click),
        ("quit (finish vs quit + kill)", &layer.quit, &raw.quit),
    ];
    for (name, l, r) in rows {
        println!(
            "{:<34} {} {} {} {} {:>7.3}",
            name,
            ms(l.median()),
            ms(l.p90()),
            ms(r.median()),
            ms(r.p90()),
            l.median().as_secs_f64() / r.median().as_secs_f64()
        );
    }

    println!("\n## Click + observe the navigation, raw session, by dispatch (ms)");
    println!("{:<34} {:>8} {:>8}", "dispatch", "median", "p90");
    println!(
        "{:<34} {} {}",
        "native Element Click + find",
        ms(clicks.native.median()),
        ms(clicks.native.p90())
    );
    for (delay, s) in &clicks.script {
        println!(
            "{:<34} {} {}",
            format!("script setTimeout {delay} ms + poll"),
            ms(s.median()),
            ms(s.p90())
        );
    }
    println!(
        "{:<34} {} {}",
        "script rAF + setTimeout 0 + poll",
        ms(clicks.raf.median()),
        ms(clicks.raf.p90())
    );

    println!("\n## Does the dispatch command wait for a held navigation? (site holds 600 ms)");
    let mut blocked: Vec<(String, usize, Samples)> = DELAYS
        .iter()
        .map(|d| (format!("setTimeout {d} ms"), 0, Samples::default()))
        .chain([("rAF + setTimeout 0".to_owned(), 0, Samples::default())])
        .collect();
    let block_rounds = rounds.min(10);
    for _ in 0..block_rounds {
        blocking_round(&mut b, &mut blocked).await;
    }
    println!(
        "{:<34} {:>8} {:>8} {:>10}",
        "dispatch", "median", "max", "blocked"
    );
    for (name, count, s) in &blocked {
        println!(
            "{:<34} {} {} {:>6}/{block_rounds}",
            name,
            ms(s.median()),
            ms(s.quantile(1.0)),
            count
        );
    }

    println!("\n## The fast-start preferences: navigation, raw sessions, ms");
    println!(
        "{:<34} {:>8} {:>8} {:>8}",
        "session.* prefs", "median", "p90", "max"
    );
    for (name, s) in [
        ("OFF: first navigation", &off_first),
        ("OFF: second navigation", &off_warm),
        ("ON:  first navigation", &on_first),
        ("ON:  second navigation", &on_warm),
    ] {
        println!(
            "{:<34} {} {} {}",
            name,
            ms(s.median()),
            ms(s.p90()),
            ms(s.quantile(1.0))
        );
    }

    println!("\n## Unarmed fault points");
    println!(
        "FaultHook::is_armed_for, detached: {:.2} ns per call",
        is_armed_cost()
    );
    let (protocol, by_hand, alive) = protocol_rounds(&mut b, rounds).await;
    println!("{:<34} {:>8} {:>8}", "one side effect, ms", "median", "p90");
    for (name, s) in [
        ("side_effect().run() (unarmed)", &protocol),
        ("the same steps by hand", &by_hand),
        ("  of which browser_alive()", &alive),
    ] {
        println!("{:<34} {} {}", name, ms(s.median()), ms(s.p90()));
    }
    println!(
        "protocol / by hand: {:.3}",
        protocol.median().as_secs_f64() / by_hand.median().as_secs_f64()
    );
}
