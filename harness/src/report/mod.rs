//! Reports of a run: JUnit XML, a JSON summary and one self-contained HTML file, built from
//! the trials' outcomes and their evidence; the merge of several shards' reports; and a
//! one-line progress display for long runs.
//!
//! # Writing the reports of a run
//!
//! Collect one [`TrialOutcome`] per trial (from its [`Evidence`], or as ignored with its
//! reason, or as errored when it could not run), make a [`RunReport`] of them and write it:
//!
//! ```no_run
//! use std::time::Duration;
//! use browser_fault::evidence::Evidence;
//! use browser_fault::report::{RunReport, TrialOutcome, write_all};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::path::PathBuf::from("target/browser-fault/evidence/send__after_login/evidence.json");
//! let evidence: Evidence = browser_fault::serde_json::from_str(&std::fs::read_to_string(&path)?)?;
//! let outcomes = vec![
//!     TrialOutcome::from_evidence(evidence, path, Duration::from_secs(31)),
//!     TrialOutcome::ignored("send::hazard::stale_tab", "a page only the bundled site shows"),
//! ];
//! let report = RunReport::new("suites-shard-1", outcomes);
//! let written = write_all(&report, "target/browser-fault/reports".as_ref(), "suites-shard-1")?;
//! eprintln!("browser-fault: reports: {}", written);
//! # Ok(())
//! # }
//! ```
//!
//! [`write_junit`], [`write_json`] and [`write_html`] write one file each.
//!
//! # The JSON summary
//!
//! [`write_json`] writes [`Summary`]: schema `browser-fault-report`, version
//! [`SCHEMA_VERSION`]. Its JSON Schema is [`JSON_SCHEMA`]; in short:
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `schema` | string | always `"browser-fault-report"` |
//! | `schema_version` | integer | `1`; a reader refuses a version it does not know |
//! | `name` | string | the run (test binary, shard) or `merged` |
//! | `generated_unix_ms` | integer | when the file was written |
//! | `duration_ms` | integer | the trials' durations, summed |
//! | `counts` | object | `total`, `passed`, `failed`, `ignored`, `errored`: integers |
//! | `trials` | array | one object per trial, below |
//!
//! Each trial:
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `name` | string | the stable trial name (`scenario::boundary[::variant]`) |
//! | `scenario` | string | the scenario |
//! | `status` | string | `passed`, `failed`, `ignored` or `errored` |
//! | `reason` | string or null | why it failed, was ignored or errored |
//! | `duration_ms` | integer | how long it took |
//! | `boundary`, `variant`, `hazard` | string or null | its fault plan |
//! | `fault_planned` | string or null | what the trial meant to do (`crash at after_click`) |
//! | `fault_struck` | boolean or null | whether it happened (null: no evidence) |
//! | `fault_at_ms` | integer or null | when, in ms from the trial's start |
//! | `verdicts` | array | `{ "invariant": string, "held": boolean, "explanation": string }` |
//! | `evidence` | string or null | its `evidence.json`: relative to the summary's folder when below it |
//! | `before_scenario` | array of strings, absent when empty | its workers that never began their scenario, and where the harness stopped them (the fault struck the harness's own code there) |
//!
//! # Merging shards
//!
//! [`merge_dirs`] (and the `browser-fault-report merge OUT DIR...` binary) reads each
//! folder with [`RunReport::from_evidence_dir`]: every JSON summary in it (which keeps
//! ignored and errored trials) and every `evidence.json` that no summary names. Then
//! [`RunReport::merge`] keeps each trial once (its worst outcome, when shards disagree) and
//! the HTML, JUnit and JSON of the whole are written into `OUT`.

#![warn(missing_docs)]

mod base64;
mod html;
mod json;
mod junit;
mod progress;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::evidence::Evidence;
use crate::plan::Boundary;

pub use html::write_html;
pub use json::{
    JSON_SCHEMA, SCHEMA, SCHEMA_VERSION, Summary, SummaryCounts, TrialSummary, VerdictSummary,
    read_json, write_json,
};
pub use junit::write_junit;
pub use progress::{Progress, progress_line};

/// How a trial ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum TrialStatus {
    /// Every invariant held and cleanup was proven.
    Passed,
    /// It ran, and an invariant broke (or its evidence differs from its snapshot).
    Failed {
        /// What broke.
        message: String,
    },
    /// It did not run, on purpose.
    Ignored {
        /// Why (the site cannot make its fault, …).
        reason: String,
    },
    /// It could not run at all (setup failed, a worker could not be spawned, …).
    Errored {
        /// Why.
        message: String,
    },
}

impl TrialStatus {
    /// `passed`, `failed`, `ignored` or `errored`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            TrialStatus::Passed => "passed",
            TrialStatus::Failed { .. } => "failed",
            TrialStatus::Ignored { .. } => "ignored",
            TrialStatus::Errored { .. } => "errored",
        }
    }

    /// Why it failed, was ignored or errored; `None` when it passed.
    pub fn reason(&self) -> Option<&str> {
        match self {
            TrialStatus::Passed => None,
            TrialStatus::Failed { message } | TrialStatus::Errored { message } => Some(message),
            TrialStatus::Ignored { reason } => Some(reason),
        }
    }

    /// The status from its name and reason, as a JSON summary holds them.
    pub fn from_parts(status: &str, reason: Option<String>) -> Option<TrialStatus> {
        let reason = reason.unwrap_or_default();
        Some(match status {
            "passed" => TrialStatus::Passed,
            "failed" => TrialStatus::Failed { message: reason },
            "ignored" => TrialStatus::Ignored { reason },
            "errored" => TrialStatus::Errored { message: reason },
            _ => return None,
        })
    }

    /// Whether it counts against the run (failed or errored).
    pub const fn is_failure(&self) -> bool {
        matches!(
            self,
            TrialStatus::Failed { .. } | TrialStatus::Errored { .. }
        )
    }

    /// Which of two outcomes of one trial a merge keeps: the higher.
    const fn severity(&self) -> u8 {
        match self {
            TrialStatus::Ignored { .. } => 0,
            TrialStatus::Passed => 1,
            TrialStatus::Failed { .. } => 2,
            TrialStatus::Errored { .. } => 3,
        }
    }
}

impl fmt::Display for TrialStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One trial of a run, as a report shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrialOutcome {
    /// The stable trial name (`scenario::boundary[::variant]`, `scenario::hazard::name`).
    pub name: String,
    /// How it ended.
    pub status: TrialStatus,
    /// How long it took.
    pub duration: Duration,
    /// Its `evidence.json`, when it wrote one.
    pub evidence_path: Option<PathBuf>,
    /// Its evidence, when there is one.
    pub evidence: Option<Evidence>,
}

impl TrialOutcome {
    /// A trial that ran: passed or failed as its evidence says, the failure message
    /// listing the broken invariants with their explanations.
    pub fn from_evidence(evidence: Evidence, evidence_path: PathBuf, duration: Duration) -> Self {
        let status = if evidence.passed {
            TrialStatus::Passed
        } else {
            TrialStatus::Failed {
                message: failure_message(&evidence),
            }
        };
        TrialOutcome {
            name: evidence.trial.clone(),
            status,
            duration,
            evidence_path: Some(evidence_path),
            evidence: Some(evidence),
        }
    }

    /// A trial that did not run, and why.
    pub fn ignored(name: impl Into<String>, reason: impl Into<String>) -> Self {
        TrialOutcome {
            name: name.into(),
            status: TrialStatus::Ignored {
                reason: reason.into(),
            },
            duration: Duration::ZERO,
            evidence_path: None,
            evidence: None,
        }
    }

    /// A trial that could not run, and why.
    pub fn errored(
        name: impl Into<String>,
        message: impl Into<String>,
        duration: Duration,
    ) -> Self {
        TrialOutcome {
            name: name.into(),
            status: TrialStatus::Errored {
                message: message.into(),
            },
            duration,
            evidence_path: None,
            evidence: None,
        }
    }

    /// The same trial with another status: a trial whose verdicts held but whose evidence
    /// differs from its snapshot is `Failed` with the runner's message.
    pub fn with_status(mut self, status: TrialStatus) -> Self {
        self.status = status;
        self
    }

    /// The scenario: the evidence's, else the name up to its first `::`.
    pub fn scenario(&self) -> &str {
        match &self.evidence {
            Some(e) => &e.scenario,
            None => self.name.split("::").next().unwrap_or(&self.name),
        }
    }

    /// The trial's name without its scenario: `after_click::lost`, `hazard::stale_tab`.
    pub fn plan_label(&self) -> &str {
        let scenario = self.scenario();
        self.name
            .strip_prefix(scenario)
            .and_then(|rest| rest.strip_prefix("::"))
            .unwrap_or(&self.name)
    }

    /// The fault-point screenshot's file, beside `evidence.json`: only a plain file name is
    /// followed (never a path out of the evidence folder).
    pub fn screenshot_path(&self) -> Option<PathBuf> {
        let file = &self.evidence.as_ref()?.screenshot.as_ref()?.file;
        let plain = !file.is_empty() && !file.contains(['/', '\\']) && file != ".." && file != ".";
        let dir = self.evidence_path.as_ref()?.parent()?;
        plain.then(|| dir.join(file))
    }

    /// The order of trials in a scenario: boundaries in lifecycle order, then the rest
    /// (hazards), then by name.
    fn order_key(&self) -> (usize, String) {
        let first = self.plan_label().split("::").next().unwrap_or_default();
        let at = first
            .parse::<Boundary>()
            .ok()
            .and_then(|b| Boundary::ALL.iter().position(|x| *x == b))
            .unwrap_or(Boundary::ALL.len());
        (at, self.name.clone())
    }
}

/// The failure message of a trial's evidence: each broken invariant with its explanation,
/// one per line.
pub fn failure_message(evidence: &Evidence) -> String {
    let broken: Vec<String> = evidence
        .broken()
        .map(|v| format!("invariant `{}` broke: {}", v.invariant, v.explanation))
        .collect();
    if broken.is_empty() {
        if evidence.profile_cleaned {
            "the trial failed with every invariant held".to_owned()
        } else {
            "the profile cleanup was not proven".to_owned()
        }
    } else {
        broken.join("\n")
    }
}

/// Trial counts of a report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Every trial.
    pub total: usize,
    /// Passed.
    pub passed: usize,
    /// Failed.
    pub failed: usize,
    /// Ignored.
    pub ignored: usize,
    /// Errored.
    pub errored: usize,
}

/// The outcomes of one run (a test binary, a shard) or of several merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunReport {
    /// The run's name: the test binary and shard, or `merged`.
    pub name: String,
    /// Its trials, in the order they are shown.
    pub trials: Vec<TrialOutcome>,
}

impl RunReport {
    /// A report of `trials`, ordered by scenario, then boundary in lifecycle order.
    pub fn new(name: impl Into<String>, mut trials: Vec<TrialOutcome>) -> Self {
        sort_trials(&mut trials);
        RunReport {
            name: name.into(),
            trials,
        }
    }

    /// How many trials passed, failed, were ignored, errored.
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            total: self.trials.len(),
            ..Counts::default()
        };
        for t in &self.trials {
            match t.status {
                TrialStatus::Passed => c.passed += 1,
                TrialStatus::Failed { .. } => c.failed += 1,
                TrialStatus::Ignored { .. } => c.ignored += 1,
                TrialStatus::Errored { .. } => c.errored += 1,
            }
        }
        c
    }

    /// The trials' durations, summed.
    pub fn duration(&self) -> Duration {
        self.trials.iter().map(|t| t.duration).sum()
    }

    /// The scenarios, in the order of their first trial, each with its trials.
    pub fn by_scenario(&self) -> Vec<(&str, Vec<&TrialOutcome>)> {
        let mut out: Vec<(&str, Vec<&TrialOutcome>)> = Vec::new();
        for t in &self.trials {
            match out.iter_mut().find(|(s, _)| *s == t.scenario()) {
                Some((_, list)) => list.push(t),
                None => out.push((t.scenario(), vec![t])),
            }
        }
        out
    }

    /// Rebuilds a report from a folder (searched recursively, symlinks not followed):
    /// every JSON summary written by [`write_json`] in it, each trial with its evidence
    /// loaded from the path the summary names (or, when that path is gone, the
    /// `evidence.json` of the same trial found in the folder); then every `evidence.json`
    /// that no summary names, as passed or failed by its verdicts. An `evidence.json` that
    /// cannot be read is an errored trial named after its folder.
    pub fn from_evidence_dir(dir: &Path) -> std::io::Result<RunReport> {
        let mut found = Found::default();
        walk(dir, &mut found)?;
        // Trial name → its evidence file, for summaries whose paths moved with an artifact.
        let mut evidence_files: BTreeMap<String, (PathBuf, Result<Evidence, ReadEvidenceError>)> =
            BTreeMap::new();
        let mut unreadable: Vec<TrialOutcome> = Vec::new();
        for path in found.evidence {
            match read_evidence(&path) {
                Ok(e) => {
                    evidence_files.insert(e.trial.clone(), (path, Ok(e)));
                }
                Err(why) => {
                    let name = path
                        .parent()
                        .and_then(Path::file_name)
                        .map(|n| n.to_string_lossy().replace("__", "::"))
                        .unwrap_or_else(|| path.display().to_string());
                    let mut t = TrialOutcome::errored(
                        name,
                        format!("its evidence could not be read: {why}"),
                        Duration::ZERO,
                    );
                    t.evidence_path = Some(path);
                    unreadable.push(t);
                }
            }
        }
        let mut trials: Vec<TrialOutcome> = Vec::new();
        let mut named: std::collections::BTreeSet<String> = Default::default();
        for summary_path in &found.summaries {
            let Ok(summary) = read_json(summary_path) else {
                continue;
            };
            let base = summary_path.parent().unwrap_or(Path::new("."));
            for t in summary.trials {
                named.insert(t.name.clone());
                let status = TrialStatus::from_parts(&t.status, t.reason.clone()).unwrap_or(
                    TrialStatus::Errored {
                        message: format!("unknown status `{}` in its summary", t.status),
                    },
                );
                let mut outcome = TrialOutcome {
                    name: t.name.clone(),
                    status,
                    duration: Duration::from_millis(t.duration_ms),
                    evidence_path: None,
                    evidence: None,
                };
                if let Some(rel) = &t.evidence {
                    let at = base.join(rel);
                    let loaded = match read_evidence(&at) {
                        Ok(e) => Some((at.clone(), e)),
                        Err(_) => evidence_files
                            .get(&t.name)
                            .and_then(|(p, e)| e.as_ref().ok().map(|e| (p.clone(), e.clone()))),
                    };
                    match loaded {
                        Some((p, e)) => {
                            outcome.evidence_path = Some(p);
                            outcome.evidence = Some(e);
                        }
                        None => outcome.evidence_path = Some(at),
                    }
                }
                trials.push(outcome);
            }
        }
        for (name, (path, evidence)) in evidence_files {
            if named.contains(&name) {
                continue;
            }
            if let Ok(e) = evidence {
                let duration = Duration::from_millis(e.durations.total_ms);
                trials.push(TrialOutcome::from_evidence(e, path, duration));
            }
        }
        trials.extend(unreadable.into_iter().filter(|t| !named.contains(&t.name)));
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string());
        Ok(RunReport::merge_named(
            name,
            vec![RunReport::new("", trials)],
        ))
    }

    /// One report of several (shards of one run): each trial once. A trial found in several
    /// keeps its worst outcome (errored, then failed, then passed, then ignored); on a tie,
    /// the one with evidence, then the first.
    pub fn merge(reports: Vec<RunReport>) -> RunReport {
        RunReport::merge_named("merged", reports)
    }

    fn merge_named(name: impl Into<String>, reports: Vec<RunReport>) -> RunReport {
        let mut kept: Vec<TrialOutcome> = Vec::new();
        let mut at: BTreeMap<String, usize> = BTreeMap::new();
        for t in reports.into_iter().flat_map(|r| r.trials) {
            match at.get(&t.name) {
                None => {
                    at.insert(t.name.clone(), kept.len());
                    kept.push(t);
                }
                Some(&i) => {
                    let old = &kept[i];
                    let worse = t.status.severity() > old.status.severity();
                    let same_but_evidence = t.status.severity() == old.status.severity()
                        && old.evidence.is_none()
                        && t.evidence.is_some();
                    if worse || same_but_evidence {
                        kept[i] = t;
                    }
                }
            }
        }
        RunReport::new(name, kept)
    }
}

fn sort_trials(trials: &mut [TrialOutcome]) {
    // Scenarios keep the order of their first trial; within one, lifecycle order.
    let mut first: BTreeMap<String, usize> = BTreeMap::new();
    for (i, t) in trials.iter().enumerate() {
        first.entry(t.scenario().to_owned()).or_insert(i);
    }
    trials.sort_by_cached_key(|t| (first[t.scenario()], t.order_key()));
}

#[derive(Default)]
struct Found {
    evidence: Vec<PathBuf>,
    summaries: Vec<PathBuf>,
}

/// The largest JSON file looked at: evidence and summaries are far smaller.
const MAX_JSON_BYTES: u64 = 64 * 1024 * 1024;

fn walk(dir: &Path, found: &mut Found) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&path, found)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "json") {
            if entry.metadata().map(|m| m.len()).unwrap_or(u64::MAX) > MAX_JSON_BYTES {
                continue;
            }
            if path.file_name().is_some_and(|n| n == "evidence.json") {
                found.evidence.push(path);
            } else if json::is_summary(&path) {
                found.summaries.push(path);
            }
        }
    }
    Ok(())
}

/// Why an `evidence.json` could not be read: the file, or its JSON.
#[derive(Debug, thiserror::Error)]
enum ReadEvidenceError {
    #[error(transparent)]
    File(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

fn read_evidence(path: &Path) -> Result<Evidence, ReadEvidenceError> {
    let bytes = std::fs::read(path)?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// The files [`write_all`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The HTML report.
    pub html: PathBuf,
    /// The JUnit XML.
    pub junit: PathBuf,
    /// The JSON summary.
    pub json: PathBuf,
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} · {} · {}",
            self.html.display(),
            self.junit.display(),
            self.json.display()
        )
    }
}

/// Writes the three reports of `report` into `dir` (made if missing): `<stem>.html`,
/// `<stem>.junit.xml` and `<stem>.json`.
pub fn write_all(report: &RunReport, dir: &Path, stem: &str) -> std::io::Result<Written> {
    std::fs::create_dir_all(dir)?;
    Ok(Written {
        html: write_html(report, &dir.join(format!("{stem}.html")))?,
        junit: write_junit(report, &dir.join(format!("{stem}.junit.xml")))?,
        json: write_json(report, &dir.join(format!("{stem}.json")))?,
    })
}

/// Merges the reports found in `inputs` (shards' evidence folders, with or without their
/// JSON summaries; see [`RunReport::from_evidence_dir`]) into one, and writes its HTML,
/// JUnit and JSON into `out` as `report.html`, `report.junit.xml` and `report.json`.
pub fn merge_dirs(
    inputs: &[impl AsRef<Path>],
    out: &Path,
) -> std::io::Result<(RunReport, Written)> {
    let mut reports = Vec::new();
    for dir in inputs {
        let dir = dir.as_ref();
        let r = RunReport::from_evidence_dir(dir).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot read {}: {e}", dir.display()))
        })?;
        reports.push(r);
    }
    let merged = RunReport::merge(reports);
    let written = write_all(&merged, out, "report")?;
    Ok((merged, written))
}

/// `ms` for people: `850 ms`, `12.5 s`, `3 m 05 s`.
pub(crate) fn human_ms(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        let s = ms / 1000;
        format!("{} m {:02} s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(name: &str, status: TrialStatus) -> TrialOutcome {
        TrialOutcome {
            name: name.to_owned(),
            status,
            duration: Duration::from_millis(5),
            evidence_path: None,
            evidence: None,
        }
    }

    #[test]
    fn trials_are_ordered_by_scenario_then_lifecycle() {
        let r = RunReport::new(
            "r",
            vec![
                outcome("b::hazard::stale_tab", TrialStatus::Passed),
                outcome("a::after_click::lost", TrialStatus::Passed),
                outcome("b::after_login", TrialStatus::Passed),
                outcome("a::after_profile_created", TrialStatus::Passed),
            ],
        );
        let names: Vec<&str> = r.trials.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "b::after_login",
                "b::hazard::stale_tab",
                "a::after_profile_created",
                "a::after_click::lost"
            ]
        );
        assert_eq!(r.trials[1].plan_label(), "hazard::stale_tab");
        assert_eq!(r.by_scenario().len(), 2);
    }

    #[test]
    fn a_merge_keeps_each_trial_once_with_its_worst_outcome() {
        let a = RunReport::new(
            "a",
            vec![
                outcome("s::after_login", TrialStatus::Passed),
                outcome(
                    "s::hazard::stale_tab",
                    TrialStatus::Ignored {
                        reason: "no knob".into(),
                    },
                ),
            ],
        );
        let b = RunReport::new(
            "b",
            vec![
                outcome(
                    "s::after_login",
                    TrialStatus::Failed {
                        message: "broke".into(),
                    },
                ),
                outcome(
                    "s::hazard::stale_tab",
                    TrialStatus::Ignored {
                        reason: "no knob".into(),
                    },
                ),
                outcome("s::after_click::lost", TrialStatus::Passed),
            ],
        );
        let m = RunReport::merge(vec![a, b]);
        assert_eq!(m.trials.len(), 3);
        assert_eq!(
            m.counts(),
            Counts {
                total: 3,
                passed: 1,
                failed: 1,
                ignored: 1,
                errored: 0
            }
        );
        assert_eq!(m.trials[0].status.as_str(), "failed");
    }

    #[test]
    fn a_screenshot_name_never_leaves_the_evidence_folder() {
        let mut t = outcome("s::after_login", TrialStatus::Passed);
        t.evidence_path = Some(PathBuf::from("/e/s__after_login/evidence.json"));
        let mut e: Evidence = serde_json::from_str(include_str!("testdata/evidence.json")).unwrap();
        for (file, ok) in [
            ("w1.png", true),
            ("../x.png", false),
            ("/etc/passwd", false),
            ("..", false),
        ] {
            e.screenshot = Some(crate::fault::ScreenshotRef {
                file: file.into(),
                sha256: String::new(),
            });
            t.evidence = Some(e.clone());
            assert_eq!(t.screenshot_path().is_some(), ok, "{file}");
        }
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_ms(850), "850 ms");
        assert_eq!(human_ms(12_498), "12.5 s");
        assert_eq!(human_ms(185_000), "3 m 05 s");
    }
}
