//! `browser-fault-report merge OUT DIR...`: merges the reports of several CI shards (their
//! evidence folders, with or without the JSON summaries the runs wrote) into one HTML, one
//! JUnit XML and one JSON summary in `OUT` (`report.html`, `report.junit.xml`,
//! `report.json`).
//!
//! Exit codes: 0 written (whatever the trials' verdicts), 1 a folder could not be read or a
//! report not written, 2 usage.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: browser-fault-report merge OUT DIR...\n\
    \n\
    Merges the evidence folders (and JSON summaries) of several shards into one\n\
    OUT/report.html, OUT/report.junit.xml and OUT/report.json.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("merge") if args.len() >= 3 => {}
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    }
    let out = PathBuf::from(&args[1]);
    let inputs: Vec<PathBuf> = args[2..].iter().map(PathBuf::from).collect();
    match browser_fault::report::merge_dirs(&inputs, &out) {
        Ok((report, written)) => {
            let c = report.counts();
            println!(
                "browser-fault-report: {} trial(s) from {} folder(s): {} passed, {} failed, {} errored, {} ignored",
                c.total,
                inputs.len(),
                c.passed,
                c.failed,
                c.errored,
                c.ignored
            );
            println!("  html:  {}", written.html.display());
            println!("  junit: {}", written.junit.display());
            println!("  json:  {}", written.json.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("browser-fault-report: {e}");
            ExitCode::FAILURE
        }
    }
}
