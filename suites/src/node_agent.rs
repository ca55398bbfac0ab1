//! The Node agent of `examples/node-agent` (playwright-core, through the worker's CDP
//! endpoint), run as a command: its `node_modules`, installed once from the example's
//! lockfile.

use std::path::{Path, PathBuf};

/// The example's folder.
pub fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/node-agent")
}

/// Installs the example's packages with `npm ci` unless they are there already (a stamp of
/// the lockfile's hash says so), under a lock: the test processes of one run may ask
/// together. The packages come from npm, pinned with their integrity hashes by
/// `package-lock.json`; nothing is fetched once they are installed, and playwright-core
/// downloads no browser (the agent connects to the worker's).
pub fn ensure_node_modules() -> Result<PathBuf, String> {
    use sha2::Digest;
    let dir = example_dir();
    let lockfile = dir.join("package-lock.json");
    let wanted = std::fs::read(&lockfile)
        .map(|b| format!("{:x}", sha2::Sha256::digest(&b)))
        .map_err(|e| format!("{}: {e}", lockfile.display()))?;
    let modules = dir.join("node_modules");
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    std::fs::create_dir_all(&target).map_err(|e| e.to_string())?;
    let lock = std::fs::File::create(target.join("node-agent.lock")).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    let stamp = modules.join(".browser-fault-lockfile.sha256");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
        return Ok(modules);
    }
    let out = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--silent"])
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("npm ci: {e} (is Node.js with npm installed?)"))?;
    if !out.status.success() {
        return Err(format!(
            "npm ci in {} failed ({}): {}",
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::write(&stamp, wanted).map_err(|e| e.to_string())?;
    Ok(modules)
}
