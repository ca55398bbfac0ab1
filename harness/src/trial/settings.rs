//! Where trials keep their files, and the limits they run under.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable naming the folder for trial roots and evidence.
pub(crate) const OUT_ENV: &str = "BROWSER_FAULT_OUT";
/// The environment variable naming the snapshot folder.
pub(crate) const SNAPSHOTS_ENV: &str = "BROWSER_FAULT_SNAPSHOTS";

/// How trials run. Build it with [`TrialSettings::from_env`] and change what you need;
/// there is no global configuration.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TrialSettings {
    /// Evidence goes under `out_dir/evidence/<trial>`.
    pub out_dir: PathBuf,
    /// Trial roots (journal, profiles, TMPDIRs) go under this folder. It must be short:
    /// Chromium puts a Unix socket in the worker's TMPDIR, and socket paths are limited to
    /// 107 bytes. Default: `$TMPDIR/browser-fault-<uid>`.
    pub trial_root_base: PathBuf,
    /// The insta snapshot folder; `None` writes no snapshot.
    pub snapshot_dir: Option<PathBuf>,
    /// The limit of one step of a worker.
    pub step_timeout: Duration,
    /// The lease's time to live.
    pub lease_ttl: Duration,
    /// Arguments that make this binary run one worker (the `kill` crash mode re-enters it).
    pub worker_args: Vec<String>,
    /// A remote WebDriver endpoint (`BROWSER_FAULT_WEBDRIVER_URL`).
    pub webdriver_url: Option<String>,
    /// Start Chromium on `about:blank` (the fast first navigation).
    pub fast_first_navigation: bool,
    /// The seed that picks the schedules of seeded trials (`seeded = N`), and that their
    /// `replay:` lines name. `None`, as [`from_env`](Self::from_env) leaves it: the run's
    /// seed, [`run_seed`](super::run_seed) (`BROWSER_FAULT_SEED`, else the day's number),
    /// which the runner resolves once and keeps here.
    pub seed: Option<u64>,
}

impl TrialSettings {
    /// Settings from the environment: `BROWSER_FAULT_OUT` (default: `<target>/browser-fault`),
    /// `BROWSER_FAULT_SNAPSHOTS` (default: `<workspace>/snapshots`),
    /// `BROWSER_FAULT_WEBDRIVER_URL`.
    pub fn from_env() -> Self {
        let out_dir = std::env::var_os(OUT_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| target_dir().join("browser-fault"));
        let snapshot_dir = match std::env::var_os(SNAPSHOTS_ENV) {
            Some(v) if v.is_empty() => None,
            Some(v) => Some(PathBuf::from(v)),
            None => workspace_root().map(|w| w.join("snapshots")),
        };
        TrialSettings {
            out_dir,
            trial_root_base: std::env::temp_dir()
                .join(format!("browser-fault-{}", nix::unistd::getuid())),
            snapshot_dir,
            step_timeout: Duration::from_secs(20),
            lease_ttl: Duration::from_secs(120),
            worker_args: Vec::new(),
            webdriver_url: std::env::var(crate::browser::WEBDRIVER_URL_ENV)
                .ok()
                .filter(|s| !s.is_empty()),
            fast_first_navigation: true,
            seed: None,
        }
    }

    /// Where a trial's evidence goes.
    pub fn evidence_dir(&self, trial_name: &str) -> PathBuf {
        self.out_dir.join("evidence").join(file_name(trial_name))
    }

    /// Takes the out folder's lock named `what` (a trial's evidence folder, a recording's
    /// cache entry), across threads and processes: two runs that would write the same files
    /// at once (nextest's test processes, a suite's cases side by side) take turns. Held
    /// until the returned file is dropped; the lock files stay in `<out>/.locks`.
    pub(crate) async fn hold(&self, what: &str) -> std::io::Result<std::fs::File> {
        let path = self
            .out_dir
            .join(".locks")
            .join(format!("{}.lock", file_name(what)));
        tokio::task::spawn_blocking(move || {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let file = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(&path)?;
            file.lock()?;
            Ok(file)
        })
        .await
        .map_err(std::io::Error::other)?
    }
}

/// A trial name as a file name: `a::b::c` → `a__b__c`.
pub(crate) fn file_name(trial_name: &str) -> String {
    trial_name.replace("::", "__")
}

/// The cargo target folder this binary was built in.
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().unwrap_or(Path::new(".")).to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    // `<target>/<profile>`: one more up.
    dir.pop();
    dir
}

/// The workspace of the package under test: the nearest ancestor of `CARGO_MANIFEST_DIR`
/// (set by cargo when it runs tests) whose `Cargo.toml` declares `[workspace]` and does not
/// `exclude` the package, else the package itself.
fn workspace_root() -> Option<PathBuf> {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    Some(workspace_root_of(&manifest_dir))
}

/// Cargo's own search: a workspace that excludes the package is not its workspace (cargo
/// then looks further up), and a package with no workspace is its own root.
fn workspace_root_of(manifest_dir: &Path) -> PathBuf {
    for dir in manifest_dir.ancestors() {
        let Ok(toml) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        if !toml.lines().any(|l| l.trim() == "[workspace]") {
            continue;
        }
        let excluded = workspace_excludes(&toml)
            .iter()
            .any(|ex| manifest_dir.starts_with(dir.join(ex)));
        if !excluded {
            return dir.to_path_buf();
        }
    }
    manifest_dir.to_path_buf()
}

/// The `exclude` paths of the `[workspace]` table of a `Cargo.toml`: a line scan, not a TOML
/// parser, that reads the usual `exclude = ["a", "b"]` on one line or several.
fn workspace_excludes(toml: &str) -> Vec<String> {
    let mut in_workspace = false;
    let mut list: Option<String> = None;
    for line in toml.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if let Some(list) = &mut list {
            list.push_str(line);
        } else if line.starts_with('[') {
            in_workspace = line == "[workspace]";
        } else if let Some(value) = line
            .strip_prefix("exclude")
            .and_then(|rest| rest.trim_start().strip_prefix('='))
            .filter(|_| in_workspace)
        {
            list = Some(value.to_owned());
        }
        if list.as_deref().is_some_and(|l| l.contains(']')) {
            break;
        }
    }
    list.unwrap_or_default()
        .split(['"', '\''])
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(dir: &Path, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("Cargo.toml"), text).unwrap();
    }

    #[test]
    fn a_member_belongs_to_the_workspace_above_it() {
        let root = tempfile::tempdir().unwrap();
        manifest(root.path(), "[workspace]\nmembers = [\"a\"]\n");
        let member = root.path().join("a");
        manifest(&member, "[package]\nname = \"a\"\n");
        assert_eq!(workspace_root_of(&member), root.path());
    }

    #[test]
    fn a_package_the_workspace_excludes_is_its_own_root() {
        let root = tempfile::tempdir().unwrap();
        manifest(
            root.path(),
            "[workspace]\nmembers = [\"a\"]\nexclude = [\n  \"b\", # a comment\n  \"examples/downstream\",\n]\n[workspace.dependencies]\nexclude = \"x\"\n",
        );
        let excluded = root.path().join("examples/downstream");
        manifest(&excluded, "[package]\nname = \"downstream\"\n");
        assert_eq!(workspace_root_of(&excluded), excluded);
    }

    #[test]
    fn a_package_with_its_own_workspace_is_its_own_root() {
        let root = tempfile::tempdir().unwrap();
        manifest(root.path(), "[workspace]\nmembers = [\"a\"]\n");
        let nested = root.path().join("b");
        manifest(&nested, "[package]\nname = \"b\"\n\n[workspace]\n");
        assert_eq!(workspace_root_of(&nested), nested);
    }

    #[tokio::test]
    async fn a_held_name_is_refused_to_every_other_holder_until_it_is_dropped() {
        let out = tempfile::tempdir().unwrap();
        let mut settings = TrialSettings::from_env();
        settings.out_dir = out.path().to_owned();
        let held = settings
            .hold("send_message::after_click::landed")
            .await
            .unwrap();
        let path = out
            .path()
            .join(".locks/send_message__after_click__landed.lock");
        let other = std::fs::File::open(&path).unwrap();
        assert!(
            matches!(other.try_lock(), Err(std::fs::TryLockError::WouldBlock)),
            "another open of the lock waits while the name is held"
        );
        // Another name is another lock.
        drop(settings.hold("send_message::after_login").await.unwrap());
        drop(held);
        other.try_lock().expect("free once the holder is dropped");
    }

    #[test]
    fn reads_excludes_on_one_line_and_only_from_the_workspace_table() {
        let toml =
            "[package]\nexclude = [\"src/big\"]\n\n[workspace]\nexclude = ['one', \"two\"]\n";
        assert_eq!(workspace_excludes(toml), ["one", "two"]);
        assert!(workspace_excludes("[workspace]\nmembers = [\"a\"]\n").is_empty());
    }
}
