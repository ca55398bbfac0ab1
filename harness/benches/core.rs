//! Median and p99 of a durable checkpoint transition and of a lease claim + release, with a
//! raw fsync on the same disk for reference. `cargo bench -p browser-fault --bench core`.
//!
//! The directory is `$BROWSER_FAULT_BENCH_DIR` when set, else a temporary directory.

use std::io::Write;
use std::time::{Duration, Instant};

use browser_fault::_internal::lease::{LeaseHolder, claim_lease};
use browser_fault::journal::{Checkpoint, Journal, NewRun, args_hash};
use browser_fault::profile::{ProfileSpec, ProfileStore};

const SAMPLES: usize = 2_000;

fn main() {
    let base = std::env::var_os("BROWSER_FAULT_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(&base).expect("create bench dir");
    let journal = Journal::open(&dir.path().join("journal.sqlite")).expect("open journal");
    journal
        .create_run(&NewRun::new("bench", "bench", "bench"))
        .expect("create run");

    let mut fsync = Vec::with_capacity(SAMPLES);
    let mut file = std::fs::File::create(dir.path().join("fsync.bin")).expect("create file");
    let page = [0u8; 4096];
    for _ in 0..SAMPLES {
        let start = Instant::now();
        file.write_all(&page).expect("write");
        file.sync_data().expect("fsync");
        fsync.push(start.elapsed());
    }

    let mut transition = Vec::with_capacity(SAMPLES);
    let path = [
        (Checkpoint::IntentRecorded, Checkpoint::TargetVerified),
        (Checkpoint::TargetVerified, Checkpoint::ActionSubmitted),
        (Checkpoint::ActionSubmitted, Checkpoint::RemoteConfirmed),
    ];
    let mut n = 0;
    while transition.len() < SAMPLES {
        let effect = format!("effect-{n}");
        n += 1;
        let key = journal
            .record_intent("bench", &effect, &args_hash(&effect), 1)
            .expect("record intent")
            .request_key;
        for (from, to) in path {
            let start = Instant::now();
            journal.transition(&key, from, to, 1).expect("transition");
            transition.push(start.elapsed());
        }
    }

    let store = ProfileStore::open(dir.path().join("profiles")).expect("open store");
    let profile = store
        .create(&ProfileSpec::new(
            "bench",
            "browser-fault",
            "bench",
            "bench",
            "0",
        ))
        .expect("create profile");
    let holder = LeaseHolder::this_process("bench", 1);
    let mut claim = Vec::with_capacity(SAMPLES);
    let mut claim_release = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let start = Instant::now();
        let lease =
            claim_lease(&journal, &profile, &holder, Duration::from_secs(60)).expect("claim");
        claim.push(start.elapsed());
        lease.release().expect("release");
        claim_release.push(start.elapsed());
    }

    println!(
        "browser-fault core benchmark ({SAMPLES} samples each, dir {})",
        base.display()
    );
    println!(
        "{:<32} {:>10} {:>10} {:>10}",
        "operation", "p50", "p99", "max"
    );
    for (name, samples) in [
        ("raw write 4 KiB + fdatasync", &mut fsync),
        ("checkpoint transition (durable)", &mut transition),
        ("lease claim", &mut claim),
        ("lease claim + release", &mut claim_release),
    ] {
        samples.sort();
        let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        println!(
            "{name:<32} {:>10} {:>10} {:>10}",
            ms(pick(0.5)),
            ms(pick(0.99)),
            ms(*samples.last().expect("samples"))
        );
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}
