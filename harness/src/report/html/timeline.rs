//! A trial's timeline: each worker's span, where its fault struck, on one time axis.

use std::fmt::Write as _;

use crate::evidence::{Evidence, WorkerEnd};
use crate::plan::FaultPoint;

use super::{escape, human_ms};

/// Where each worker sits on the trial's clock, in ms from the trial's start. Evidence has
/// each worker's length, not its spawn time: a worker the fault crashed ends where the fault
/// struck; otherwise the first worker(s) start when setup ends, the recovery worker when the
/// scenario phase ends, and a worker that arrived mid-task so that it ends with that phase.
pub(super) fn worker_spans(e: &Evidence) -> Vec<(u64, u64)> {
    let d = &e.durations;
    let concurrent = e.boundary == Some(FaultPoint::ConcurrentProfile) && e.variant.is_none();
    let last = e.workers.len().saturating_sub(1);
    e.workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let crashed_by_fault = w.end == WorkerEnd::Crashed
                && e.fault.struck
                && e.fault.worker == Some(w.incarnation);
            let start = if let (true, Some(at)) = (crashed_by_fault, e.fault.at_ms) {
                at.saturating_sub(w.total_ms)
            } else if concurrent || i == 0 {
                d.setup_ms
            } else if i == last && d.recovery_ms > 0 {
                d.setup_ms + d.scenario_ms
            } else {
                (d.setup_ms + d.scenario_ms)
                    .saturating_sub(w.total_ms)
                    .max(d.setup_ms)
            };
            (start, w.total_ms)
        })
        .collect()
}

pub(super) fn pct(x: u64, of: u64) -> String {
    format!("{:.2}%", (x as f64 * 100.0 / of.max(1) as f64).min(100.0))
}

pub(super) fn end_name(end: WorkerEnd) -> &'static str {
    match end {
        WorkerEnd::Finished => "finished",
        WorkerEnd::Crashed => "crashed",
        WorkerEnd::TimedOut => "timed_out",
        WorkerEnd::Died => "died",
    }
}

pub(super) fn timeline(h: &mut String, e: &Evidence) {
    let d = &e.durations;
    let phases = [
        ("setup", d.setup_ms),
        ("scenario", d.scenario_ms),
        ("recovery", d.recovery_ms),
        ("oracle", d.oracle_ms),
        ("cleanup", d.cleanup_ms),
    ];
    let spans = worker_spans(e);
    let phase_sum: u64 = phases.iter().map(|p| p.1).sum();
    let axis = spans
        .iter()
        .map(|(s, l)| s + l)
        .chain([d.total_ms, phase_sum, e.fault.at_ms.unwrap_or(0)])
        .max()
        .unwrap_or(1)
        .max(1);
    let mark = |h: &mut String, flag: Option<&str>| {
        if let (true, Some(at)) = (e.fault.struck, e.fault.at_ms) {
            let _ = write!(
                h,
                "<div class=\"fault-mark\" style=\"left:{}\" title=\"{} at {}\">{}</div>",
                pct(at, axis),
                escape(&e.fault.planned),
                human_ms(at),
                flag.map(|f| format!("<span class=\"flag\">{}</span>", escape(f)))
                    .unwrap_or_default()
            );
        }
    };
    h.push_str("<div class=\"timeline\">");
    // The trial's phases.
    h.push_str("<div class=\"lane phases\"><div class=\"lane-label\">trial<small>phases</small></div><div class=\"track\">");
    let mut at = 0;
    for (name, ms) in phases {
        if ms > 0 {
            let _ = write!(
                h,
                "<div class=\"seg {name}\" style=\"left:{};width:{}\" title=\"{name}: {}\">{name}</div>",
                pct(at, axis),
                pct(ms, axis),
                human_ms(ms)
            );
        }
        at += ms;
    }
    mark(h, None);
    h.push_str("</div></div>");
    // One lane per worker.
    for (w, (start, len)) in e.workers.iter().zip(spans) {
        let end = end_name(w.end);
        let struck_here = e.fault.struck && e.fault.worker == Some(w.incarnation);
        let launch = if w.total_ms > 0 {
            format!(
                "{:.2}%",
                (w.start_ms as f64 * 100.0 / w.total_ms as f64).min(100.0)
            )
        } else {
            "0%".to_owned()
        };
        let _ = write!(
            h,
            "<div class=\"lane worker\" data-worker=\"{inc}\"><div class=\"lane-label\">worker {inc}<small>{end}</small></div><div class=\"track\">\
             <div class=\"bar end-{end}\" style=\"left:{};width:{}\" title=\"worker {inc}: browser up after {}, {end} after {}\">\
             <div class=\"launch\" style=\"width:{launch}\"></div><span class=\"bar-label\">up {} · {end} {}</span></div>",
            pct(start, axis),
            pct(len, axis),
            human_ms(w.start_ms),
            human_ms(w.total_ms),
            human_ms(w.start_ms),
            human_ms(w.total_ms),
            inc = w.incarnation,
        );
        if struck_here || (e.fault.struck && e.fault.worker.is_none()) {
            mark(h, Some(&format!("⚡ {}", e.fault.planned)));
        }
        h.push_str("</div></div>");
    }
    // The axis.
    h.push_str("<div class=\"axis\">");
    for q in 0..=4u64 {
        let _ = write!(
            h,
            "<span style=\"left:{}%\">{}</span>",
            q * 25,
            human_ms(axis * q / 4)
        );
    }
    h.push_str("</div>");
    let when = match (e.fault.struck, e.fault.at_ms) {
        (true, Some(ms)) => format!(
            "The red line is the fault, at {} of the trial.",
            human_ms(ms)
        ),
        (true, None) => "The fault struck; its time was not recorded.".to_owned(),
        (false, _) => "The fault never struck.".to_owned(),
    };
    let _ = write!(
        h,
        "<p class=\"tl-note\">{} Phases are laid end to end. Evidence records each worker's length, not its spawn time: a worker the fault crashed ends at the fault, the others start with their phase. The darker part of a bar is its browser launch.</p></div>",
        escape(&when)
    );
}
