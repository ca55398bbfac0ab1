//! Where a worker's log lines go, and the timed trace `BROWSER_FAULT_TRACE` asks for.

use std::sync::{Arc, Mutex};

use crate::logtail::LogTail;

/// Whether `BROWSER_FAULT_TRACE` asks for a timed line per browser step and worker phase
/// in the worker's log (for finding where a trial's time goes; off by default).
fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("BROWSER_FAULT_TRACE").is_some_and(|v| v == "1"))
}

/// Logs `line()` with the worker process's age in ms, when tracing.
pub(crate) fn trace(log: &LogSink, line: impl FnOnce() -> String) {
    if tracing() {
        static T0: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let age = T0
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_millis();
        log.line(&format!("+{age} {}", line()));
    }
}

/// Where a worker's log lines go.
#[derive(Clone, Debug)]
pub(crate) enum LogSink {
    /// Standard error of a worker process: the trial keeps the rolling tail.
    Stderr,
    /// An in-process tail.
    Tail(Arc<Mutex<LogTail>>),
}

impl LogSink {
    pub(crate) fn line(&self, line: &str) {
        match self {
            LogSink::Stderr => eprintln!("{line}"),
            LogSink::Tail(tail) => tail.lock().unwrap_or_else(|p| p.into_inner()).line(line),
        }
    }
}
