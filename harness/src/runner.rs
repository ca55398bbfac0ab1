//! The runner: expands registered scenarios into trials and runs them with libtest-mimic.

/// Runs every trial of one scenario from inside an ordinary `#[test]` fn.
pub fn libtest_entry(module_path: &'static str, name: &'static str) {
    panic!("browser-fault: the runner is not built yet ({module_path}::{name})");
}
