//! A real headless Chromium driven through chromedriver (or a remote WebDriver endpoint).
//!
//! The harness starts chromedriver on a free loopback port, waits until it answers, and
//! has it launch Chromium with the flags of [`HEADLESS_FLAGS`], the worker's profile as
//! user-data-dir and the worker's own `TMPDIR`. Every process it starts is accounted for:
//! [`Browser::kill`] ends the whole tree, and [`process::processes_using_profile`] finds any
//! straggler by the profile path on its command line.

mod binaries;
pub(crate) mod process;
mod registry;
pub(crate) mod remote;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use thirtyfour::{Capabilities, WebDriver};

pub use binaries::{BrowserBinaries, PreflightError};
pub(crate) use binaries::{CHROMEDRIVER_ENV, WEBDRIVER_URL_ENV};
pub(crate) use registry::{SessionRegistry, SessionToken};

/// The headless flags that work on a closed network (DESIGN.md, "Real components").
pub const HEADLESS_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--password-store=basic",
    "--window-size=1024,768",
];

/// How a browser is launched.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BrowserOptions {
    /// Flags added after [`HEADLESS_FLAGS`].
    pub extra_args: Vec<String>,
    /// Start Chromium on `about:blank` through the `session.*` preferences, so the first
    /// navigation does not wait on the internal new-tab page (default: on). Turning it off
    /// brings back multi-second stalls of the first navigation under load.
    pub fast_first_navigation: bool,
    /// The limit of one WebDriver command, including a page load.
    pub command_timeout: Duration,
    /// Put chromedriver (and so Chromium) in a process group of its own, so that the tree
    /// can be killed without killing the caller. A `kill`-mode worker process leaves it off:
    /// its whole group dies together.
    pub own_process_group: bool,
}

impl Default for BrowserOptions {
    fn default() -> Self {
        BrowserOptions {
            extra_args: Vec::new(),
            fast_first_navigation: true,
            command_timeout: Duration::from_secs(30),
            own_process_group: true,
        }
    }
}

/// Why a browser could not be launched or driven.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrowserError {
    /// The binaries are missing or mismatched.
    #[error(transparent)]
    Preflight(#[from] PreflightError),
    /// chromedriver could not be started.
    #[error("failed to start chromedriver")]
    DriverStart(#[source] std::io::Error),
    /// The worker's WebDriver endpoint (`Worker::webdriver_url`) could not listen.
    #[error("failed to start the worker's WebDriver endpoint")]
    Endpoint(#[source] std::io::Error),
    /// The browser's own `TMPDIR` could not be made.
    #[error("failed to make the browser's temporary folder {path}")]
    TempDir {
        /// The folder.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// chromedriver started but never said it was ready.
    #[error("failed to start chromedriver: it did not become ready within {0:?}")]
    DriverNotReady(Duration),
    /// The WebDriver session could not be created (Chromium failed to start).
    #[error("failed to create a browser session")]
    Session(#[source] Box<thirtyfour::error::WebDriverError>),
    /// A WebDriver command failed.
    #[error("failed to run a browser command")]
    Command(#[source] Box<thirtyfour::error::WebDriverError>),
    /// The browser process is gone (crashed or killed).
    #[error("the browser process is gone")]
    Crashed,
    /// The session was retired (its step timed out); this caller may no longer drive it.
    #[error("the browser session was retired and can no longer be driven")]
    Retired,
}

impl From<thirtyfour::error::WebDriverError> for BrowserError {
    fn from(e: thirtyfour::error::WebDriverError) -> Self {
        BrowserError::Command(Box::new(e))
    }
}

/// A chromedriver that is starting: spawned, its port not yet known. The caller can do
/// other work (a worker writes its journal records) while it comes up, then open the
/// session. Dropped before that, it kills the driver.
#[derive(Debug)]
pub(crate) struct DriverStart {
    child: Option<Child>,
    group: Option<u32>,
    port: mpsc::Receiver<u16>,
    chrome: PathBuf,
    chromedriver: PathBuf,
    tmp_dir: PathBuf,
    own_process_group: bool,
}

/// How many times a chromedriver that exits before it listens is started again.
///
/// With `--port=0` chromedriver takes a free IPv4 port, then binds the same port on `::1`
/// and exits when that one is taken. With two matrices on one machine (dozens of browsers
/// and drivers, each with loopback sockets) that happened about once in 300 trials, as a
/// worker whose chromedriver "did not become ready" 100 ms after its start.
const DRIVER_STARTS: u32 = 3;

impl DriverStart {
    /// Spawns chromedriver (`--port=0`, `TMPDIR` = `tmp_dir`) and starts reading the port it
    /// picks. Returns at once.
    pub(crate) fn spawn(
        binaries: &BrowserBinaries,
        tmp_dir: &Path,
        options: &BrowserOptions,
    ) -> Result<DriverStart, BrowserError> {
        let (child, group, port) =
            start_chromedriver(&binaries.chromedriver, tmp_dir, options.own_process_group)?;
        Ok(DriverStart {
            child: Some(child),
            group,
            port,
            chrome: binaries.chrome.clone(),
            chromedriver: binaries.chromedriver.clone(),
            tmp_dir: tmp_dir.to_owned(),
            own_process_group: options.own_process_group,
        })
    }

    /// Waits for the port chromedriver listens on, starting it again when it exits first.
    async fn port(&mut self, within: Duration) -> Result<u16, BrowserError> {
        let deadline = Instant::now() + within;
        for attempt in 1..=DRIVER_STARTS {
            let rx = std::mem::replace(&mut self.port, mpsc::channel().1);
            let remaining = deadline.saturating_duration_since(Instant::now());
            let got = tokio::task::spawn_blocking(move || rx.recv_timeout(remaining)).await;
            match got {
                Ok(Ok(port)) => return Ok(port),
                // Its stdout closed before the port line: it exited. Start another.
                Ok(Err(mpsc::RecvTimeoutError::Disconnected)) if attempt < DRIVER_STARTS => {
                    if let Some(mut old) = self.child.take() {
                        kill_child(&mut old, self.group);
                    }
                    let (child, group, port) = start_chromedriver(
                        &self.chromedriver,
                        &self.tmp_dir,
                        self.own_process_group,
                    )?;
                    self.child = Some(child);
                    self.group = group;
                    self.port = port;
                }
                _ => break,
            }
        }
        Err(BrowserError::DriverNotReady(within))
    }

    /// Waits until chromedriver answers, then has it launch Chromium on `profile_dir`.
    pub(crate) async fn open_session(
        mut self,
        profile_dir: &Path,
        options: &BrowserOptions,
    ) -> Result<Browser, BrowserError> {
        let ready_within = Duration::from_secs(20);
        let port = self.port(ready_within).await?;
        let status = tokio::task::spawn_blocking(move || wait_ready(port, ready_within)).await;
        if !matches!(status, Ok(true)) {
            return Err(BrowserError::DriverNotReady(ready_within));
        }
        let caps = capabilities(Some(&self.chrome), profile_dir, options);
        let driver = match connect(&format!("http://127.0.0.1:{port}"), caps, options).await {
            Ok(d) => d,
            Err(e) => {
                process::kill_profile_processes(profile_dir);
                return Err(e);
            }
        };
        let browser_pid = browser_pid(&driver);
        Ok(Browser {
            driver,
            chromedriver: self.child.take(),
            driver_group: self.group,
            browser_pid,
            profile_dir: profile_dir.to_owned(),
        })
    }
}

/// Spawns chromedriver on `--port=0` and a thread that reads the port from its stdout.
fn start_chromedriver(
    chromedriver: &Path,
    tmp_dir: &Path,
    own_process_group: bool,
) -> Result<(Child, Option<u32>, mpsc::Receiver<u16>), BrowserError> {
    // Refused once the run is being interrupted; dies with the process that started it, and
    // in a group of its own takes its group (Chromium) along.
    let mut child = crate::startgate::spawn_browser_process(
        chromedriver,
        &["--port=0"],
        own_process_group,
        |cmd| {
            cmd.env("TMPDIR", tmp_dir)
                .env(process::HARNESS_PROCESS_ENV, "1")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null());
            if own_process_group {
                cmd.process_group(0);
            }
        },
    )
    .map_err(BrowserError::DriverStart)?;
    let group = own_process_group.then_some(child.id());
    let Some(stdout) = child.stdout.take() else {
        kill_child(&mut child, group);
        return Err(BrowserError::DriverStart(std::io::Error::other(
            "no stdout",
        )));
    };
    Ok((child, group, read_port(stdout)))
}

impl Drop for DriverStart {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            kill_child(child, self.group);
        }
    }
}

/// A running browser session and the processes behind it.
#[derive(Debug)]
pub struct Browser {
    driver: WebDriver,
    chromedriver: Option<Child>,
    driver_group: Option<u32>,
    browser_pid: Option<u32>,
    profile_dir: PathBuf,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and launches Chromium on `profile_dir`,
    /// with `tmp_dir` as its `TMPDIR`.
    pub async fn launch(
        binaries: &BrowserBinaries,
        profile_dir: &Path,
        tmp_dir: &Path,
        options: &BrowserOptions,
    ) -> Result<Browser, BrowserError> {
        DriverStart::spawn(binaries, tmp_dir, options)?
            .open_session(profile_dir, options)
            .await
    }

    /// Opens a session on a WebDriver endpoint the harness did not start
    /// (`BROWSER_FAULT_WEBDRIVER_URL`). The profile must be on the endpoint's machine.
    pub async fn connect_remote(
        url: &str,
        profile_dir: &Path,
        options: &BrowserOptions,
    ) -> Result<Browser, BrowserError> {
        let caps = capabilities(None, profile_dir, options);
        let driver = connect(url, caps, options).await?;
        let browser_pid = browser_pid(&driver);
        Ok(Browser {
            driver,
            chromedriver: None,
            driver_group: None,
            browser_pid,
            profile_dir: profile_dir.to_owned(),
        })
    }

    /// The WebDriver session.
    pub fn driver(&self) -> &WebDriver {
        &self.driver
    }

    /// Chromium's pid, from the session's `goog:processID` capability.
    pub fn browser_pid(&self) -> Option<u32> {
        self.browser_pid
    }

    /// The WebDriver session id the endpoint gave this session: what a grid knows it by,
    /// and what the journal records so that an orphan can be found and ended.
    pub fn webdriver_session_id(&self) -> String {
        self.driver.handle().session_id().to_string()
    }

    /// The WebDriver server this session lives on (the harness's chromedriver, or a remote
    /// endpoint), without a trailing `/`.
    pub fn server_url(&self) -> String {
        self.driver
            .handle()
            .server_url()
            .as_str()
            .trim_end_matches('/')
            .to_owned()
    }

    /// The capabilities the server answered the session's creation with.
    pub(crate) fn session_capabilities(&self) -> serde_json::Value {
        serde_json::to_value(self.driver.handle().capabilities()).unwrap_or_default()
    }

    /// chromedriver's pid, when the harness started it.
    pub fn driver_pid(&self) -> Option<u32> {
        self.chromedriver.as_ref().map(Child::id)
    }

    /// Whether Chromium's main process is still alive.
    pub fn is_alive(&self) -> bool {
        self.browser_pid.is_none_or(crate::liveness::pid_alive)
    }

    /// SIGKILLs Chromium's main process only, leaving chromedriver and the worker alive:
    /// the `browser_crash` perturbation. Its profile keeps the stale `SingletonLock`.
    pub fn kill_browser_only(&self) {
        if let Some(pid) = self.browser_pid {
            process::kill_pid_on_profile(pid, &self.profile_dir);
        }
    }

    /// SIGKILLs the whole tree: Chromium, its helpers, chromedriver.
    ///
    /// Chromium is chromedriver's child, not ours: once it has exited (after a polite quit)
    /// its pid is free, and on a busy machine (`pid_max` 32768, a browser per trial) another
    /// process gets it within moments. Measured: one false positive in 200 soak trials, a
    /// fresh chromedriver of another trial killed this way. So a pid is only signalled while
    /// its command line still names this profile.
    pub fn kill(&mut self) {
        if let Some(pid) = self.browser_pid {
            process::kill_pid_on_profile(pid, &self.profile_dir);
        }
        process::kill_profile_processes(&self.profile_dir);
        if let Some(child) = self.chromedriver.as_mut() {
            kill_child(child, self.driver_group);
        }
        // The session handle must not try a blocking DELETE on drop: mark it quit.
        self.forget_session();
    }

    /// Ends the session at once: SIGKILLs the whole tree ([`Browser::kill`]) and waits
    /// until every process that ran on the profile is dead. For a browser whose profile is
    /// removed next: nothing of the profile needs to be written back.
    pub async fn end_now(mut self) {
        let pids = process::processes_using_profile(&self.profile_dir);
        self.kill();
        process::wait_all_dead(&pids, Duration::from_secs(10)).await;
    }

    /// Ends the session politely, then makes sure nothing of the tree is left.
    pub async fn quit(mut self) {
        let driver = self.driver.clone();
        let _ = tokio::time::timeout(Duration::from_secs(5), driver.quit()).await;
        self.kill();
    }

    fn forget_session(&mut self) {
        // `WebDriver::quit` marks the handle as quit; after a kill the endpoint is gone, so
        // the request fails at once and only the mark matters.
        let driver = self.driver.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(2), driver.quit()).await;
            });
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(child) = self.chromedriver.as_mut()
            && matches!(child.try_wait(), Ok(None))
        {
            self.kill();
        }
    }
}

fn kill_child(child: &mut Child, group: Option<u32>) {
    if let Some(pgid) = group {
        process::kill_group(pgid);
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn capabilities(
    chrome: Option<&Path>,
    profile_dir: &Path,
    options: &BrowserOptions,
) -> Capabilities {
    let mut args: Vec<String> = HEADLESS_FLAGS.iter().map(|s| (*s).to_owned()).collect();
    args.push(format!("--user-data-dir={}", profile_dir.display()));
    args.extend(options.extra_args.iter().cloned());
    let mut chrome_options = serde_json::json!({ "args": args });
    if let Some(chrome) = chrome {
        chrome_options["binary"] = serde_json::Value::String(chrome.display().to_string());
    }
    if options.fast_first_navigation {
        chrome_options["prefs"] = serde_json::json!({
            "session.restore_on_startup": 4,
            "session.startup_urls": ["about:blank"],
        });
    }
    let value = serde_json::json!({
        "browserName": "chrome",
        "pageLoadStrategy": "normal",
        // In the capabilities rather than a command after: one round trip less per launch.
        "timeouts": { "pageLoad": u64::try_from(options.command_timeout.as_millis()).unwrap_or(u64::MAX) },
        "goog:chromeOptions": chrome_options,
    });
    match value {
        serde_json::Value::Object(map) => Capabilities::from(map),
        _ => Capabilities::new(),
    }
}

async fn connect(
    url: &str,
    caps: Capabilities,
    options: &BrowserOptions,
) -> Result<WebDriver, BrowserError> {
    let driver = WebDriver::builder(url, caps)
        .request_timeout(options.command_timeout)
        .connect()
        .await
        .map_err(|e| BrowserError::Session(Box::new(e)))?;
    Ok(driver)
}

fn browser_pid(driver: &WebDriver) -> Option<u32> {
    driver
        .handle()
        .capabilities()
        .get("goog:processID")
        .and_then(serde_json::Value::as_u64)
        .map(|p| p as u32)
}

/// Reads chromedriver's stdout until it says which port it chose
/// (`ChromeDriver was started successfully on port 41234.`); keeps draining it afterwards
/// so chromedriver never blocks on a full pipe.
fn read_port(stdout: impl Read + Send + 'static) -> mpsc::Receiver<u16> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let mut sent = false;
        while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
            if !sent && let Some(port) = parse_port(&line) {
                let _ = tx.send(port);
                sent = true;
            }
            line.clear();
        }
    });
    rx
}

fn parse_port(line: &str) -> Option<u16> {
    let rest = line.split("started successfully on port ").nth(1)?;
    rest.trim().trim_end_matches('.').parse().ok()
}

/// Asks `/status` until chromedriver answers `ready: true`. The reply is read by
/// Content-Length: chromedriver ignores `Connection: close`.
fn wait_ready(port: u16, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut backoff = Duration::from_millis(5);
    while Instant::now() < deadline {
        if status_ready(port).unwrap_or(false) {
            return true;
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(Duration::from_millis(100));
    }
    false
}

fn status_ready(port: u16) -> std::io::Result<bool> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
    let mut reader = BufReader::new(stream);
    let mut content_length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(false);
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            content_length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; content_length];
    reader.read_exact(&mut body)?;
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    Ok(json["value"]["ready"].as_bool().unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_port_chromedriver_prints() {
        assert_eq!(
            parse_port("ChromeDriver was started successfully on port 41234.\n"),
            Some(41234)
        );
        assert_eq!(
            parse_port("Starting ChromeDriver 156.0.8078.114 (ea19f97) on port 0"),
            None
        );
        assert_eq!(parse_port("Only local connections are allowed."), None);
    }

    #[test]
    fn capabilities_carry_the_fast_start_preferences_and_the_profile() {
        let caps = capabilities(None, Path::new("/p/x"), &BrowserOptions::default());
        let opts = caps.get("goog:chromeOptions").unwrap();
        assert_eq!(opts["prefs"]["session.restore_on_startup"], 4);
        assert!(
            opts["args"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == "--user-data-dir=/p/x")
        );
        let slow = BrowserOptions {
            fast_first_navigation: false,
            ..BrowserOptions::default()
        };
        assert!(
            capabilities(None, Path::new("/p/x"), &slow)
                .get("goog:chromeOptions")
                .unwrap()
                .get("prefs")
                .is_none()
        );
    }
}
