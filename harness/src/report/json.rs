//! The JSON summary of a run: what CI dashboards and the shard merge read.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{RunReport, TrialOutcome};
use crate::evidence::Evidence;

/// The value of the summary's `schema` key.
pub const SCHEMA: &str = "browser-fault-report";

/// The summary's `schema_version`. A change that removes or retypes a key bumps it.
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON Schema (draft 2020-12) of the summary [`write_json`] writes.
pub const JSON_SCHEMA: &str = include_str!("summary.schema.json");

/// The JSON summary of a run (see the [module docs](super) for each key).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The run's name.
    pub name: String,
    /// When the summary was written, in ms since the Unix epoch.
    pub generated_unix_ms: u64,
    /// The trials' durations, summed, in ms.
    pub duration_ms: u64,
    /// The counts.
    pub counts: SummaryCounts,
    /// One entry per trial.
    pub trials: Vec<TrialSummary>,
}

/// How many trials ended how.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryCounts {
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

/// One trial of a [`Summary`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialSummary {
    /// The stable trial name.
    pub name: String,
    /// The scenario.
    pub scenario: String,
    /// `passed`, `failed`, `ignored` or `errored`.
    pub status: String,
    /// Why it failed, was ignored or errored.
    pub reason: Option<String>,
    /// How long it took, in ms.
    pub duration_ms: u64,
    /// The boundary, for boundary trials.
    pub boundary: Option<String>,
    /// The variant.
    pub variant: Option<String>,
    /// The hazard, for hazard trials.
    pub hazard: Option<String>,
    /// What the trial meant to do (`crash at after_click`).
    pub fault_planned: Option<String>,
    /// Whether its fault struck (`None`: no evidence).
    pub fault_struck: Option<bool>,
    /// When, in ms from the trial's start.
    pub fault_at_ms: Option<u64>,
    /// One per invariant.
    pub verdicts: Vec<VerdictSummary>,
    /// Its `evidence.json`: relative to the summary's folder when it is below it.
    pub evidence: Option<String>,
    /// Its workers that never began their scenario, and where the harness stopped them
    /// ([`crate::evidence::Evidence::before_scenario`]); absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before_scenario: Vec<String>,
}

/// One invariant's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictSummary {
    /// The invariant's name (`no_duplicate`, …).
    pub invariant: String,
    /// Whether it held.
    pub held: bool,
    /// Why.
    pub explanation: String,
}

impl Summary {
    /// The summary of `report`, evidence paths relative to `dir` where they are below it.
    pub fn of(report: &RunReport, dir: &Path) -> Summary {
        let c = report.counts();
        Summary {
            schema: SCHEMA.to_owned(),
            schema_version: SCHEMA_VERSION,
            name: report.name.clone(),
            generated_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(millis)
                .unwrap_or(0),
            duration_ms: millis(report.duration()),
            counts: SummaryCounts {
                total: c.total,
                passed: c.passed,
                failed: c.failed,
                ignored: c.ignored,
                errored: c.errored,
            },
            trials: report.trials.iter().map(|t| trial(t, dir)).collect(),
        }
    }
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A name as serde writes it (`after_click`), for enums with a snake_case serialization.
fn name_of<T: Serialize>(value: &T) -> Option<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Some(s),
        _ => None,
    }
}

fn trial(t: &TrialOutcome, dir: &Path) -> TrialSummary {
    let e = t.evidence.as_ref();
    let evidence = t.evidence_path.as_ref().map(|p| relative(p, dir));
    TrialSummary {
        name: t.name.clone(),
        scenario: t.scenario().to_owned(),
        status: t.status.as_str().to_owned(),
        reason: t.status.reason().map(str::to_owned),
        duration_ms: millis(t.duration),
        boundary: e.and_then(|e| e.boundary.as_ref()).and_then(name_of),
        variant: e.and_then(|e| e.variant.as_ref()).and_then(name_of),
        hazard: e.and_then(|e| e.hazard.as_ref()).and_then(name_of),
        fault_planned: e.map(|e| e.fault.planned.clone()),
        fault_struck: e.map(|e| e.fault.struck),
        fault_at_ms: e.and_then(|e| e.fault.at_ms),
        verdicts: e
            .map(|e| {
                e.verdicts
                    .iter()
                    .map(|v| VerdictSummary {
                        invariant: v.invariant.as_str().to_owned(),
                        held: v.held,
                        explanation: v.explanation.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        evidence,
        before_scenario: e.map(Evidence::before_scenario).unwrap_or_default(),
    }
}

/// `path` relative to `dir` when it is below it (both made absolute first), else as given.
fn relative(path: &Path, dir: &Path) -> String {
    let abs = |p: &Path| -> PathBuf { std::path::absolute(p).unwrap_or_else(|_| p.to_owned()) };
    let (p, d) = (abs(path), abs(dir));
    match p.strip_prefix(&d) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// Writes the JSON summary of `report` to `path` (its folder made if missing); returns
/// `path`.
pub fn write_json(report: &RunReport, path: &Path) -> std::io::Result<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let summary = Summary::of(report, dir);
    let json = serde_json::to_vec_pretty(&summary).map_err(std::io::Error::other)?;
    std::fs::write(path, json)?;
    Ok(path.to_owned())
}

/// Reads a summary written by [`write_json`]; refuses another schema or a newer version.
pub fn read_json(path: &Path) -> std::io::Result<Summary> {
    let bytes = std::fs::read(path)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(std::io::Error::other)?;
    if value.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
        return Err(std::io::Error::other(format!(
            "{} is not a {SCHEMA} summary",
            path.display()
        )));
    }
    let version = value.get("schema_version").and_then(|v| v.as_u64());
    if version != Some(u64::from(SCHEMA_VERSION)) {
        return Err(std::io::Error::other(format!(
            "{} has schema version {version:?}; this reader knows {SCHEMA_VERSION}",
            path.display()
        )));
    }
    serde_json::from_value(value).map_err(std::io::Error::other)
}

/// Whether the JSON file at `path` claims to be a summary (its `schema` key).
pub(super) fn is_summary(path: &Path) -> bool {
    #[derive(Deserialize)]
    struct Head {
        schema: Option<String>,
    }
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Head>(&b).ok())
        .is_some_and(|h| h.schema.as_deref() == Some(SCHEMA))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_paths_below_the_summary_are_relative() {
        assert_eq!(
            relative(Path::new("/a/b/t/evidence.json"), Path::new("/a/b")),
            "t/evidence.json"
        );
        assert_eq!(
            relative(Path::new("/x/t/evidence.json"), Path::new("/a/b")),
            "/x/t/evidence.json"
        );
    }

    #[test]
    fn the_schema_document_is_json_and_names_the_version() {
        let schema: serde_json::Value = serde_json::from_str(JSON_SCHEMA).unwrap();
        assert_eq!(
            schema["properties"]["schema_version"]["enum"][0],
            SCHEMA_VERSION
        );
        assert_eq!(schema["properties"]["schema"]["enum"][0], SCHEMA);
    }
}
