//! The HTML report: one self-contained file (inline CSS and JS, screenshots as `data:`
//! URIs, a Content-Security-Policy that allows no network at all), readable from a CI
//! artifact download.
//!
//! Per scenario, a matrix of its trials (boundary/variant or hazard) × the invariants, each
//! cell passed, failed, not struck (held, but the trial's fault never struck, so nothing was
//! tested), ignored with its reason, or errored. Then per trial its timeline, workers and
//! checkpoints, perturbation, verdicts, fault-point screenshot, redacted log tails and where
//! the time went. Buttons filter by verdict. Every string from evidence (page text, log
//! lines, explanations) is escaped.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::evidence::{Evidence, WorkerEnd, WorkerEvidence};
use crate::oracle::Invariant;
use crate::plan::FaultPoint;

use super::{RunReport, TrialOutcome, TrialStatus, base64, human_ms};

/// The largest screenshot inlined; a larger one is named, not shown.
const MAX_SCREENSHOT_BYTES: u64 = 8 * 1024 * 1024;

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// Writes the HTML report of `report` to `path` (its folder made if missing); returns
/// `path`. Fault-point screenshots are read from beside each trial's `evidence.json` and
/// inlined.
pub fn write_html(report: &RunReport, path: &Path) -> std::io::Result<PathBuf> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, render(report))?;
    Ok(path.to_owned())
}

/// `text` safe in HTML text and in quoted attribute values. Control characters other than
/// tab and newline become U+FFFD.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            '\r' => {}
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root{--pass:#1a7f37;--pass-bg:#dafbe1;--fail:#cf222e;--fail-bg:#ffebe9;--ign:#57606a;--ign-bg:#eaeef2;--ns:#9a6700;--ns-bg:#fff8c5;--err:#8250df;--err-bg:#fbefff;--line:#d0d7de;--muted:#57606a}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#fff;border-bottom:1px solid var(--line);padding:12px 20px;position:sticky;top:0;z-index:5}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:17px;margin:0 0 8px}
h4{font-size:13px;margin:14px 0 6px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
main{padding:16px 20px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.muted{color:var(--muted)}
.counts{display:flex;gap:8px;flex-wrap:wrap;margin:6px 0}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600}
.badge.passed{background:var(--pass-bg);color:var(--pass)}
.badge.failed{background:var(--fail-bg);color:var(--fail)}
.badge.ignored{background:var(--ign-bg);color:var(--ign)}
.badge.errored{background:var(--err-bg);color:var(--err)}
.filters button{font:inherit;border:1px solid var(--line);background:#fff;border-radius:6px;padding:3px 10px;cursor:pointer}
.filters button[aria-pressed=true]{background:#0969da;color:#fff;border-color:#0969da}
section.scenario{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px;margin:0 0 18px}
table{border-collapse:collapse}
table.matrix{font-size:12px;margin-bottom:6px}
table.matrix th,table.matrix td{border:1px solid var(--line);padding:3px 5px;text-align:center}
table.matrix thead th{font-weight:600;max-width:86px;vertical-align:bottom;word-break:break-word}
table.matrix tbody th{text-align:left;white-space:nowrap;font-weight:500}
td.cell.pass{background:var(--pass-bg);color:var(--pass)}
td.cell.fail{background:var(--fail-bg);color:var(--fail);font-weight:700}
td.cell.ignored{background:var(--ign-bg);color:var(--ign);text-align:left}
td.cell.not-struck{background:var(--ns-bg);color:var(--ns)}
td.cell.errored{background:var(--err-bg);color:var(--err);text-align:left}
td.cell.na{color:var(--muted)}
.legend{font-size:12px;color:var(--muted);margin:4px 0 12px}
.legend span{margin-right:12px}
details.trial{border:1px solid var(--line);border-radius:6px;margin:8px 0;background:#fff}
details.trial>summary{cursor:pointer;padding:6px 10px;list-style-position:inside}
details.trial[data-status=failed]>summary,details.trial[data-status=errored]>summary{background:var(--fail-bg)}
.trial-body{padding:4px 14px 12px}
.reason{white-space:pre-wrap;background:#fff8f8;border-left:3px solid var(--fail);padding:6px 10px;margin:8px 0}
.timeline{border:1px solid var(--line);border-radius:6px;padding:8px 10px;background:#fbfcfd}
.lane{display:flex;align-items:center;margin:5px 0}
.lane-label{width:120px;flex:none;font-size:12px}
.lane-label small{display:block;color:var(--muted)}
.track{position:relative;flex:1;height:24px;background:#f0f3f6;border-radius:4px}
.seg{position:absolute;top:0;bottom:0;font-size:11px;overflow:hidden;white-space:nowrap;padding:3px 4px;border-right:1px solid #fff;color:#1f2328}
.seg.setup{background:#d8dee4}.seg.scenario{background:#b6e3ff}.seg.recovery{background:#ccd6ff}.seg.oracle{background:#e6d4ff}.seg.cleanup{background:#d3f0d8}
.bar{position:absolute;top:3px;bottom:3px;background:#54aeff;border-radius:3px;overflow:hidden;min-width:2px}
.bar.end-crashed{background:#ff8182}.bar.end-timed_out,.bar.end-died{background:#d4a72c}
.bar .launch{position:absolute;left:0;top:0;bottom:0;background:rgba(0,0,0,.18)}
.bar .bar-label{position:relative;font-size:11px;padding:0 4px;white-space:nowrap;color:#0d1117}
.fault-mark{position:absolute;top:-3px;bottom:-3px;width:2px;background:var(--fail);z-index:2}
.fault-mark .flag{position:absolute;left:4px;top:-2px;font-size:11px;font-weight:700;color:var(--fail);white-space:nowrap;background:rgba(255,255,255,.85);padding:0 2px}
.axis{position:relative;height:16px;margin-left:120px;font-size:10px;color:var(--muted)}
.axis span{position:absolute;transform:translateX(-50%);white-space:nowrap}
.axis span:first-child{transform:none}.axis span:last-child{transform:translateX(-100%)}
.tl-note{font-size:11px;color:var(--muted);margin:4px 0 0}
ul.workers{list-style:none;padding:0;margin:0}
ul.workers li{margin:6px 0}
.cp{display:inline-block;border:1px solid var(--line);border-radius:4px;padding:0 5px;margin:1px 0;font:11px ui-monospace,monospace;background:#f6f8fa}
.cp.fault{border-color:var(--fail);color:var(--fail);background:var(--fail-bg);font-weight:700}
.cp.end-crashed,.cp.end-died,.cp.end-timed_out{border-color:var(--fail);color:var(--fail)}
.cp.end-finished{border-color:var(--pass);color:var(--pass)}
.arrow{color:var(--muted);margin:0 2px}
.effect{font-size:11px;color:var(--muted);margin-right:4px}
table.kv td,table.kv th,table.verdicts td,table.verdicts th{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top;font-size:12px}
table.verdicts tr.broke td{background:var(--fail-bg)}
td.held{color:var(--pass);font-weight:700}td.broke{color:var(--fail);font-weight:700}
img.shot{max-width:100%;border:1px solid var(--line);border-radius:4px;display:block}
pre.log{background:#0d1117;color:#e6edf3;padding:8px 10px;border-radius:6px;overflow:auto;max-height:260px;white-space:pre-wrap;word-break:break-word}
.stack{display:flex;height:14px;border-radius:3px;overflow:hidden;margin:4px 0 8px}
.stack div{height:100%}
.grid2{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:0 24px}
@media (max-width:900px){.grid2{grid-template-columns:minmax(0,1fr)}}
.evidence-path{font-size:12px;color:var(--muted);margin-top:10px;word-break:break-all}
"#;

const SCRIPT: &str = r#"
(function () {
  var buttons = document.querySelectorAll('button[data-show]');
  function show(filter) {
    document.body.setAttribute('data-filter', filter);
    buttons.forEach(function (b) {
      b.setAttribute('aria-pressed', String(b.getAttribute('data-show') === filter));
    });
    document.querySelectorAll('[data-status]').forEach(function (el) {
      var s = el.getAttribute('data-status');
      el.hidden = !(filter === 'all' || s === filter || (filter === 'failed' && s === 'errored'));
    });
    document.querySelectorAll('section.scenario').forEach(function (sec) {
      sec.hidden = !sec.querySelector('tr[data-status]:not([hidden])');
    });
  }
  buttons.forEach(function (b) {
    b.addEventListener('click', function () { show(b.getAttribute('data-show')); });
  });
  show('all');
})();
"#;

/// The whole page.
pub(crate) fn render(report: &RunReport) -> String {
    let c = report.counts();
    let mut h = String::with_capacity(64 * 1024);
    let title = format!("browser-fault report: {}", report.name);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body data-filter=\"all\">",
        escape(&title)
    );
    let _ = write!(
        h,
        "<header><h1>browser-fault report</h1><div class=\"muted\">run <code>{}</code> · {} trial(s) · {} of trial time</div>\
         <div class=\"counts\"><span class=\"badge passed\">{} passed</span><span class=\"badge failed\">{} failed</span>\
         <span class=\"badge errored\">{} errored</span><span class=\"badge ignored\">{} ignored</span></div>\
         <nav class=\"filters\" aria-label=\"filter by verdict\">\
         <button type=\"button\" data-show=\"all\" aria-pressed=\"true\">All ({})</button> \
         <button type=\"button\" data-show=\"failed\" aria-pressed=\"false\">Failed ({})</button> \
         <button type=\"button\" data-show=\"passed\" aria-pressed=\"false\">Passed ({})</button> \
         <button type=\"button\" data-show=\"ignored\" aria-pressed=\"false\">Ignored ({})</button></nav></header>\n<main>",
        escape(&report.name),
        c.total,
        human_ms(u64::try_from(report.duration().as_millis()).unwrap_or(u64::MAX)),
        c.passed,
        c.failed,
        c.errored,
        c.ignored,
        c.total,
        c.failed + c.errored,
        c.passed,
        c.ignored,
    );
    if report.trials.is_empty() {
        h.push_str("<p class=\"muted\">No trial in this report.</p>\n");
    }
    let mut index = 0usize;
    for (s, (scenario, trials)) in report.by_scenario().into_iter().enumerate() {
        let first = index;
        index += trials.len();
        scenario_section(&mut h, s, scenario, &trials, first);
    }
    let _ = writeln!(h, "</main>\n<script>{SCRIPT}</script>\n</body></html>");
    h
}

fn scenario_section(
    h: &mut String,
    s: usize,
    scenario: &str,
    trials: &[&TrialOutcome],
    first: usize,
) {
    let _ = write!(
        h,
        "<section class=\"scenario\" id=\"s{s}\" data-scenario=\"{}\"><h2>Scenario <code>{}</code></h2>",
        escape(scenario),
        escape(scenario)
    );
    // The matrix: trials × invariants.
    h.push_str("<table class=\"matrix\"><thead><tr><th>trial</th><th>fault</th>");
    for inv in Invariant::ALL {
        let _ = write!(
            h,
            "<th title=\"{}\">{}</th>",
            escape(inv.as_str()),
            escape(inv.as_str()).replace('_', "_<wbr>")
        );
    }
    h.push_str("</tr></thead><tbody>\n");
    for (i, t) in trials.iter().enumerate() {
        matrix_row(h, first + i, t);
    }
    h.push_str("</tbody></table>\n");
    h.push_str(
        "<div class=\"legend\"><span>✓ held</span><span>✗ broke</span>\
         <span>○ not struck: held, but the fault never struck, so nothing was tested</span>\
         <span>– not judged</span><span>ignored / errored: with the reason</span></div>\n",
    );
    for (i, t) in trials.iter().enumerate() {
        trial_details(h, first + i, t);
    }
    h.push_str("</section>\n");
}

fn matrix_row(h: &mut String, id: usize, t: &TrialOutcome) {
    let status = t.status.as_str();
    let label = match t.plan_label() {
        "" => t.name.as_str(),
        l => l,
    };
    let _ = write!(
        h,
        "<tr data-status=\"{status}\" data-trial=\"{}\"><th><a href=\"#t{id}\">{}</a> <span class=\"badge {status}\">{status}</span></th>",
        escape(&t.name),
        escape(label)
    );
    let span = Invariant::ALL.len() + 1;
    match (&t.status, &t.evidence) {
        (TrialStatus::Ignored { reason }, _) => {
            let _ = write!(
                h,
                "<td class=\"cell ignored\" colspan=\"{span}\">ignored: {}</td>",
                escape(reason)
            );
        }
        (TrialStatus::Errored { message }, None) => {
            let _ = write!(
                h,
                "<td class=\"cell errored\" colspan=\"{span}\">errored: {}</td>",
                escape(message)
            );
        }
        (_, None) => {
            let _ = write!(
                h,
                "<td class=\"cell na\" colspan=\"{span}\">no evidence{}</td>",
                t.status
                    .reason()
                    .map(|r| format!(": {}", escape(r)))
                    .unwrap_or_default()
            );
        }
        (_, Some(e)) => {
            let fault = if e.fault.struck {
                match e.fault.at_ms {
                    Some(ms) => format!(
                        "<td class=\"cell pass\" title=\"{}\">⚡ {}</td>",
                        escape(&e.fault.planned),
                        human_ms(ms)
                    ),
                    None => format!(
                        "<td class=\"cell pass\" title=\"{}\">⚡</td>",
                        escape(&e.fault.planned)
                    ),
                }
            } else {
                format!(
                    "<td class=\"cell not-struck\" title=\"{}\">not struck</td>",
                    escape(
                        e.fault
                            .instead
                            .as_deref()
                            .unwrap_or("the fault never struck")
                    )
                )
            };
            h.push_str(&fault);
            for inv in Invariant::ALL {
                matrix_cell(h, e, inv);
            }
        }
    }
    h.push_str("</tr>\n");
}

fn matrix_cell(h: &mut String, e: &Evidence, inv: Invariant) {
    let Some(v) = e.verdicts.iter().find(|v| v.invariant == inv) else {
        let _ = write!(
            h,
            "<td class=\"cell na\" data-invariant=\"{}\" title=\"not judged\">–</td>",
            inv.as_str()
        );
        return;
    };
    let (class, mark, why) = if !v.held {
        ("fail", "✗", v.explanation.clone())
    } else if !e.fault.struck && inv != Invariant::FaultStruck {
        (
            "not-struck",
            "○",
            format!(
                "held, but the fault never struck (nothing was tested): {}",
                v.explanation
            ),
        )
    } else {
        ("pass", "✓", v.explanation.clone())
    };
    let _ = write!(
        h,
        "<td class=\"cell {class}\" data-invariant=\"{}\" title=\"{}: {}\">{mark}</td>",
        inv.as_str(),
        inv.as_str(),
        escape(&why)
    );
}

fn trial_details(h: &mut String, id: usize, t: &TrialOutcome) {
    let status = t.status.as_str();
    let open = if t.status.is_failure() { " open" } else { "" };
    let _ = write!(
        h,
        "<details class=\"trial\" id=\"t{id}\" data-status=\"{status}\" data-trial=\"{}\"{open}>\
         <summary><span class=\"badge {status}\">{status}</span> <code>{}</code> <span class=\"muted\">{}</span>",
        escape(&t.name),
        escape(&t.name),
        human_ms(u64::try_from(t.duration.as_millis()).unwrap_or(u64::MAX))
    );
    if let Some(e) = &t.evidence {
        let _ = write!(
            h,
            " <span class=\"muted\">· {}</span>",
            escape(&fault_summary(e))
        );
    }
    h.push_str("</summary><div class=\"trial-body\">\n");
    if let Some(reason) = t.status.reason() {
        let _ = writeln!(h, "<div class=\"reason\">{}</div>", escape(reason));
    }
    if let Some(e) = &t.evidence {
        h.push_str("<h4>Timeline</h4>");
        timeline(h, e);
        h.push_str("<h4>Workers and checkpoints</h4>");
        workers(h, e);
        h.push_str("<div class=\"grid2\"><div><h4>Perturbation</h4>");
        perturbation(h, e);
        h.push_str("<h4>Where the time went</h4>");
        durations(h, e);
        h.push_str("</div><div><h4>Verdicts</h4>");
        verdicts(h, e);
        h.push_str("<h4>Ledger, cleanup, warnings</h4>");
        ledger(h, e);
        h.push_str("</div></div><div class=\"grid2\"><div><h4>Fault-point screenshot</h4>");
        screenshot(h, t);
        h.push_str("</div><div><h4>Log tails (redacted)</h4>");
        logs(h, e);
        h.push_str("</div></div>");
    }
    if let Some(p) = &t.evidence_path {
        let _ = write!(
            h,
            "<div class=\"evidence-path\">evidence: <code>{}</code></div>",
            escape(&p.display().to_string())
        );
    }
    h.push_str("</div></details>\n");
}

fn fault_summary(e: &Evidence) -> String {
    let f = &e.fault;
    if !f.struck {
        return format!("{}: did not strike", f.planned);
    }
    let who = f.worker.map(|w| format!(" worker {w}")).unwrap_or_default();
    match f.at_ms {
        Some(ms) => format!("{}: struck{who} at {}", f.planned, human_ms(ms)),
        None => format!("{}: struck{who}", f.planned),
    }
}

/// Where each worker sits on the trial's clock, in ms from the trial's start. Evidence has
/// each worker's length, not its spawn time: a worker the fault crashed ends where the fault
/// struck; otherwise the first worker(s) start when setup ends, the recovery worker when the
/// scenario phase ends, and a worker that arrived mid-task so that it ends with that phase.
fn worker_spans(e: &Evidence) -> Vec<(u64, u64)> {
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

fn pct(x: u64, of: u64) -> String {
    format!("{:.2}%", (x as f64 * 100.0 / of.max(1) as f64).min(100.0))
}

fn end_name(end: WorkerEnd) -> &'static str {
    match end {
        WorkerEnd::Finished => "finished",
        WorkerEnd::Crashed => "crashed",
        WorkerEnd::TimedOut => "timed_out",
        WorkerEnd::Died => "died",
    }
}

fn timeline(h: &mut String, e: &Evidence) {
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

/// A worker's result as a short text: `ok: unknown`, `err: safe_stop (wrong_account)`.
fn result_text(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::String(s) => s.clone(),
        Value::Object(m) if m.len() == 1 => {
            let (k, v) = m.iter().next().expect("one entry");
            format!("{k}: {}", result_text(v))
        }
        Value::Object(m) if m.contains_key("type") => {
            let ty = m.get("type").map(result_text).unwrap_or_default();
            match m.get("reason") {
                Some(r) => format!("{ty} ({})", result_text(r)),
                None => ty,
            }
        }
        Value::Null => "no result".to_owned(),
        other => other.to_string(),
    }
}

fn worker_line(h: &mut String, e: &Evidence, w: &WorkerEvidence) {
    let end = end_name(w.end);
    let _ = write!(h, "<li><b>worker {}</b> ", w.incarnation);
    let mut facts = Vec::new();
    if let Some(b) = w.armed {
        facts.push(format!("armed at {b}"));
    }
    facts.push(format!("browser up after {}", human_ms(w.start_ms)));
    facts.push(format!("{end} after {}", human_ms(w.total_ms)));
    let result = serde_json::to_value(w.result).unwrap_or_default();
    facts.push(format!("result: {}", result_text(&result)));
    let _ = write!(
        h,
        "<span class=\"muted\">{}</span><br>",
        escape(&facts.join(" · "))
    );
    let steps: Vec<_> = e
        .checkpoint_trace
        .iter()
        .filter(|s| s.incarnation == w.incarnation)
        .collect();
    let mut effect: Option<&str> = None;
    let mut first = true;
    for s in steps {
        if effect != Some(s.effect.as_str()) {
            let _ = write!(h, " <span class=\"effect\">{}:</span>", escape(&s.effect));
            effect = Some(&s.effect);
            first = true;
        }
        if !first {
            h.push_str("<span class=\"arrow\">→</span>");
        }
        first = false;
        let from = s.from.map(|c| c.as_str()).unwrap_or("(intent)");
        let _ = write!(
            h,
            "<span class=\"cp\" title=\"{}: {from} → {}\">{}</span>",
            escape(&s.effect),
            s.to.as_str(),
            s.to.as_str()
        );
    }
    if let Some(b) = w.struck {
        let _ = write!(
            h,
            "<span class=\"arrow\">→</span><span class=\"cp fault\">⚡ fault at {b}</span>"
        );
    }
    let _ = write!(
        h,
        "<span class=\"arrow\">→</span><span class=\"cp end-{end}\">{end}</span>"
    );
    for v in &w.verified {
        let _ = write!(
            h,
            "<br><span class=\"muted\">verified <code>{}</code> before TARGET_VERIFIED: {}</span>",
            escape(&v.effect),
            if v.checked.is_empty() {
                "nothing checked".to_owned()
            } else {
                escape(&v.checked.join(", "))
            }
        );
    }
    if !w.untrusted_profile.is_empty() {
        let _ = write!(
            h,
            "<br><span class=\"muted\">untrusted profile: {}</span>",
            escape(&w.untrusted_profile.join("; "))
        );
    }
    if !w.tampered.is_empty() {
        let _ = write!(
            h,
            "<br><span class=\"muted\">locks tampered with: {}</span>",
            escape(&w.tampered.join("; "))
        );
    }
    h.push_str("</li>");
}

fn workers(h: &mut String, e: &Evidence) {
    h.push_str("<ul class=\"workers\">");
    for w in &e.workers {
        worker_line(h, e, w);
    }
    h.push_str("</ul>");
}

fn perturbation(h: &mut String, e: &Evidence) {
    let f = &e.fault;
    let plan = match (e.boundary, e.variant, e.hazard) {
        (Some(b), Some(v), _) => format!("boundary {b}, variant {}", v.as_str()),
        (Some(b), None, _) => format!("boundary {b}"),
        (None, _, Some(hz)) => format!("hazard {hz}"),
        _ => "-".to_owned(),
    };
    let rows = [
        ("plan", plan),
        ("crash mode", e.crash_mode.to_string()),
        ("planned", f.planned.clone()),
        ("struck", if f.struck { "yes" } else { "no" }.to_owned()),
        (
            "worker",
            f.worker
                .map(|w| w.to_string())
                .unwrap_or_else(|| "-".into()),
        ),
        (
            "at",
            f.at_ms
                .map(|ms| format!("{} from the trial's start", human_ms(ms)))
                .unwrap_or_else(|| "-".into()),
        ),
        ("instead", f.instead.clone().unwrap_or_else(|| "-".into())),
        (
            "step",
            e.workers
                .iter()
                .find_map(|w| w.struck_step.as_ref())
                .map(|s| format!("{} ({})", s.n, s.label))
                .unwrap_or_else(|| "-".into()),
        ),
        (
            "schedule",
            if f.schedule.is_empty() {
                "-".to_owned()
            } else {
                f.schedule
                    .iter()
                    .map(|s| {
                        format!(
                            "worker {}: {} ({})",
                            s.worker,
                            s.at,
                            if s.struck { "struck" } else { "did not strike" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            },
        ),
    ];
    h.push_str("<table class=\"kv perturbation\">");
    for (k, v) in rows {
        let _ = write!(h, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    h.push_str("</table>");
}

fn verdicts(h: &mut String, e: &Evidence) {
    h.push_str(
        "<table class=\"verdicts\"><tr><th>invariant</th><th></th><th>explanation</th></tr>",
    );
    for v in &e.verdicts {
        let (row, cell, mark) = if v.held {
            ("held", "held", "held")
        } else {
            ("broke", "broke", "BROKE")
        };
        let _ = write!(
            h,
            "<tr class=\"{row}\" data-invariant=\"{inv}\"><td><code>{inv}</code></td><td class=\"{cell}\">{mark}</td><td>{}</td></tr>",
            escape(&v.explanation),
            inv = v.invariant.as_str()
        );
    }
    h.push_str("</table>");
}

fn screenshot(h: &mut String, t: &TrialOutcome) {
    let Some(path) = t.screenshot_path() else {
        h.push_str(
            "<p class=\"muted\">none (no fault point was crossed with a screen to take)</p>",
        );
        return;
    };
    let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_SCREENSHOT_BYTES);
    match std::fs::read(&path) {
        Ok(png) if small && png.starts_with(PNG_SIGNATURE) => {
            let file = path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let _ = write!(
                h,
                "<img class=\"shot\" alt=\"fault-point screenshot {}\" src=\"data:image/png;base64,{}\">",
                escape(&file),
                base64::encode(&png)
            );
        }
        _ => {
            let _ = write!(
                h,
                "<p class=\"muted\">{} is missing, too large or not a PNG</p>",
                escape(&path.display().to_string())
            );
        }
    }
}

fn logs(h: &mut String, e: &Evidence) {
    for w in &e.workers {
        let _ = write!(
            h,
            "<details class=\"log\"{}><summary>worker {}</summary><pre class=\"log\">{}</pre></details>",
            if w.end == WorkerEnd::Finished {
                ""
            } else {
                " open"
            },
            w.incarnation,
            escape(&w.log_tail)
        );
    }
}

fn durations(h: &mut String, e: &Evidence) {
    let d = &e.durations;
    let total = d.total_ms.max(1);
    let phases = [
        ("setup", d.setup_ms, "#d8dee4"),
        ("scenario", d.scenario_ms, "#b6e3ff"),
        ("recovery", d.recovery_ms, "#ccd6ff"),
        ("oracle", d.oracle_ms, "#e6d4ff"),
        ("cleanup", d.cleanup_ms, "#d3f0d8"),
    ];
    h.push_str("<div class=\"stack\">");
    for (name, ms, color) in phases {
        if ms > 0 {
            let _ = write!(
                h,
                "<div style=\"width:{};background:{color}\" title=\"{name}: {}\"></div>",
                pct(ms, total),
                human_ms(ms)
            );
        }
    }
    h.push_str("</div><table class=\"kv durations\">");
    let chromium = d.browser_launch_ms + d.browser_quit_ms + d.browser_steps_ms;
    let rows: [(&str, u64, &str); 12] = [
        ("setup", d.setup_ms, "site, journal, profile"),
        (
            "scenario",
            d.scenario_ms,
            "the first worker(s), spawn to crash or end",
        ),
        ("recovery", d.recovery_ms, "the recovery worker"),
        ("oracle", d.oracle_ms, "collecting facts and judging"),
        ("cleanup", d.cleanup_ms, "removing profiles and folders"),
        ("total", d.total_ms, "the whole trial"),
        (
            "worker start",
            d.worker_start_ms,
            "spawn to a running browser, summed",
        ),
        (
            "browser launch",
            d.browser_launch_ms,
            "chromedriver and Chromium up, summed",
        ),
        (
            "browser steps",
            d.browser_steps_ms,
            "inside WebDriver commands, summed",
        ),
        ("browser quit", d.browser_quit_ms, "summed"),
        ("Chromium, all", chromium, "launch + steps + quit"),
        (
            "peak memory",
            e.memory.worker_peak_rss_kb,
            "largest worker, KiB (Chromium excluded)",
        ),
    ];
    for (k, v, what) in rows {
        let shown = if k == "peak memory" {
            format!("{v} KiB")
        } else {
            human_ms(v)
        };
        let _ = write!(
            h,
            "<tr><th>{k}</th><td>{shown}</td><td class=\"muted\">{what}</td></tr>"
        );
    }
    h.push_str("</table>");
}

fn ledger(h: &mut String, e: &Evidence) {
    h.push_str("<table class=\"kv\">");
    let mut row = |k: &str, v: String| {
        let _ = write!(h, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    };
    row(
        "ledger",
        format!(
            "{} effect(s); accounts [{}]; objects [{}]",
            e.ledger.effects,
            e.ledger.accounts.join(", "),
            e.ledger.objects.join(", ")
        ),
    );
    row(
        "cleanup",
        format!(
            "{}; {}",
            if e.profile_cleaned {
                "every profile removed, with proof"
            } else {
                "cleanup NOT proven"
            },
            e.cleanup
                .iter()
                .map(|c| format!("{}: {}", c.profile, c.outcome.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    row(
        "leaks",
        if e.leaks.is_empty() {
            "none".to_owned()
        } else {
            e.leaks
                .iter()
                .map(|l| {
                    format!(
                        "{} (by {}{})",
                        l.profile,
                        l.created_by,
                        if l.abandoned { ", abandoned" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        },
    );
    row(
        "warnings",
        if e.warnings.is_empty() {
            "none".to_owned()
        } else {
            e.warnings.join("; ")
        },
    );
    h.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_control_characters() {
        assert_eq!(
            escape("<script>a&b</script> \"x\" 'y'\u{1b}[31m\r\n"),
            "&lt;script&gt;a&amp;b&lt;/script&gt; &quot;x&quot; &#39;y&#39;\u{FFFD}[31m\n"
        );
    }

    #[test]
    fn a_worker_result_reads_as_words() {
        let v = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        assert_eq!(result_text(&v(r#"{"ok":"unknown"}"#)), "ok: unknown");
        assert_eq!(
            result_text(&v(
                r#"{"err":{"type":"safe_stop","reason":"wrong_account"}}"#
            )),
            "err: safe_stop (wrong_account)"
        );
        assert_eq!(result_text(&v("null")), "no result");
    }

    #[test]
    fn the_crashed_worker_ends_at_the_fault_and_the_recovery_starts_after_the_scenario() {
        let e: Evidence = serde_json::from_str(include_str!("testdata/evidence.json")).unwrap();
        let spans = worker_spans(&e);
        let d = &e.durations;
        // Worker 1 crashed where the fault struck.
        let at = e.fault.at_ms.unwrap();
        assert_eq!(
            spans[0],
            (at - e.workers[0].total_ms, e.workers[0].total_ms)
        );
        assert_eq!(
            spans[1],
            (d.setup_ms + d.scenario_ms, e.workers[1].total_ms)
        );
    }

    #[test]
    fn the_page_loads_nothing_from_anywhere() {
        let e: Evidence = serde_json::from_str(include_str!("testdata/evidence.json")).unwrap();
        let t = super::super::TrialOutcome::from_evidence(
            e,
            PathBuf::from("/nonexistent/evidence.json"),
            std::time::Duration::from_secs(31),
        );
        let page = render(&RunReport::new("r", vec![t]));
        for needle in ["http:", "https:", "src=\"//", "<link", "@import", "url("] {
            assert!(!page.contains(needle), "the page holds {needle}");
        }
        assert!(page.contains("default-src 'none'"));
    }
}
