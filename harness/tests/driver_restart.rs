//! A chromedriver that exits before it listens is started again. With `--port=0` it takes a
//! free IPv4 port and exits when the same port is taken on `::1`; under load that happened
//! about once in 300 trials. The clash cannot be staged on demand, so a wrapper plays it:
//! its first start exits at once, as such a chromedriver does; later starts are the real one.

use std::os::unix::fs::PermissionsExt;

use browser_fault::{
    _internal::browser::{Browser, BrowserOptions},
    BrowserBinaries,
};

fn wrapper(dir: &std::path::Path, real: &std::path::Path, fail_first: usize) -> std::path::PathBuf {
    let script = dir.join("chromedriver");
    let count = dir.join("starts");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho x >> '{count}'\nif [ $(wc -l < '{count}') -le {fail_first} ]; then\n  echo 'bind() failed: Address already in use (98)'\n  echo 'IPv6 port not available. Exiting...'\n  exit 1\nfi\nexec '{real}' \"$@\"\n",
            count = count.display(),
            real = real.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn starts(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("starts"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chromedriver_that_exits_before_it_listens_is_started_again() {
    let real = BrowserBinaries::discover_cached().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let binaries = BrowserBinaries {
        chromedriver: wrapper(dir.path(), &real.chromedriver, 1),
        ..real.clone()
    };
    let profile = dir.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let browser = Browser::launch(&binaries, &profile, &tmp, &BrowserOptions::default())
        .await
        .expect("the second start listens");
    assert_eq!(starts(dir.path()), 2);
    assert!(browser.is_alive());
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chromedriver_that_never_listens_fails_after_three_starts() {
    let real = BrowserBinaries::discover_cached().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let binaries = BrowserBinaries {
        chromedriver: wrapper(dir.path(), &real.chromedriver, 100),
        ..real.clone()
    };
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let err = Browser::launch(&binaries, dir.path(), &tmp, &BrowserOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("did not become ready"), "{err}");
    assert_eq!(starts(dir.path()), 3);
}
