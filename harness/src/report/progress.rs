//! Progress of a long run on standard error: `[12/42] 1 failed · ~3m left`, rewritten in
//! place on a terminal, one plain line per trial otherwise (CI logs).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The progress line of a run: `[done/total] N failed · ~T left`, the time left estimated
/// from the mean time per trial so far (`estimating time left` before the first trial
/// ends; `done in T` at the end).
pub fn progress_line(done: usize, total: usize, failed: usize, elapsed: Duration) -> String {
    let head = format!("[{done}/{total}] {failed} failed");
    if done >= total {
        return format!("{head} · done in {}", clock(elapsed));
    }
    if done == 0 {
        return format!("{head} · estimating time left");
    }
    let per_trial = elapsed.as_secs_f64() / done as f64;
    let left = Duration::from_secs_f64(per_trial * (total - done) as f64);
    format!("{head} · ~{} left", rounded(left))
}

/// A coarse duration: `45s`, `3m`, `1h 05m`.
fn rounded(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m", (s + 30) / 60)
    } else {
        let m = (s + 30) / 60;
        format!("{}h {:02}m", m / 60, m % 60)
    }
}

/// An exact duration: `12s`, `3m 02s`, `1h 05m 00s`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, s) => format!("{h}h {m:02}m {s:02}s"),
    }
}

struct State {
    done: usize,
    failed: usize,
    out: Box<dyn Write + Send>,
}

/// Progress of a run, shared by the threads that run trials. On a terminal the line is
/// rewritten in place (`\r`), a failed trial's name printed above it; elsewhere each trial
/// prints one plain line.
pub struct Progress {
    total: usize,
    started: Instant,
    tty: bool,
    state: Mutex<State>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f.debug_struct("Progress")
            .field("total", &self.total)
            .field("done", &s.done)
            .field("failed", &s.failed)
            .field("tty", &self.tty)
            .finish()
    }
}

impl Progress {
    /// Progress of `total` trials on standard error, in place when it is a terminal.
    pub fn start(total: usize) -> Progress {
        let tty = std::io::stderr().is_terminal();
        Progress::to_writer(total, std::io::stderr(), tty)
    }

    /// Progress of `total` trials on `out`; `tty`: rewrite one line in place.
    pub fn to_writer(total: usize, out: impl Write + Send + 'static, tty: bool) -> Progress {
        let p = Progress {
            total,
            started: Instant::now(),
            tty,
            state: Mutex::new(State {
                done: 0,
                failed: 0,
                out: Box::new(out),
            }),
        };
        if tty {
            let mut s = p.state.lock().unwrap_or_else(|e| e.into_inner());
            let line = progress_line(0, total, 0, Duration::ZERO);
            let _ = write!(s.out, "\r{line}\x1b[K");
            let _ = s.out.flush();
        }
        p
    }

    /// Counts one trial as done (`passed`: it passed or was ignored) and shows the line.
    pub fn trial_done(&self, name: &str, passed: bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.done += 1;
        s.failed += usize::from(!passed);
        let line = progress_line(
            s.done,
            self.total.max(s.done),
            s.failed,
            self.started.elapsed(),
        );
        let _ = if self.tty {
            if passed {
                write!(s.out, "\r{line}\x1b[K")
            } else {
                write!(s.out, "\r\x1b[Kfailed: {name}\n{line}")
            }
        } else {
            let verdict = if passed { "ok" } else { "FAILED" };
            writeln!(s.out, "{line} · {name} {verdict}")
        };
        let _ = s.out.flush();
    }

    /// Ends the line on a terminal (the next output starts on a fresh line).
    pub fn finish(&self) {
        if self.tty {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let _ = writeln!(s.out);
            let _ = s.out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn the_line_estimates_time_left_from_the_mean_trial() {
        // 12 trials in 60 s: 5 s each, 30 left: 150 s, about 3 minutes.
        assert_eq!(
            progress_line(12, 42, 1, Duration::from_secs(60)),
            "[12/42] 1 failed · ~3m left"
        );
        assert_eq!(
            progress_line(1, 10, 0, Duration::from_secs(5)),
            "[1/10] 0 failed · ~45s left"
        );
        assert_eq!(
            progress_line(1, 100, 0, Duration::from_secs(40)),
            "[1/100] 0 failed · ~1h 06m left"
        );
        assert_eq!(
            progress_line(0, 42, 0, Duration::from_secs(3)),
            "[0/42] 0 failed · estimating time left"
        );
        assert_eq!(
            progress_line(42, 42, 2, Duration::from_secs(185)),
            "[42/42] 2 failed · done in 3m 05s"
        );
    }

    #[test]
    fn a_terminal_gets_one_line_rewritten_and_a_log_gets_plain_lines() {
        let out = Shared::default();
        let p = Progress::to_writer(3, out.clone(), true);
        p.trial_done("a::after_login", true);
        p.trial_done("a::after_click::lost", false);
        p.finish();
        let text = out.text();
        assert!(text.starts_with("\r[0/3] 0 failed · estimating time left\x1b[K"));
        assert!(text.contains("\r[1/3] 0 failed · ~"), "{text:?}");
        assert!(
            text.contains("\r\x1b[Kfailed: a::after_click::lost\n[2/3] 1 failed · ~"),
            "{text:?}"
        );
        assert!(text.ends_with('\n'));
        assert_eq!(text.matches('\n').count(), 2, "{text:?}");

        let out = Shared::default();
        let p = Progress::to_writer(2, out.clone(), false);
        p.trial_done("a::after_login", true);
        p.trial_done("a::after_click::lost", false);
        p.finish();
        let lines: Vec<String> = out.text().lines().map(str::to_owned).collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(!out.text().contains('\r'));
        assert!(lines[0].starts_with("[1/2] 0 failed · ~"), "{lines:?}");
        assert!(lines[0].ends_with(" · a::after_login ok"), "{lines:?}");
        assert!(
            lines[1].starts_with("[2/2] 1 failed · done in "),
            "{lines:?}"
        );
        assert!(lines[1].ends_with(" · a::after_click::lost FAILED"));
    }
}
