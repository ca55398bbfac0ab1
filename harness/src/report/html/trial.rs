//! One trial's details: its workers and checkpoints, perturbation, verdicts, screenshot,
//! logs, where the time went, and the site's ledger.

use std::fmt::Write as _;

use crate::evidence::{Evidence, WorkerEnd, WorkerEvidence};

use super::timeline::{end_name, pct, timeline};
use super::{TrialOutcome, base64, escape, human_ms};

/// The largest screenshot inlined; a larger one is named, not shown.
const MAX_SCREENSHOT_BYTES: u64 = 8 * 1024 * 1024;

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

pub(super) fn trial_details(h: &mut String, id: usize, t: &TrialOutcome) {
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

/// A worker's result as a short text: `ok: unknown`, `err: safe_stop (wrong_account)`.
pub(super) fn result_text(value: &serde_json::Value) -> String {
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
    if !w.scenario_began {
        facts.push("its scenario never began: the fault struck the harness's code".to_owned());
    }
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
        let (row, cell, mark) = if !v.judged {
            ("not-judged", "na", "not judged")
        } else if v.held {
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
    if let Some(why) = t
        .evidence
        .as_ref()
        .and_then(|e| e.screenshot_withheld.as_ref())
    {
        let _ = write!(h, "<p class=\"muted\">withheld: {}</p>", escape(why));
        return;
    }
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
