//! The careful reference agent passes every trial: all eight boundaries with their variants,
//! and every hazard.

use browser_fault::prelude::*;

#[browser_fault(at = "all", hazards = "all", effects = "42", timeout = "60s")]
async fn send_message(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

/// The same agent under the `abort` crash mode (the worker is a task of this process,
/// dropped at the boundary): the boundaries where the crash itself matters.
#[browser_fault(
    at = ["after_click", "after_remote_effect", "browser_crash", "stale_profile_restore"],
    crash = "abort",
    effects = "42",
    timeout = "60s"
)]
async fn send_message_abort(w: &mut Worker) -> TaskResult {
    browser_fault_suites::send_hello(w).await
}

/// A sign-in of the agent's own that marks `after_login` itself (`Worker::fault_point`).
#[browser_fault(at = "after_login", effects = "42", timeout = "60s")]
async fn send_message_own_login(w: &mut Worker) -> TaskResult {
    browser_fault_suites::own_login_marked(w).await
}

/// An explicit migration policy: a profile last written by another browser version is
/// migrated, then used (`profile_trusted` holds).
#[browser_fault(
    at = "after_profile_created",
    hazards = ["browser_version_changed"],
    effects = "42",
    timeout = "60s"
)]
async fn send_message_migrating(w: &mut Worker) -> TaskResult {
    browser_fault_suites::migrating(w).await
}

browser_fault::main!();
