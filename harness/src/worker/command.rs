//! An agent that is a command (a Python or Node program, a binary): [`AgentCommand`] and
//! [`Worker::run_agent`].
//!
//! The worker runs the command in its own process group, so a crash kills the agent with its
//! browser. The agent drives the worker's browser through the worker's endpoints
//! ([`Worker::webdriver_url`], [`Worker::cdp_url`]), and writes its checkpoints and marks its
//! fault points over the *checkpoint socket*: a Unix socket the worker owns, one JSON request
//! per line, one JSON answer per line. A checkpoint is answered once the journal has it; a
//! fault point armed for that boundary strikes before it is answered.
//!
//! The agent's claim is one line of JSON on its standard output (`{"claim": "confirmed"}`),
//! read with its exit status. See the README's "An agent in another language" for the
//! protocol, and `clients/` for the Python and Node clients.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use super::{TaskError, Worker};
use crate::journal::Checkpoint;
use crate::outcome::{AgentError, Outcome, SafeStop, TaskResult};
use crate::plan::FaultPoint;

/// The environment variables an agent command is started with.
pub mod env {
    /// The worker's WebDriver endpoint ([`Worker::webdriver_url`](super::Worker::webdriver_url)).
    pub const WEBDRIVER_URL: &str = "BROWSER_FAULT_WEBDRIVER_URL";
    /// The worker's CDP endpoint ([`Worker::cdp_url`](super::Worker::cdp_url)); unset when
    /// the browser names no DevTools address.
    pub const CDP_URL: &str = "BROWSER_FAULT_CDP_URL";
    /// The checkpoint socket (a Unix socket path).
    pub const SOCKET: &str = "BROWSER_FAULT_SOCKET";
    /// The site's origin, `http://127.0.0.1:PORT`.
    pub const ORIGIN: &str = "BROWSER_FAULT_ORIGIN";
    /// The run: the same for every worker of a trial.
    pub const RUN_ID: &str = "BROWSER_FAULT_RUN_ID";
    /// Which worker of the run this is, from 1.
    pub const INCARNATION: &str = "BROWSER_FAULT_INCARNATION";
    /// The request key the journal derives for the command's effect
    /// ([`AgentCommand::effect`](super::AgentCommand::effect)); unset without one.
    pub const REQUEST_KEY: &str = "BROWSER_FAULT_REQUEST_KEY";
    /// A folder kept across the workers of a run, for the agent's own state.
    pub const STATE_DIR: &str = "BROWSER_FAULT_STATE_DIR";
    /// The Node client's file ([`clients::node_client`](crate::clients::node_client)), for
    /// `await import(process.env.BROWSER_FAULT_NODE_CLIENT)`.
    pub const NODE_CLIENT: &str = "BROWSER_FAULT_NODE_CLIENT";
}

/// The variables of the worker's own environment an agent command inherits; every other one
/// is dropped (the worker's own launch, which carries the account, among them).
const INHERITED: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];

/// How long the output an agent wrote before it ended is read after it ended.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// The longest request line an agent may write to its checkpoint socket.
const MAX_REQUEST: usize = 64 << 10;

/// A command line that [`AgentCommand::parse`] cannot split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandLineError {
    /// Nothing but white space.
    #[error("the agent command is empty")]
    Empty,
    /// A quote is never closed.
    #[error("the agent command has an unclosed {0} quote")]
    UnclosedQuote(char),
}

/// An agent that is a command: its program, arguments, environment and folder.
///
/// ```no_run
/// # use browser_fault::prelude::*;
/// # async fn f(w: &mut Worker) -> TaskResult {
/// let agent = AgentCommand::new("python3")
///     .arg("agent.py")
///     .current_dir(env!("CARGO_MANIFEST_DIR"))
///     .effect("post-hello");
/// w.run_agent(&agent).await
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentCommand {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    current_dir: Option<PathBuf>,
    effect: Option<String>,
}

impl AgentCommand {
    /// A command running `program` (looked up on `PATH` when it names no folder).
    pub fn new(program: impl Into<OsString>) -> Self {
        AgentCommand {
            program: program.into(),
            args: Vec::new(),
            envs: Vec::new(),
            current_dir: None,
            effect: None,
        }
    }

    /// A command from one line, split at white space; `'…'` and `"…"` quote (no escapes,
    /// no variables: this is not a shell).
    pub fn parse(line: &str) -> Result<Self, CommandLineError> {
        let words = split_words(line)?;
        let mut words = words.into_iter();
        let program = words.next().ok_or(CommandLineError::Empty)?;
        Ok(AgentCommand::new(program).args(words))
    }

    /// One more argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// More arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// An environment variable of the command's own (the worker's environment is not
    /// inherited, but for `PATH`, `HOME`, the locale and `TMPDIR`).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// The folder the command runs in (relative programs and arguments are found from it).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// The side effect the command performs, by its journal name: its derived request key is
    /// passed in [`env::REQUEST_KEY`].
    pub fn effect(mut self, name: impl Into<String>) -> Self {
        self.effect = Some(name.into());
        self
    }

    /// The program, as given.
    pub fn program(&self) -> &std::ffi::OsStr {
        &self.program
    }

    /// How it reads in a log line: its program's file name and its arguments.
    fn display(&self) -> String {
        let program = Path::new(&self.program)
            .file_name()
            .unwrap_or(self.program.as_os_str())
            .to_string_lossy()
            .into_owned();
        std::iter::once(program)
            .chain(self.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn split_words(line: &str) -> Result<Vec<String>, CommandLineError> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.get_or_insert_default().push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            None if c.is_whitespace() => words.extend(word.take()),
            None => word.get_or_insert_default().push(c),
        }
    }
    if let Some(q) = quote {
        return Err(CommandLineError::UnclosedQuote(q));
    }
    words.extend(word);
    Ok(words)
}

/// What the agent claimed on its standard output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim {
    Outcome(Outcome),
    SafeStop(SafeStop),
    BrowserCrashed,
}

fn read_claim(line: &str) -> Option<Result<Claim, String>> {
    let value: Value = serde_json::from_str(line.trim()).ok()?;
    let claim = value.get("claim")?;
    Some(match claim.as_str() {
        Some("confirmed") => Ok(Claim::Outcome(Outcome::Confirmed)),
        Some("unknown") => Ok(Claim::Outcome(Outcome::Unknown)),
        Some("completed") => Ok(Claim::Outcome(Outcome::Completed)),
        Some("browser_crashed") => Ok(Claim::BrowserCrashed),
        Some("safe_stop") => match value.get("reason").cloned().map(serde_json::from_value) {
            Some(Ok(stop)) => Ok(Claim::SafeStop(stop)),
            _ => Err(
                "a `safe_stop` claim needs a `reason` (wrong_account, wrong_tenant, wrong_object, …)"
                    .to_owned(),
            ),
        },
        _ => Err(
            "`claim` is one of confirmed, unknown, completed, browser_crashed, safe_stop"
                .to_owned(),
        ),
    })
}

impl Worker {
    /// Runs an agent that is a command as this worker, and returns what it claimed.
    ///
    /// The command starts in this worker's process group (a crash SIGKILLs it with its
    /// browser) with the variables of [`env`](mod@env): the worker's endpoints, the checkpoint socket,
    /// the origin, run, incarnation, state folder and request key. The account's credentials
    /// are never in its environment or arguments: the agent asks for them on the checkpoint
    /// socket (`{"op": "account"}`). Its standard error and its standard output, but for its
    /// claim, are lines of the worker's log (redacted like all of it).
    ///
    /// It ends with its claim: one line `{"claim": "confirmed" | "unknown" | "completed" |
    /// "browser_crashed"}` or `{"claim": "safe_stop", "reason": "wrong_account"}` (the names
    /// of [`SafeStop`]) on its standard output. What does not end with a claim the harness
    /// can take is a typed [`AgentError`]: the program cannot start, it ended before it drove
    /// its browser, it failed, it claimed nothing or garbage, it broke the protocol.
    pub async fn run_agent(&mut self, command: &AgentCommand) -> TaskResult {
        let webdriver_url = self.webdriver_url().await?;
        let cdp_url = match self.cdp_url().await {
            Ok(url) => Some(url),
            Err(e) => {
                self.log(&format!(
                    "agent: no CDP endpoint ({})",
                    crate::error::error_chain(&e)
                ));
                None
            }
        };
        let state_dir = self.scratch_dir()?;
        let socket_dir = socket_dir().map_err(|e| agent_spawn_error(command, e))?;
        let socket_path = socket_dir.path().join("checkpoint.sock");
        let listener =
            UnixListener::bind(&socket_path).map_err(|e| agent_spawn_error(command, e))?;

        let mut cmd = tokio::process::Command::new(&command.program);
        cmd.args(&command.args).env_clear();
        for key in INHERITED {
            if let Some(value) = std::env::var_os(key) {
                cmd.env(key, value);
            }
        }
        let spec = &self.shared.spec;
        cmd.env(env::WEBDRIVER_URL, &webdriver_url)
            .env(env::SOCKET, &socket_path)
            .env(env::ORIGIN, &spec.origin)
            .env(env::RUN_ID, &spec.run_id)
            .env(env::INCARNATION, spec.incarnation.to_string())
            .env(env::STATE_DIR, &state_dir)
            .env(env::NODE_CLIENT, crate::clients::node_client())
            // The Python client is importable as `browser_fault` (the command's own
            // `PYTHONPATH`, if it sets one, replaces this).
            .env("PYTHONPATH", crate::clients::python_dir());
        if let Some(url) = &cdp_url {
            cmd.env(env::CDP_URL, url);
        }
        if let Some(effect) = &command.effect {
            cmd.env(
                env::REQUEST_KEY,
                crate::journal::RequestKey::derive(&spec.run_id, effect).as_str(),
            );
        }
        for (k, v) in &command.envs {
            cmd.env(k, v);
        }
        if let Some(dir) = &command.current_dir {
            cmd.current_dir(dir);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // An `abort`-mode worker's task is dropped at its crash: the agent with it.
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| agent_spawn_error(command, e))?;
        self.log(&format!("agent: started `{}`", command.display()));
        let mut stdout = child.stdout.take().map(|s| BufReader::new(s).lines());
        let mut stderr = child.stderr.take().map(|s| BufReader::new(s).lines());

        // What the agent claimed on its output: none yet, one, or why its claims are bad.
        let mut claim: Option<Result<Claim, String>> = None;
        // The first violation of the protocol on any connection. It is set before the answer
        // that reports it is written, so an agent that reads that answer and exits at once
        // cannot end before the violation is known (a connection's own end may come after
        // the process's).
        let violation = OnceLock::new();
        let this: &Worker = self;
        let mut connections = FuturesUnordered::new();
        let status = loop {
            tokio::select! {
                accepted = listener.accept() => {
                    if let Ok((stream, _)) = accepted {
                        connections.push(this.serve_agent(stream, &violation));
                    }
                }
                Some(()) = connections.next(), if !connections.is_empty() => {}
                line = next_line(&mut stdout) => match line {
                    Some(line) => this.agent_stdout(&mut claim, &line),
                    None => stdout = None,
                },
                line = next_line(&mut stderr) => match line {
                    Some(line) => this.log(&format!("agent: {line}")),
                    None => stderr = None,
                },
                status = child.wait() => break status,
            }
        };
        // What it wrote before it ended (a pipe that closed already is `None`), for as long
        // as nothing it left behind holds its pipes open.
        let drained = async {
            while stdout.is_some()
                && let Some(line) = next_line(&mut stdout).await
            {
                this.agent_stdout(&mut claim, &line);
            }
            while stderr.is_some()
                && let Some(line) = next_line(&mut stderr).await
            {
                this.log(&format!("agent: {line}"));
            }
        };
        let _ = tokio::time::timeout(DRAIN, drained).await;
        drop(connections);
        let status = match status {
            Ok(s) => s,
            Err(e) => return Err(agent_spawn_error(command, e)),
        };
        let status_text = exit_text(status);
        self.log(&format!("agent: ended ({status_text})"));
        if let Some(why) = violation.into_inner() {
            return Err(TaskError::Agent(AgentError::Protocol { why }));
        }
        match claim {
            Some(Err(why)) => Err(TaskError::Agent(AgentError::BadClaim { why })),
            Some(Ok(Claim::Outcome(_))) if !status.success() => {
                Err(TaskError::Agent(AgentError::BadClaim {
                    why: format!("it claimed success, and ended {status_text}"),
                }))
            }
            Some(Ok(Claim::Outcome(o))) => Ok(o),
            Some(Ok(Claim::SafeStop(s))) => Err(s.into()),
            Some(Ok(Claim::BrowserCrashed)) if self.browser_alive() => {
                Err(TaskError::Agent(AgentError::FalseCrashClaim))
            }
            Some(Ok(Claim::BrowserCrashed)) => Err(crate::browser::BrowserError::Crashed.into()),
            None if !self.shared.agent_drove.load(Ordering::Acquire) => {
                Err(TaskError::Agent(AgentError::NeverDrove {
                    status: status_text,
                }))
            }
            None if status.success() => Err(TaskError::Agent(AgentError::NoClaim)),
            None => Err(TaskError::Agent(AgentError::Exited {
                status: status_text,
            })),
        }
    }

    /// A line of the agent's standard output: its claim, or a line of the log.
    fn agent_stdout(&self, claim: &mut Option<Result<Claim, String>>, line: &str) {
        match read_claim(line) {
            Some(read) if claim.is_none() => *claim = Some(read),
            Some(_) => *claim = Some(Err("it printed more than one claim".to_owned())),
            None => self.log(&format!("agent: {line}")),
        }
    }

    /// Serves one connection to the checkpoint socket until the agent closes it; the first
    /// violation of the protocol on any connection is set in `violation` before its answer
    /// is written.
    async fn serve_agent(&self, stream: UnixStream, violation: &OnceLock<String>) {
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match read_bounded_line(&mut lines, &mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let answer = match std::str::from_utf8(&buf)
                .ok()
                .and_then(|l| serde_json::from_str::<Value>(l.trim()).ok())
            {
                Some(request) if request.is_object() => match self.answer_agent(&request).await {
                    Ok(answer) => answer,
                    Err(Refusal::Refused(message)) => {
                        json!({ "ok": false, "error": "refused", "message": message })
                    }
                    Err(Refusal::Violation(why)) => {
                        let _ = violation.set(why.clone());
                        json!({ "ok": false, "error": "protocol", "message": why })
                    }
                },
                _ => {
                    let why = if buf.len() >= MAX_REQUEST {
                        format!("a request longer than {MAX_REQUEST} bytes")
                    } else {
                        "a line that is not a JSON object".to_owned()
                    };
                    let _ = violation.set(why.clone());
                    json!({ "ok": false, "error": "protocol", "message": why })
                }
            };
            let mut line = answer.to_string().into_bytes();
            line.push(b'\n');
            if write.write_all(&line).await.is_err() {
                return;
            }
        }
    }

    /// One request of the checkpoint protocol.
    async fn answer_agent(&self, request: &Value) -> Result<Value, Refusal> {
        let op = request["op"]
            .as_str()
            .ok_or_else(|| Refusal::Violation("a request without an `op`".to_owned()))?;
        let text = |field: &str| -> Result<&str, Refusal> {
            request[field]
                .as_str()
                .ok_or_else(|| Refusal::Violation(format!("`{op}` needs a string `{field}`")))
        };
        match op {
            "account" => {
                let a = self.account();
                Ok(json!({
                    "ok": true,
                    "username": a.username,
                    "password": a.password.expose(),
                    "id": a.id,
                    "tenant": a.tenant,
                }))
            }
            "intent" => {
                let effect = text("effect")?;
                let args = request["args"].as_str().unwrap_or_default();
                let journal = self.journal();
                let record = match request["key"].as_str() {
                    Some(key) => journal.record_intent_with_key(effect, args, key),
                    None => journal.record_intent(effect, args),
                }
                .map_err(|e| Refusal::Refused(crate::error::error_chain(&e)))?;
                Ok(json!({
                    "ok": true,
                    "key": record.request_key.as_str(),
                    "state": record.state.as_str(),
                }))
            }
            "side_effect" => {
                let effect = text("effect")?;
                let record = self
                    .journal()
                    .side_effect(effect)
                    .map_err(|e| Refusal::Refused(crate::error::error_chain(&e)))?;
                Ok(json!({
                    "ok": true,
                    "record": record.map(|r| json!({
                        "key": r.request_key.as_str(),
                        "state": r.state.as_str(),
                        "incarnation": r.incarnation,
                    })),
                }))
            }
            "transition" => {
                let effect = text("effect")?;
                let to = checkpoint(text("to")?)?;
                let record = self
                    .journal()
                    .side_effect(effect)
                    .map_err(|e| Refusal::Refused(crate::error::error_chain(&e)))?
                    .ok_or_else(|| {
                        Refusal::Refused(format!("no intent of `{effect}` is recorded"))
                    })?;
                let from = match request["from"].as_str() {
                    Some(name) => checkpoint(name)?,
                    None => record.state,
                };
                self.journal()
                    .transition(&record.request_key, from, to)
                    .map_err(|e| Refusal::Refused(crate::error::error_chain(&e)))?;
                Ok(json!({ "ok": true, "state": to.as_str() }))
            }
            "checks" => {
                let checks = request["checks"].as_array().ok_or_else(|| {
                    Refusal::Violation("`checks` needs an array `checks`".to_owned())
                })?;
                let mut known = Vec::new();
                for c in checks {
                    let check = c
                        .as_str()
                        .and_then(super::TargetCheck::from_name)
                        .ok_or_else(|| {
                            Refusal::Violation(format!(
                                "`{c}` is not a target check (account, tenant, object, route, fresh)"
                            ))
                        })?;
                    known.push(check);
                }
                self.record_checks(&known);
                Ok(json!({ "ok": true }))
            }
            "fault_point" => {
                let name = text("boundary")?;
                let point: FaultPoint = serde_json::from_value(Value::from(name))
                    .ok()
                    .filter(|p| *p != FaultPoint::AfterStep)
                    .ok_or_else(|| Refusal::Violation(format!("`{name}` is not a boundary")))?;
                self.strike(point).await;
                Ok(json!({ "ok": true }))
            }
            "profile" => {
                // The worker's own check of the profile it was given (rolled back, written by
                // another browser version): the agent decides what to do with it.
                let stop = self.require_trusted_profile().err().and_then(|e| match e {
                    TaskError::SafeStop(stop) => Some(stop),
                    _ => None,
                });
                Ok(json!({
                    "ok": true,
                    "trusted": stop.is_none(),
                    "stop": stop,
                    "findings": self.findings.iter().map(super::finding_name).collect::<Vec<_>>(),
                }))
            }
            "log" => {
                self.log(&format!("agent: {}", text("line")?));
                Ok(json!({ "ok": true }))
            }
            other => Err(Refusal::Violation(format!("an unknown op `{other}`"))),
        }
    }
}

/// Why a request was not done.
enum Refusal {
    /// The journal refused it (a conflict, a key changed): the agent is told, and decides.
    Refused(String),
    /// The request is not the protocol.
    Violation(String),
}

fn checkpoint(name: &str) -> Result<Checkpoint, Refusal> {
    Checkpoint::from_name(name)
        .ok_or_else(|| Refusal::Violation(format!("`{name}` is not a checkpoint")))
}

/// A private folder (0700) for the checkpoint socket: under `TMPDIR`, or under `/tmp` when
/// `TMPDIR` is so deep that the socket's path would pass the 107 bytes a Unix socket address
/// holds.
fn socket_dir() -> std::io::Result<tempfile::TempDir> {
    socket_dir_in(&std::env::temp_dir())
}

fn socket_dir_in(base: &Path) -> std::io::Result<tempfile::TempDir> {
    const SOCKET_PATH_MAX: usize = 107;
    let dir = tempfile::Builder::new()
        .prefix("bf-agent-")
        .tempdir_in(base)?;
    if dir.path().join("checkpoint.sock").as_os_str().len() <= SOCKET_PATH_MAX {
        return Ok(dir);
    }
    tempfile::Builder::new()
        .prefix("bf-agent-")
        .tempdir_in("/tmp")
}

fn agent_spawn_error(command: &AgentCommand, source: std::io::Error) -> TaskError {
    TaskError::Agent(AgentError::Spawn {
        program: command.program.to_string_lossy().into_owned(),
        source,
    })
}

async fn next_line<R>(lines: &mut Option<tokio::io::Lines<R>>) -> Option<String>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    match lines {
        Some(l) => l.next_line().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

/// Reads one line of at most [`MAX_REQUEST`] bytes (a longer one is cut there).
async fn read_bounded_line<R>(r: &mut R, buf: &mut Vec<u8>) -> std::io::Result<usize>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    let mut limited = tokio::io::AsyncReadExt::take(r, MAX_REQUEST as u64);
    limited.read_until(b'\n', buf).await
}

fn exit_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => "unknown status".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_the_socket_where_its_path_fits() {
        let deep = tempfile::tempdir().unwrap();
        let long = deep.path().join("x".repeat(100));
        std::fs::create_dir_all(&long).unwrap();
        let dir = socket_dir_in(&long).unwrap();
        assert!(dir.path().starts_with("/tmp"), "{}", dir.path().display());
        let path = dir.path().join("checkpoint.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let near = socket_dir_in(deep.path()).unwrap();
        assert!(near.path().starts_with(deep.path()));
    }

    #[test]
    fn splits_a_command_line_at_white_space_and_quotes() {
        let c = AgentCommand::parse(r#"python3  agent.py --name "a b" 'c d'"#).unwrap();
        assert_eq!(c.program, "python3");
        assert_eq!(c.args, ["agent.py", "--name", "a b", "c d"]);
        assert_eq!(AgentCommand::parse("  "), Err(CommandLineError::Empty));
        assert_eq!(
            AgentCommand::parse("node 'x"),
            Err(CommandLineError::UnclosedQuote('\''))
        );
    }

    #[test]
    fn reads_claims_and_tells_garbage_from_other_output() {
        assert_eq!(
            read_claim(r#"{"claim": "confirmed"}"#),
            Some(Ok(Claim::Outcome(Outcome::Confirmed)))
        );
        assert_eq!(
            read_claim(r#"{"claim":"safe_stop","reason":"wrong_account"}"#),
            Some(Ok(Claim::SafeStop(SafeStop::WrongAccount)))
        );
        assert!(matches!(
            read_claim(r#"{"claim":"safe_stop","reason":"tired"}"#),
            Some(Err(_))
        ));
        assert!(matches!(read_claim(r#"{"claim":"done"}"#), Some(Err(_))));
        assert_eq!(read_claim("posting hello"), None);
        assert_eq!(read_claim(r#"{"status": 1}"#), None);
    }
}
