//! JUnit XML, as CI systems read it: one `<testsuite>` per scenario, one `<testcase>` per
//! trial.

use std::path::{Path, PathBuf};

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::{RunReport, TrialOutcome, TrialStatus, human_ms};

/// Writes the JUnit XML of `report` to `path` (its folder made if missing); returns `path`.
///
/// One `<testsuite>` per scenario (`name` = the scenario), one `<testcase>` per trial
/// (`name` = the trial's full name, `classname` = the scenario, `time` = its duration). A
/// failed trial is a `<failure type="invariant">` whose `message` lists each broken
/// invariant with its explanation (`invariant `no_duplicate` broke: …; …`), the same one per
/// line in its text; an errored trial an `<error>`; an ignored one `<skipped>` with its
/// reason. Each trial's `<system-out>` names its evidence and its fault.
pub fn write_junit(report: &RunReport, path: &Path) -> std::io::Result<PathBuf> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut junit = Report::new(format!("browser-fault: {}", report.name));
    junit.set_time(report.duration());
    for (scenario, trials) in report.by_scenario() {
        let mut suite = TestSuite::new(scenario);
        suite.set_time(trials.iter().map(|t| t.duration).sum());
        suite.add_test_cases(trials.into_iter().map(test_case));
        junit.add_test_suite(suite);
    }
    let file = std::fs::File::create(path)?;
    let mut out = std::io::BufWriter::new(file);
    junit.serialize(&mut out).map_err(std::io::Error::other)?;
    std::io::Write::flush(&mut out)?;
    Ok(path.to_owned())
}

fn test_case(t: &TrialOutcome) -> TestCase {
    let status = match &t.status {
        TrialStatus::Passed => TestCaseStatus::success(),
        TrialStatus::Failed { message } => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(message.replace('\n', "; "))
                .set_type("invariant")
                .set_description(message.as_str());
            s
        }
        TrialStatus::Errored { message } => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(message.as_str()).set_type("trial error");
            s
        }
        TrialStatus::Ignored { reason } => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(reason.as_str()).set_type("ignored");
            s
        }
    };
    let mut case = TestCase::new(t.name.as_str(), status);
    case.set_classname(t.scenario()).set_time(t.duration);
    let mut out = String::new();
    if let Some(p) = &t.evidence_path {
        out.push_str(&format!("evidence: {}\n", p.display()));
    }
    if let Some(e) = &t.evidence {
        let fault = &e.fault;
        let when = fault.at_ms.map(human_ms).unwrap_or_else(|| "-".to_owned());
        if fault.struck {
            let worker = fault
                .worker
                .map(|w| format!("worker {w}"))
                .unwrap_or_else(|| "the trial".to_owned());
            out.push_str(&format!(
                "fault: {} struck {worker} at {when}\n",
                fault.planned
            ));
        } else {
            out.push_str(&format!(
                "fault: {} did not strike ({})\n",
                fault.planned,
                fault.instead.as_deref().unwrap_or("no reason given")
            ));
        }
    }
    if !out.is_empty() {
        case.set_system_out(out);
    }
    case
}
