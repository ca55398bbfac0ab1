//! The report writers and the shard merge, on evidence made by hand (no trial runs here):
//! JUnit parsed back, the JSON summary checked against its JSON Schema, the merge of two
//! shards, and the HTML report loaded in real headless Chromium.

use std::path::{Path, PathBuf};
use std::time::Duration;

use browser_fault::evidence::Evidence;
use browser_fault::oracle::Invariant;
use browser_fault::report::{
    self, JSON_SCHEMA, RunReport, SCHEMA, SCHEMA_VERSION, TrialOutcome, TrialStatus,
};
use serde_json::{Value, json};

/// Markup, an ampersand and quotes: what every writer must escape.
const NASTY: &str = r#"<b>bold</b> & "quoted" 'single'"#;

/// A log line that would run script or load an image if it were not escaped.
const INJECTION: &str =
    r#"<script>window.__pwned = 1</script><img src="x.png" onerror="window.__pwned = 2">"#;

/// Real evidence of a passed `after_click::lost` trial (from a run of the fixture suite).
fn base() -> Evidence {
    serde_json::from_str(include_str!("../src/report/testdata/evidence.json"))
        .expect("the sample evidence deserializes")
}

/// Evidence of `scenario::rest` (boundary and variant as named), passed.
fn evidence(name: &str) -> Evidence {
    let mut e = base();
    let mut parts = name.split("::");
    e.trial = name.to_owned();
    e.scenario = parts.next().unwrap().to_owned();
    let boundary = parts.next().unwrap();
    e.boundary = Some(serde_json::from_value(json!(boundary)).unwrap());
    e.variant = parts
        .next()
        .map(|v| serde_json::from_value(json!(v)).unwrap());
    e.fault.planned = format!("crash at {boundary}");
    for w in &mut e.workers {
        if w.armed.is_some() {
            w.armed = e.boundary;
            w.struck = e.boundary;
        }
    }
    e.screenshot = None;
    e
}

/// Breaks `invariant` in `e` with `why`.
fn broke(e: &mut Evidence, invariant: Invariant, why: &str) {
    let v = e
        .verdicts
        .iter_mut()
        .find(|v| v.invariant == invariant)
        .unwrap();
    v.held = false;
    v.explanation = why.to_owned();
    e.passed = false;
}

const PASSED: &str = "pay::after_login";
const FAILED: &str = "pay::after_click::lost";
const NOT_STRUCK: &str = "pay::after_target_verified";
const IGNORED: &str = "pay::hazard::stale_tab";
const ERRORED: &str = "ship::browser_crash";

/// Writes `e` (and `png` as its screenshot) to `dir/<trial>/evidence.json`.
fn write_evidence(dir: &Path, mut e: Evidence, png: Option<&[u8]>) -> PathBuf {
    let folder = dir.join(e.trial.replace("::", "__"));
    if let Some(png) = png {
        std::fs::create_dir_all(&folder).unwrap();
        let file = format!("w1-{}.png", e.boundary.unwrap());
        std::fs::write(folder.join(&file), png).unwrap();
        e.screenshot = Some(browser_fault::_internal::fault::ScreenshotRef {
            file,
            sha256: "0".repeat(64),
        });
    }
    e.write(&folder).unwrap()
}

/// A shard with a passed, a failed, a not-struck, an ignored and an errored trial; the
/// failed one with `png` as its screenshot.
fn shard(dir: &Path, png: Option<&[u8]>) -> RunReport {
    let mut trials = Vec::new();
    let e = evidence(PASSED);
    let path = write_evidence(dir, e.clone(), None);
    trials.push(TrialOutcome::from_evidence(
        e,
        path,
        Duration::from_millis(31_517),
    ));

    let mut e = evidence(FAILED);
    broke(
        &mut e,
        Invariant::NoDuplicate,
        &format!("2 effect(s) for 1 intended side effect(s): {NASTY}"),
    );
    broke(
        &mut e,
        Invariant::ClaimsMatchFacts,
        "worker 2 claimed confirmed; the ledger shows 2",
    );
    e.workers[1].log_tail = format!("signed in\n{INJECTION}\nretrying the click & hoping\n");
    let path = write_evidence(dir, e.clone(), png);
    let e: Evidence = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    trials.push(TrialOutcome::from_evidence(
        e,
        path,
        Duration::from_millis(28_004),
    ));

    let mut e = evidence(NOT_STRUCK);
    e.fault.struck = false;
    e.fault.worker = None;
    e.fault.at_ms = None;
    e.fault.instead = Some("worker 1 finished without crossing `after_target_verified`".into());
    e.workers[0].struck = None;
    e.workers[0].end = browser_fault::evidence::WorkerEnd::Finished;
    broke(
        &mut e,
        Invariant::FaultStruck,
        "`crash at after_target_verified` never struck",
    );
    let path = write_evidence(dir, e.clone(), None);
    trials.push(TrialOutcome::from_evidence(
        e,
        path,
        Duration::from_millis(9_000),
    ));

    trials.push(TrialOutcome::ignored(
        IGNORED,
        format!("a page only the bundled site shows {NASTY}"),
    ));
    trials.push(TrialOutcome::errored(
        ERRORED,
        "failed to prepare the trial: failed to start chromedriver",
        Duration::from_millis(120),
    ));
    RunReport::new("shard-1", trials)
}

fn status_of<'a>(r: &'a RunReport, name: &str) -> &'a TrialStatus {
    &r.trials.iter().find(|t| t.name == name).unwrap().status
}

#[test]
fn junit_parses_back_with_its_counts_names_and_failure_messages() {
    let dir = tempfile::tempdir().unwrap();
    let run = shard(dir.path(), None);
    let path = report::write_junit(&run, &dir.path().join("r/junit.xml")).unwrap();
    let xml = std::fs::read_to_string(&path).unwrap();

    // A real XML parse (quick-junit reads with quick-xml), then the data model.
    let parsed = quick_junit::Report::deserialize_from_str(&xml).expect("well-formed JUnit");
    assert_eq!(
        (parsed.tests, parsed.failures, parsed.errors, parsed.skipped),
        (5, 2, 1, 1)
    );
    let suites: Vec<&str> = parsed.test_suites.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(suites, ["pay", "ship"]);
    let cases: Vec<&quick_junit::TestCase> = parsed
        .test_suites
        .iter()
        .flat_map(|s| &s.test_cases)
        .collect();
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, [PASSED, NOT_STRUCK, FAILED, IGNORED, ERRORED]);
    let case = |name: &str| *cases.iter().find(|c| c.name.as_str() == name).unwrap();

    assert!(matches!(
        case(PASSED).status,
        quick_junit::TestCaseStatus::Success { .. }
    ));
    let time = case(PASSED).time.unwrap().as_millis();
    assert!(time.abs_diff(31_517) <= 1, "{time}");
    assert_eq!(case(PASSED).classname.as_ref().unwrap().as_str(), "pay");

    let quick_junit::TestCaseStatus::NonSuccess {
        kind: quick_junit::NonSuccessKind::Failure,
        message: Some(message),
        ty,
        description: Some(description),
        ..
    } = &case(FAILED).status
    else {
        panic!("{FAILED} is a failure: {:?}", case(FAILED).status)
    };
    // Every broken invariant with its explanation, escaping undone by the parser.
    assert_eq!(
        message.as_str(),
        format!(
            "invariant `no_duplicate` broke: 2 effect(s) for 1 intended side effect(s): {NASTY}; \
             invariant `claims_match_facts` broke: worker 2 claimed confirmed; the ledger shows 2"
        )
    );
    assert_eq!(ty.as_ref().unwrap().as_str(), "invariant");
    assert_eq!(description.as_str().lines().count(), 2);
    let out = case(FAILED).system_out.as_ref().unwrap().as_str();
    assert!(out.contains(&format!(
        "evidence: {}",
        dir.path().join("pay__after_click__lost/evidence.json").display()
    )));
    assert!(
        out.contains("fault: crash at after_click struck worker 1 at 12.5 s"),
        "{out}"
    );

    let not_struck = case(NOT_STRUCK);
    assert!(
        matches!(&not_struck.status, quick_junit::TestCaseStatus::NonSuccess { message: Some(m), .. }
            if m.as_str().contains("invariant `fault_struck` broke"))
    );
    assert!(
        not_struck
            .system_out
            .as_ref()
            .unwrap()
            .as_str()
            .contains("did not strike")
    );

    assert!(matches!(
        &case(IGNORED).status,
        quick_junit::TestCaseStatus::Skipped { message: Some(m), .. }
            if m.as_str() == format!("a page only the bundled site shows {NASTY}")
    ));
    assert!(matches!(
        &case(ERRORED).status,
        quick_junit::TestCaseStatus::NonSuccess { kind: quick_junit::NonSuccessKind::Error, message: Some(m), .. }
            if m.as_str().contains("failed to start chromedriver")
    ));

    // On the wire: escaped, never raw.
    assert!(
        xml.contains("&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;"),
        "{xml}"
    );
    assert!(!xml.contains("<b>"));
    assert!(
        xml.contains(r#"<testsuites name="browser-fault: shard-1" tests="5""#),
        "{xml}"
    );
}

/// The subset of JSON Schema the summary's schema uses: `type` (one or several),
/// `enum`, `required`, `properties`, `additionalProperties: false`, `items`.
fn validate(schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(ty) = schema.get("type") {
        let types: Vec<&str> = match ty {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_u64() || value.is_i64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            _ => false,
        });
        if !ok {
            errors.push(format!("{at}: {value} is not {types:?}"));
            return;
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        errors.push(format!("{at}: {value} is not one of {options:?}"));
    }
    if let Some(obj) = value.as_object() {
        for key in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !obj.contains_key(key) {
                errors.push(format!("{at}: `{key}` is missing"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (key, v) in obj {
            match props.and_then(|p| p.get(key)) {
                Some(s) => validate(s, v, &format!("{at}.{key}"), errors),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push(format!("{at}: `{key}` is not in the schema"));
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), value.as_array()) {
        for (i, v) in arr.iter().enumerate() {
            validate(items, v, &format!("{at}[{i}]"), errors);
        }
    }
}

#[test]
fn the_json_summary_follows_its_documented_schema() {
    let dir = tempfile::tempdir().unwrap();
    let run = shard(dir.path(), None);
    let path = report::write_json(&run, &dir.path().join("summary.json")).unwrap();
    let value: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let schema: Value = serde_json::from_str(JSON_SCHEMA).unwrap();

    let mut errors = Vec::new();
    validate(&schema, &value, "$", &mut errors);
    assert!(errors.is_empty(), "{errors:#?}\n{value:#}");
    // The validator does catch a wrong summary.
    let mut wrong = value.clone();
    wrong["counts"]["failed"] = json!("2");
    wrong["trials"][0]["verdicts"][0]
        .as_object_mut()
        .unwrap()
        .remove("held");
    wrong["trials"][1]["status"] = json!("flaky");
    let mut caught = Vec::new();
    validate(&schema, &wrong, "$", &mut caught);
    assert_eq!(caught.len(), 3, "{caught:#?}");

    assert_eq!(value["schema"], SCHEMA);
    assert_eq!(value["schema_version"], SCHEMA_VERSION);
    assert_eq!(
        value["counts"],
        json!({"total": 5, "passed": 1, "failed": 2, "ignored": 1, "errored": 1})
    );
    let trial = |name: &str| {
        value["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    let passed = trial(PASSED);
    assert_eq!(passed["status"], "passed");
    assert_eq!(passed["reason"], Value::Null);
    assert_eq!(passed["duration_ms"], 31_517);
    assert_eq!(passed["boundary"], "after_login");
    assert_eq!(passed["variant"], Value::Null);
    assert_eq!(passed["fault_struck"], true);
    assert_eq!(passed["fault_at_ms"], 12_498);
    assert_eq!(passed["evidence"], "pay__after_login/evidence.json");
    assert_eq!(
        passed["verdicts"].as_array().unwrap().len(),
        Invariant::ALL.len()
    );

    let failed = trial(FAILED);
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["variant"], "lost");
    assert!(
        failed["reason"]
            .as_str()
            .unwrap()
            .starts_with("invariant `no_duplicate` broke: 2 effect(s)")
    );
    let broken: Vec<&str> = failed["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["held"] == false)
        .map(|v| v["invariant"].as_str().unwrap())
        .collect();
    assert_eq!(broken, ["no_duplicate", "claims_match_facts"]);
    assert_eq!(trial(NOT_STRUCK)["fault_struck"], false);

    let ignored = trial(IGNORED);
    assert_eq!(ignored["status"], "ignored");
    assert_eq!(
        ignored["reason"],
        format!("a page only the bundled site shows {NASTY}")
    );
    assert_eq!(ignored["evidence"], Value::Null);
    assert_eq!(ignored["fault_struck"], Value::Null);
    assert_eq!(ignored["verdicts"], json!([]));
    assert_eq!(trial(ERRORED)["status"], "errored");

    // Read back: the same trials, statuses and evidence.
    let back = RunReport::from_evidence_dir(dir.path()).unwrap();
    assert_eq!(back.counts(), run.counts());
    for t in &run.trials {
        let b = back.trials.iter().find(|b| b.name == t.name).unwrap();
        assert_eq!(b.status, t.status, "{}", t.name);
        assert_eq!(b.evidence, t.evidence, "{}", t.name);
    }
}

#[test]
fn a_merge_of_two_shards_holds_the_trials_of_both() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("shard-a"), root.path().join("shard-b"));
    // Shard A: evidence and its summary (which alone knows the ignored and errored trials).
    let run_a = shard(&a, None);
    report::write_all(&run_a, &a, "shard-a").unwrap();
    // Shard B: evidence only, other trials, one of them a trial of A failing here.
    let e = evidence("ship::after_login");
    write_evidence(&b, e, None);
    let mut e = evidence("ship::after_remote_effect");
    broke(&mut e, Invariant::NoLeak, "1 profile left");
    write_evidence(&b, e, None);

    let out = root.path().join("merged");
    let (merged, written) = report::merge_dirs(&[&a, &b], &out).unwrap();
    let names: Vec<&str> = merged.trials.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            PASSED,
            NOT_STRUCK,
            FAILED,
            IGNORED,
            "ship::after_login",
            "ship::after_remote_effect",
            ERRORED
        ]
    );
    assert_eq!(status_of(&merged, "ship::after_login").as_str(), "passed");
    assert_eq!(
        status_of(&merged, "ship::after_remote_effect").as_str(),
        "failed"
    );
    assert_eq!(status_of(&merged, IGNORED).as_str(), "ignored");
    assert_eq!(status_of(&merged, ERRORED).as_str(), "errored");
    for t in merged.trials.iter().filter(|t| t.evidence_path.is_some()) {
        assert!(t.evidence.is_some(), "{} lost its evidence", t.name);
    }

    // What was written holds both shards.
    let junit = std::fs::read_to_string(&written.junit).unwrap();
    let parsed = quick_junit::Report::deserialize_from_str(&junit).unwrap();
    assert_eq!((parsed.tests, parsed.failures), (7, 3));
    let summary = report::read_json(&written.json).unwrap();
    assert_eq!(summary.name, "merged");
    assert_eq!(summary.counts.total, 7);
    let html = std::fs::read_to_string(&written.html).unwrap();
    for name in names {
        assert!(html.contains(&format!("data-trial=\"{name}\"")), "{name}");
    }

    // Merging the merged report with a shard again changes nothing.
    let again = report::merge_dirs(&[&out, &a], &root.path().join("again"))
        .unwrap()
        .0;
    assert_eq!(again.counts(), merged.counts());

    // The same through the binary.
    let bin_out = root.path().join("bin-out");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_browser-fault-report"))
        .arg("merge")
        .arg(&bin_out)
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{run:?}");
    assert!(
        stdout.contains("7 trial(s) from 2 folder(s): 2 passed, 3 failed, 1 errored, 1 ignored"),
        "{stdout}"
    );
    for f in ["report.html", "report.junit.xml", "report.json"] {
        assert!(bin_out.join(f).is_file(), "{f}");
    }
    let usage = std::process::Command::new(env!("CARGO_BIN_EXE_browser-fault-report"))
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
}

mod chromium {
    //! The HTML report in real headless Chromium, from a `file://` URL.

    use super::*;
    use browser_fault::{
        _internal::browser::{Browser, BrowserOptions},
        BrowserBinaries,
    };
    use thirtyfour::prelude::*;

    async fn js(driver: &WebDriver, script: &str) -> Value {
        driver
            .execute(script, Vec::<Value>::new())
            .await
            .unwrap()
            .json()
            .clone()
    }

    async fn shown(driver: &WebDriver, css: &str) -> Vec<bool> {
        let mut out = Vec::new();
        for e in driver.find_all(By::Css(css)).await.unwrap() {
            out.push(e.is_displayed().await.unwrap());
        }
        out
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_html_report_renders_filters_and_loads_nothing() {
        let binaries = BrowserBinaries::discover_cached()
            .expect("chromium and chromedriver (run `cargo xtask drill` to install them)");
        let root = tempfile::Builder::new()
            .prefix("bfr")
            .tempdir_in("/tmp")
            .unwrap();
        let profile = root.path().join("p");
        let tmp = root.path().join("t");
        std::fs::create_dir_all(&profile).unwrap();
        std::fs::create_dir_all(&tmp).unwrap();
        let browser = Browser::launch(&binaries, &profile, &tmp, &BrowserOptions::default())
            .await
            .expect("launch headless Chromium");
        let driver = browser.driver().clone();

        // A real fault-point screenshot: a page with a submit button, as Chromium draws it.
        driver
            .goto("data:text/html,<h1 style='font-family:sans-serif'>Thread 42</h1><p>New issue</p><button>Submit</button>")
            .await
            .unwrap();
        let png = driver.screenshot_as_png().await.unwrap();

        let evidence = root.path().join("evidence");
        let run = shard(&evidence, Some(&png));
        let out = browser_fault::trial::TrialSettings::from_env()
            .out_dir
            .join("evidence")
            .join("report-html");
        let page = report::write_html(&run, &out.join("report.html")).unwrap();
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(
            !html.contains("http:") && !html.contains("https:"),
            "the file names no URL"
        );
        assert!(html.contains("data:image/png;base64,"));

        driver.set_window_rect(0, 0, 1280, 2200).await.unwrap();
        driver
            .goto(format!("file://{}", page.display()))
            .await
            .unwrap();
        assert_eq!(
            js(&driver, "return document.title").await,
            "browser-fault report: shard-1"
        );

        // The matrix: one per scenario, a row per trial, a cell per invariant.
        assert_eq!(shown(&driver, "table.matrix").await, [true, true]);
        let row = format!("tr[data-trial=\"{FAILED}\"]");
        let cells = driver
            .find_all(By::Css(format!("{row} td[data-invariant]")))
            .await
            .unwrap();
        assert_eq!(cells.len(), Invariant::ALL.len());
        let failed_cells: Vec<String> = {
            let mut v = Vec::new();
            for c in driver
                .find_all(By::Css(format!("{row} td.cell.fail")))
                .await
                .unwrap()
            {
                v.push(c.attr("data-invariant").await.unwrap().unwrap());
            }
            v
        };
        assert_eq!(failed_cells, ["no_duplicate", "claims_match_facts"]);
        let title = driver
            .find(By::Css(format!("{row} td[data-invariant=no_duplicate]")))
            .await
            .unwrap()
            .attr("title")
            .await
            .unwrap()
            .unwrap();
        assert!(
            title.ends_with(NASTY),
            "an explanation survives escaping: {title}"
        );
        assert_eq!(
            js(&driver, &format!("return document.querySelectorAll('tr[data-trial=\"{NOT_STRUCK}\"] td.not-struck').length")).await,
            json!(Invariant::ALL.len()),
            "a trial whose fault never struck: every held cell is 'not struck', plus its fault cell"
        );
        let ignored = driver
            .find(By::Css(format!("tr[data-trial=\"{IGNORED}\"] td.ignored")))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(
            ignored,
            format!("ignored: a page only the bundled site shows {NASTY}")
        );

        // A timeline: the trial's phases, both workers, the fault where it struck.
        let trial = format!("details[data-trial=\"{FAILED}\"]");
        assert_eq!(
            js(
                &driver,
                &format!("return document.querySelector('{trial}').open")
            )
            .await,
            true,
            "a failed trial is open"
        );
        assert_eq!(
            shown(&driver, &format!("{trial} .timeline .lane.worker")).await,
            [true, true]
        );
        assert_eq!(
            shown(&driver, &format!("{trial} .timeline .seg"))
                .await
                .len(),
            5
        );
        let flag = driver
            .find(By::Css(format!(
                "{trial} .lane.worker[data-worker='1'] .fault-mark .flag"
            )))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(flag, "⚡ crash at after_click");
        let chips = driver
            .find(By::Css(format!("{trial} ul.workers li")))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for step in [
            "INTENT_RECORDED",
            "TARGET_VERIFIED",
            "ACTION_SUBMITTED",
            "⚡ fault at after_click",
            "crashed",
        ] {
            assert!(chips.contains(step), "{step} in {chips}");
        }
        // The screenshot decodes (its base64 is right) and has Chromium's size.
        let size = js(
            &driver,
            &format!("var i = document.querySelector('{trial} img.shot'); return [i.complete, i.naturalWidth, i.naturalHeight]"),
        )
        .await;
        assert_eq!(size[0], true);
        assert!(size[1].as_u64().unwrap() > 100, "{size}");
        // Log lines are text, never markup: no script ran, no image was made.
        assert_eq!(
            js(&driver, "return typeof window.__pwned").await,
            "undefined"
        );
        assert_eq!(
            js(
                &driver,
                &format!(
                    "return document.querySelectorAll('{trial} pre img, {trial} pre script').length"
                )
            )
            .await,
            0
        );
        let log = js(
            &driver,
            &format!("return document.querySelectorAll('{trial} pre.log')[1].textContent"),
        )
        .await;
        assert!(log.as_str().unwrap().contains(INJECTION), "{log}");

        // The page made no network request.
        assert_eq!(
            js(
                &driver,
                "return performance.getEntriesByType('resource').length"
            )
            .await,
            0
        );

        // Take the screenshot of the whole report, before filtering.
        let shot = driver.screenshot_as_png().await.unwrap();
        std::fs::write(out.join("report.png"), &shot).unwrap();
        let failed_trial = driver.find(By::Css(trial.as_str())).await.unwrap();
        let shot = failed_trial.screenshot_as_png().await.unwrap();
        std::fs::write(out.join("report-trial.png"), &shot).unwrap();

        // The "failed" filter: failed and errored trials stay, passed and ignored go.
        driver
            .find(By::Css("button[data-show=failed]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        for (name, visible) in [
            (PASSED, false),
            (IGNORED, false),
            (FAILED, true),
            (NOT_STRUCK, true),
            (ERRORED, true),
        ] {
            assert_eq!(
                shown(&driver, &format!("[data-status][data-trial=\"{name}\"]")).await,
                [visible, visible],
                "{name}: matrix row and details"
            );
        }
        std::fs::write(
            out.join("report-failed.png"),
            driver.screenshot_as_png().await.unwrap(),
        )
        .unwrap();
        // "passed" hides a scenario with no passed trial.
        driver
            .find(By::Css("button[data-show=passed]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert_eq!(shown(&driver, "section.scenario").await, [true, false]);
        assert_eq!(
            shown(&driver, "details.trial")
                .await
                .iter()
                .filter(|v| **v)
                .count(),
            1
        );
        driver
            .find(By::Css("button[data-show=ignored]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert_eq!(
            shown(&driver, "details.trial")
                .await
                .iter()
                .filter(|v| **v)
                .count(),
            1
        );
        driver
            .find(By::Css("button[data-show=all]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert_eq!(shown(&driver, "details.trial").await, [true; 5]);
        assert_eq!(
            js(
                &driver,
                "return performance.getEntriesByType('resource').length"
            )
            .await,
            0,
            "still nothing loaded after the clicks"
        );

        drop(driver);
        browser.quit().await;
        for pid in browser_fault::_internal::browser::process::processes_using_profile(&profile) {
            assert!(
                browser_fault::_internal::browser::process::wait_dead(pid, Duration::from_secs(10))
                    .await,
                "Chromium {pid} outlived the test"
            );
        }
    }
}

#[test]
fn a_worker_that_never_began_its_scenario_is_named_in_the_evidence_and_every_report() {
    use browser_fault::evidence::WorkerEnd;
    use browser_fault::worker::{FailureKind, SafeStop, WorkerResult};

    // Worker 1 crashed at its launch; in another trial, worker 2 refused the lease.
    let mut crashed = evidence("pay::after_profile_created");
    crashed.workers[0].scenario_began = false;
    let mut refused = evidence("pay::concurrent_profile");
    refused.workers[0].armed = None;
    refused.workers[0].struck = None;
    refused.workers[0].end = WorkerEnd::Finished;
    refused.workers[1].scenario_began = false;
    refused.workers[1].result = Some(WorkerResult::Err(FailureKind::SafeStop(
        SafeStop::LeaseHeld,
    )));
    assert_eq!(
        crashed.before_scenario(),
        ["worker 1 was crashed at after_profile_created before its scenario began"]
    );
    assert_eq!(
        refused.before_scenario(),
        ["worker 2 ended with safe_stop(lease_held) before its scenario began"]
    );
    assert!(base().before_scenario().is_empty(), "both began theirs");

    // Written only when false; evidence without the key (older runs) means it began.
    let json = serde_json::to_value(&crashed).unwrap();
    assert_eq!(json["workers"][0]["scenario_began"], false);
    assert!(json["workers"][1].get("scenario_began").is_none());
    let back: Evidence = serde_json::from_value(json).unwrap();
    assert_eq!(back, crashed);

    let dir = tempfile::tempdir().unwrap();
    let trials = [crashed, refused, base()]
        .into_iter()
        .map(|e| {
            let path = write_evidence(dir.path(), e.clone(), None);
            TrialOutcome::from_evidence(e, path, Duration::from_millis(1_000))
        })
        .collect();
    let run = RunReport::new("shard-1", trials);
    let path = report::write_json(&run, &dir.path().join("summary.json")).unwrap();
    let value: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut errors = Vec::new();
    validate(
        &serde_json::from_str(JSON_SCHEMA).unwrap(),
        &value,
        "$",
        &mut errors,
    );
    assert!(errors.is_empty(), "{errors:#?}\n{value:#}");
    let listed: Vec<(&str, &Value)> = value["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| Some((t["name"].as_str()?, t.get("before_scenario")?)))
        .collect();
    assert_eq!(
        listed,
        [
            (
                "pay::after_profile_created",
                &json!(["worker 1 was crashed at after_profile_created before its scenario began"])
            ),
            (
                "pay::concurrent_profile",
                &json!(["worker 2 ended with safe_stop(lease_held) before its scenario began"])
            ),
        ]
    );

    let html = report::write_html(&run, &dir.path().join("report.html")).unwrap();
    let html = std::fs::read_to_string(html).unwrap();
    assert_eq!(
        html.matches("its scenario never began").count(),
        2,
        "one mark per worker that never began"
    );
}
