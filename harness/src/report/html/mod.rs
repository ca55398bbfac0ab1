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

mod assets;
mod timeline;
mod trial;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::evidence::Evidence;
use crate::oracle::Invariant;

use super::{RunReport, TrialOutcome, TrialStatus, base64, human_ms};
use assets::{SCRIPT, STYLE};
use trial::trial_details;

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
    let (class, mark, why) = if !v.judged {
        ("na", "–", v.explanation.clone())
    } else if !v.held {
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

#[cfg(test)]
mod tests {
    use super::timeline::worker_spans;
    use super::trial::result_text;
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
        let e: Evidence = serde_json::from_str(include_str!("../testdata/evidence.json")).unwrap();
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
        let e: Evidence = serde_json::from_str(include_str!("../testdata/evidence.json")).unwrap();
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

    #[test]
    fn a_withheld_screenshot_is_named_and_never_inlined_even_when_a_file_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let mut e: Evidence =
            serde_json::from_str(include_str!("../testdata/evidence.json")).unwrap();
        // A PNG under the name a kept screenshot would have: the report must not read it.
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend_from_slice(b"pixels of a password");
        std::fs::write(dir.path().join("w1-after_click.png"), &png).unwrap();
        e.screenshot = Some(crate::fault::ScreenshotRef {
            file: "w1-after_click.png".to_owned(),
            sha256: "0".repeat(64),
        });
        e.screenshot_withheld =
            Some("not kept: the page showed the account's password in a field's value".into());
        let t = super::super::TrialOutcome::from_evidence(
            e,
            dir.path().join("evidence.json"),
            std::time::Duration::from_secs(31),
        );
        let page = render(&RunReport::new("r", vec![t]));
        assert!(!page.contains("<img"), "an image is inlined");
        assert!(!page.contains("data:image/png"), "an image is inlined");
        assert!(
            page.contains("withheld: not kept: the page showed the account&#39;s password in a field&#39;s value"),
            "the report does not say why"
        );
    }
}
