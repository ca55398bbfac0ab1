//! The Python agent of `examples/python-agent` (Selenium, through the worker's WebDriver
//! endpoint), run as a command: its virtual environment, made once from the example's
//! hash-pinned `requirements.txt`, and its command line.

use std::path::{Path, PathBuf};

use browser_fault::worker::AgentCommand;

/// The example's folder.
pub fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python-agent")
}

/// Where its virtual environment is made: under the workspace's `target/`.
pub fn venv_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/python-agent-venv")
}

/// The agent with the bug of `variant` (`careful` has none), as a command.
pub fn agent(variant: &str) -> AgentCommand {
    AgentCommand::new(venv_dir().join("bin/python"))
        .args(["-u", "agent.py", "--variant", variant])
        .current_dir(example_dir())
        .env("PYTHONPATH", browser_fault::clients::python_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .effect("post-hello")
}

/// Makes the virtual environment unless it holds the packages of `requirements.txt` already
/// (a stamp of that file's hash says so), under a lock: the test processes of one run may
/// ask together. The packages come from PyPI, pinned with their hashes; nothing is fetched
/// once they are installed.
pub fn ensure_venv() -> Result<PathBuf, String> {
    use sha2::Digest;
    let venv = venv_dir();
    let requirements = example_dir().join("requirements.txt");
    let wanted = std::fs::read(&requirements)
        .map(|b| format!("{:x}", sha2::Sha256::digest(&b)))
        .map_err(|e| format!("{}: {e}", requirements.display()))?;
    std::fs::create_dir_all(venv.parent().unwrap_or(Path::new("."))).map_err(|e| e.to_string())?;
    let lock_path = venv.with_extension("lock");
    let lock = std::fs::File::create(&lock_path).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    let stamp = venv.join("browser-fault-requirements.sha256");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
        return Ok(venv);
    }
    let _ = std::fs::remove_dir_all(&venv);
    run(std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv))?;
    run(std::process::Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--require-hashes",
            "--no-deps",
            "-r",
        ])
        .arg(&requirements))?;
    std::fs::write(&stamp, wanted).map_err(|e| e.to_string())?;
    Ok(venv)
}

fn run(cmd: &mut std::process::Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{cmd:?}: {e} (is python3 installed, with its venv module?)"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}
