//! Finding Chromium and chromedriver: `BROWSER_FAULT_CHROME` / `BROWSER_FAULT_CHROMEDRIVER`,
//! else `PATH`. Their major versions must match.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variable naming the Chromium binary.
pub(super) const CHROME_ENV: &str = "BROWSER_FAULT_CHROME";
/// The environment variable naming the chromedriver binary.
pub(crate) const CHROMEDRIVER_ENV: &str = "BROWSER_FAULT_CHROMEDRIVER";
/// The environment variable naming a remote WebDriver endpoint to use instead of a local
/// chromedriver.
pub(crate) const WEBDRIVER_URL_ENV: &str = "BROWSER_FAULT_WEBDRIVER_URL";

const CHROME_NAMES: &[&str] = &["chromium", "chromium-browser", "google-chrome", "chrome"];
const CHROMEDRIVER_NAMES: &[&str] = &["chromedriver"];

/// The browser and driver a worker launches, with their versions.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BrowserBinaries {
    /// The Chromium (or Chrome) executable.
    pub chrome: PathBuf,
    /// The chromedriver executable.
    pub chromedriver: PathBuf,
    /// Chromium's full version, e.g. `156.0.8078.114`.
    pub chrome_version: String,
    /// chromedriver's full version.
    pub chromedriver_version: String,
}

/// Why the browser binaries could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreflightError {
    /// A binary is neither named by its variable nor on `PATH`.
    #[error(
        "{what} not found: set {env} or run `cargo xtask drill`, which installs the Debian packages `chromium` and `chromium-driver`"
    )]
    NotFound {
        /// "chromium" or "chromedriver".
        what: &'static str,
        /// The variable that would name it.
        env: &'static str,
    },
    /// A binary named by its variable does not exist.
    #[error("{env} names {path}, which does not exist")]
    Missing {
        /// The variable.
        env: &'static str,
        /// What it names.
        path: PathBuf,
    },
    /// A binary did not answer `--version`.
    #[error("failed to read the version of {path}")]
    Version {
        /// The binary.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Chromium and chromedriver have different major versions.
    #[error(
        "chromium {chrome} and chromedriver {chromedriver} differ in major version: install matching versions (Debian: `apt-get install chromium chromium-driver`)"
    )]
    VersionMismatch {
        /// Chromium's version.
        chrome: String,
        /// chromedriver's version.
        chromedriver: String,
    },
}

impl BrowserBinaries {
    /// Finds both binaries and checks that their major versions match.
    pub fn discover() -> Result<Self, PreflightError> {
        let chrome = locate("chromium", CHROME_ENV, CHROME_NAMES)?;
        let chromedriver = locate("chromedriver", CHROMEDRIVER_ENV, CHROMEDRIVER_NAMES)?;
        let chrome_version = version_of(&chrome)?;
        let chromedriver_version = version_of(&chromedriver)?;
        if major(&chrome_version) != major(&chromedriver_version) {
            return Err(PreflightError::VersionMismatch {
                chrome: chrome_version,
                chromedriver: chromedriver_version,
            });
        }
        Ok(BrowserBinaries {
            chrome,
            chromedriver,
            chrome_version,
            chromedriver_version,
        })
    }

    /// [`discover`](Self::discover) once per process: asking Chromium its version costs a
    /// process start (about 0.1 s), which every trial and worker would otherwise pay.
    pub fn discover_cached() -> Result<Self, PreflightError> {
        static FOUND: std::sync::OnceLock<BrowserBinaries> = std::sync::OnceLock::new();
        if let Some(found) = FOUND.get() {
            return Ok(found.clone());
        }
        let found = Self::discover()?;
        Ok(FOUND.get_or_init(|| found).clone())
    }

    /// Chromium's major version, as recorded in a profile's owner marker.
    pub fn major_version(&self) -> &str {
        major(&self.chrome_version)
    }
}

fn locate(
    what: &'static str,
    env: &'static str,
    names: &[&str],
) -> Result<PathBuf, PreflightError> {
    if let Some(given) = std::env::var_os(env).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(given);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(PreflightError::Missing { env, path })
        };
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path_var) {
        for name in names {
            let candidate = dir.join(name);
            if is_executable(&candidate) {
                return Ok(candidate);
            }
        }
    }
    Err(PreflightError::NotFound { what, env })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn version_of(path: &Path) -> Result<String, PreflightError> {
    let out = Command::new(path)
        .arg("--version")
        .output()
        .map_err(|source| PreflightError::Version {
            path: path.to_owned(),
            source,
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_version(&text).ok_or_else(|| PreflightError::Version {
        path: path.to_owned(),
        source: std::io::Error::other("no version number in its `--version` output"),
    })
}

/// The first dotted number in a `--version` line: `Chromium 156.0.8078.114 built on …`.
fn parse_version(text: &str) -> Option<String> {
    text.split_whitespace()
        .find(|w| {
            w.contains('.')
                && w.split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_owned)
}

fn major(version: &str) -> &str {
    version.split('.').next().unwrap_or(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_chromium_and_chromedriver_version_lines() {
        assert_eq!(
            parse_version("Chromium 156.0.8078.114 built on Debian GNU/Linux 12 (bookworm)")
                .as_deref(),
            Some("156.0.8078.114")
        );
        assert_eq!(
            parse_version(
                "ChromeDriver 156.0.8078.114 (ea19f97373-refs/branch-heads/8078_108@{#5})"
            )
            .as_deref(),
            Some("156.0.8078.114")
        );
        assert_eq!(parse_version("no digits here"), None);
    }

    #[test]
    fn compares_major_versions_only() {
        assert_eq!(major("156.0.8078.114"), major("156.0.1.2"));
        assert_ne!(major("156.0.8078.114"), major("155.0.8078.114"));
    }
}
