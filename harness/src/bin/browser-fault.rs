//! `browser-fault checkpoint …` and `browser-fault claim …`: the checkpoint protocol for an
//! agent command written in anything that can run a program (a shell script, Go, Ruby), as
//! the Python and Node clients offer it to theirs.
//!
//! It runs inside the agent command that a worker started (`Worker::run_agent`, or
//! `#[browser_fault(command = …)]`), and talks to that worker's checkpoint socket
//! (`BROWSER_FAULT_SOCKET`). Every call returns once the worker answered: a checkpoint is then
//! in the journal, and a fault point armed for its boundary has struck.
//!
//! Exit codes: 0 done, 1 the worker could not be reached or said the request was not its
//! protocol, 2 usage, 3 the journal refused (a conflict, a changed key: stop, do not act).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

use serde_json::{Value, json};

const USAGE: &str = "usage: browser-fault checkpoint OP [ARGS]\n       browser-fault claim OUTCOME [REASON]\n\
    \n\
    Inside an agent command that browser-fault runs (BROWSER_FAULT_SOCKET is set):\n\
    \n\
    checkpoint account FIELD          print the account's username, password, id or tenant\n\
    checkpoint intent EFFECT [--args A] [--key K]\n\
    \x20                                 record the intent of EFFECT; print its request key\n\
    checkpoint side-effect EFFECT      print the journal's `KEY STATE` of EFFECT (nothing if none)\n\
    checkpoint transition EFFECT TO [--from FROM]\n\
    \x20                                 move EFFECT to TARGET_VERIFIED, ACTION_SUBMITTED,\n\
    \x20                                 REMOTE_CONFIRMED or UNKNOWN\n\
    checkpoint checks NAME...          what the verify step compared (account, tenant, object,\n\
    \x20                                 route, fresh)\n\
    checkpoint fault-point BOUNDARY    mark a boundary (after_login, before_verify,\n\
    \x20                                 after_target_verified, after_click, after_remote_effect)\n\
    checkpoint profile                 print `trusted`, or the safe stop the profile calls for\n\
    checkpoint log LINE                a line of the worker's log\n\
    claim OUTCOME [REASON]             print the agent's claim (confirmed, unknown, completed,\n\
    \x20                                 browser_crashed, safe_stop REASON)\n\
    \n\
    Exit codes: 0 done, 1 the worker could not be reached or refused the protocol, 2 usage,\n\
    3 the journal refused.";

/// How a call ended, as an exit code.
enum Failure {
    Usage(String),
    Unreachable(String),
    Refused(String),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(why)) => {
            eprintln!("browser-fault: {why}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Unreachable(why)) => {
            eprintln!("browser-fault: {why}");
            ExitCode::from(1)
        }
        Err(Failure::Refused(why)) => {
            eprintln!("browser-fault: the journal refused: {why}");
            ExitCode::from(3)
        }
    }
}

fn run(args: &[String]) -> Result<(), Failure> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["-h" | "--help" | "help"] => {
            println!("{USAGE}");
            Ok(())
        }
        ["claim", outcome] => claim(outcome, None),
        ["claim", "safe_stop", reason] => claim("safe_stop", Some(reason)),
        ["checkpoint", op, rest @ ..] => checkpoint(op, rest),
        _ => Err(Failure::Usage(
            "expected `checkpoint OP …` or `claim OUTCOME`".into(),
        )),
    }
}

fn claim(outcome: &str, reason: Option<&str>) -> Result<(), Failure> {
    const OUTCOMES: &[&str] = &[
        "confirmed",
        "unknown",
        "completed",
        "browser_crashed",
        "safe_stop",
    ];
    if !OUTCOMES.contains(&outcome) {
        return Err(Failure::Usage(format!(
            "`{outcome}` is not a claim: one of {}",
            OUTCOMES.join(", ")
        )));
    }
    if outcome == "safe_stop" && reason.is_none() {
        return Err(Failure::Usage("`claim safe_stop` needs its REASON".into()));
    }
    let mut line = json!({ "claim": outcome });
    if let Some(reason) = reason {
        line["reason"] = Value::from(reason);
    }
    println!("{line}");
    Ok(())
}

fn checkpoint(op: &str, rest: &[&str]) -> Result<(), Failure> {
    let usage = |what: &str| Failure::Usage(format!("`checkpoint {op}` takes {what}"));
    match (op, rest) {
        ("account", [field]) => {
            let answer = ask(json!({ "op": "account" }))?;
            let value = match *field {
                "username" | "password" | "id" => answer[*field].as_str().unwrap_or_default(),
                "tenant" => answer["tenant"].as_str().unwrap_or_default(),
                other => {
                    return Err(Failure::Usage(format!(
                        "`{other}` is not a field of the account: username, password, id or tenant"
                    )));
                }
            };
            println!("{value}");
            Ok(())
        }
        ("account", _) => Err(usage("one FIELD: username, password, id or tenant")),
        ("intent", [effect, options @ ..]) => {
            let mut request = json!({ "op": "intent", "effect": effect, "args": "" });
            let mut options = options.iter();
            while let Some(option) = options.next() {
                let name = match *option {
                    "--args" => "args",
                    "--key" => "key",
                    other => return Err(usage(&format!("--args A or --key K, not `{other}`"))),
                };
                let value = options
                    .next()
                    .ok_or_else(|| usage(&format!("a value after {option}")))?;
                request[name] = Value::from(*value);
            }
            let answer = ask(request)?;
            println!("{}", answer["key"].as_str().unwrap_or_default());
            Ok(())
        }
        ("side-effect", [effect]) => {
            let answer = ask(json!({ "op": "side_effect", "effect": effect }))?;
            if let Some(record) = answer["record"].as_object() {
                println!(
                    "{} {}",
                    record["key"].as_str().unwrap_or_default(),
                    record["state"].as_str().unwrap_or_default()
                );
            }
            Ok(())
        }
        ("transition", [effect, to]) => {
            ask(json!({ "op": "transition", "effect": effect, "to": to })).map(drop)
        }
        ("transition", [effect, to, "--from", from]) => ask(json!({
            "op": "transition", "effect": effect, "to": to, "from": from
        }))
        .map(drop),
        ("checks", names) if !names.is_empty() => {
            ask(json!({ "op": "checks", "checks": names })).map(drop)
        }
        ("fault-point", [boundary]) => {
            ask(json!({ "op": "fault_point", "boundary": boundary })).map(drop)
        }
        ("profile", []) => {
            let answer = ask(json!({ "op": "profile" }))?;
            println!("{}", answer["stop"].as_str().unwrap_or("trusted"));
            Ok(())
        }
        ("log", [line]) => ask(json!({ "op": "log", "line": line })).map(drop),
        ("side-effect" | "fault-point" | "log", _) => Err(usage("one argument")),
        ("transition", _) => Err(usage("EFFECT TO [--from FROM]")),
        ("intent", _) => Err(usage("EFFECT [--args A] [--key K]")),
        ("checks", _) => Err(usage("at least one NAME")),
        ("profile", _) => Err(usage("no argument")),
        (other, _) => Err(Failure::Usage(format!("`{other}` is not a checkpoint op"))),
    }
}

/// One request on the worker's checkpoint socket, and its answer when `ok`.
fn ask(request: Value) -> Result<Value, Failure> {
    let path = std::env::var_os("BROWSER_FAULT_SOCKET").ok_or_else(|| {
        Failure::Unreachable(
            "BROWSER_FAULT_SOCKET is not set: run this inside an agent command that browser-fault runs"
                .into(),
        )
    })?;
    let unreachable = |e: std::io::Error| {
        Failure::Unreachable(format!(
            "the checkpoint socket {}: {e}",
            std::path::Path::new(&path).display()
        ))
    };
    let mut stream = UnixStream::connect(&path).map_err(unreachable)?;
    let mut line = request.to_string();
    line.push('\n');
    stream.write_all(line.as_bytes()).map_err(unreachable)?;
    let mut answer = String::new();
    BufReader::new(&stream)
        .read_line(&mut answer)
        .map_err(unreachable)?;
    if answer.is_empty() {
        return Err(Failure::Unreachable(
            "the worker closed the checkpoint socket".into(),
        ));
    }
    let answer: Value = serde_json::from_str(&answer)
        .map_err(|e| Failure::Unreachable(format!("the worker's answer is not JSON: {e}")))?;
    let message = || answer["message"].as_str().unwrap_or_default().to_owned();
    match (answer["ok"].as_bool(), answer["error"].as_str()) {
        (Some(true), _) => Ok(answer),
        (_, Some("refused")) => Err(Failure::Refused(message())),
        _ => Err(Failure::Unreachable(format!(
            "the worker refused the request: {}",
            message()
        ))),
    }
}
