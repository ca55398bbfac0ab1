//! What a trial does to its scenario: the boundary where the fault engine strikes, the
//! crash mode, the variant, and the hazards switched on at the site.

use std::fmt;
use std::str::FromStr;

/// One of the eight lifecycle points where the fault engine strikes (DESIGN.md, "The eight
/// boundaries").
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Boundary {
    /// The profile and the browser-session record are durable, before the first navigation.
    AfterProfileCreated,
    /// Signed in, before the identity probe.
    AfterLogin,
    /// `TARGET_VERIFIED` is durable, before the click.
    AfterTargetVerified,
    /// The click is dispatched, before the response is observed.
    AfterClick,
    /// The site accepted the effect, before `REMOTE_CONFIRMED` is durable.
    AfterRemoteEffect,
    /// The browser process is SIGKILLed mid-task while the worker lives.
    BrowserCrash,
    /// Before recovery, the profile is replaced by an older backup.
    StaleProfileRestore,
    /// Two workers start on the same profile at once.
    ConcurrentProfile,
}

impl Boundary {
    /// All eight boundaries, in lifecycle order: what `at = "all"` expands to.
    pub const ALL: [Boundary; 8] = [
        Boundary::AfterProfileCreated,
        Boundary::AfterLogin,
        Boundary::AfterTargetVerified,
        Boundary::AfterClick,
        Boundary::AfterRemoteEffect,
        Boundary::BrowserCrash,
        Boundary::StaleProfileRestore,
        Boundary::ConcurrentProfile,
    ];

    /// The name used in `at = "..."` and in trial names.
    pub const fn as_str(self) -> &'static str {
        match self {
            Boundary::AfterProfileCreated => "after_profile_created",
            Boundary::AfterLogin => "after_login",
            Boundary::AfterTargetVerified => "after_target_verified",
            Boundary::AfterClick => "after_click",
            Boundary::AfterRemoteEffect => "after_remote_effect",
            Boundary::BrowserCrash => "browser_crash",
            Boundary::StaleProfileRestore => "stale_profile_restore",
            Boundary::ConcurrentProfile => "concurrent_profile",
        }
    }
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a worker may be armed and strike: one of the eight [`Boundary`]s, or a point of the
/// harness's own that `at` does not take. What evidence names as a worker's `armed` and
/// `struck` point, by the same names as the boundaries.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FaultPoint {
    /// [`Boundary::AfterProfileCreated`].
    AfterProfileCreated,
    /// [`Boundary::AfterLogin`].
    AfterLogin,
    /// [`Boundary::AfterTargetVerified`].
    AfterTargetVerified,
    /// [`Boundary::AfterClick`].
    AfterClick,
    /// [`Boundary::AfterRemoteEffect`].
    AfterRemoteEffect,
    /// [`Boundary::BrowserCrash`].
    BrowserCrash,
    /// [`Boundary::StaleProfileRestore`].
    StaleProfileRestore,
    /// [`Boundary::ConcurrentProfile`].
    ConcurrentProfile,
    /// Not a boundary, and not a crash: the point just before a side effect's verify step
    /// (after sign-in and the identity probe), where the live variants of `after_login`
    /// change the world under the running worker.
    BeforeVerify,
    /// Not a boundary: right after the worker's armed step (a browser command or a journal
    /// write, numbered in the order the worker made them; see `every_step`).
    AfterStep,
}

impl FaultPoint {
    /// The name in evidence: a boundary's own name, `before_verify` or `after_step`.
    pub const fn as_str(self) -> &'static str {
        match self.boundary() {
            Some(b) => b.as_str(),
            None => match self {
                FaultPoint::BeforeVerify => "before_verify",
                _ => "after_step",
            },
        }
    }

    /// The boundary this point is, if it is one of the eight.
    pub const fn boundary(self) -> Option<Boundary> {
        Some(match self {
            FaultPoint::AfterProfileCreated => Boundary::AfterProfileCreated,
            FaultPoint::AfterLogin => Boundary::AfterLogin,
            FaultPoint::AfterTargetVerified => Boundary::AfterTargetVerified,
            FaultPoint::AfterClick => Boundary::AfterClick,
            FaultPoint::AfterRemoteEffect => Boundary::AfterRemoteEffect,
            FaultPoint::BrowserCrash => Boundary::BrowserCrash,
            FaultPoint::StaleProfileRestore => Boundary::StaleProfileRestore,
            FaultPoint::ConcurrentProfile => Boundary::ConcurrentProfile,
            FaultPoint::BeforeVerify | FaultPoint::AfterStep => return None,
        })
    }
}

impl From<Boundary> for FaultPoint {
    fn from(b: Boundary) -> FaultPoint {
        match b {
            Boundary::AfterProfileCreated => FaultPoint::AfterProfileCreated,
            Boundary::AfterLogin => FaultPoint::AfterLogin,
            Boundary::AfterTargetVerified => FaultPoint::AfterTargetVerified,
            Boundary::AfterClick => FaultPoint::AfterClick,
            Boundary::AfterRemoteEffect => FaultPoint::AfterRemoteEffect,
            Boundary::BrowserCrash => FaultPoint::BrowserCrash,
            Boundary::StaleProfileRestore => FaultPoint::StaleProfileRestore,
            Boundary::ConcurrentProfile => FaultPoint::ConcurrentProfile,
        }
    }
}

impl PartialEq<Boundary> for FaultPoint {
    fn eq(&self, b: &Boundary) -> bool {
        self.boundary() == Some(*b)
    }
}

impl fmt::Display for FaultPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A boundary, hazard or crash-mode name that is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{given}`")]
pub struct UnknownName {
    /// What was being parsed ("boundary", "hazard", "crash mode").
    pub what: &'static str,
    /// The name given.
    pub given: String,
}

impl FromStr for Boundary {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Boundary::ALL
            .into_iter()
            .find(|b| b.as_str() == s)
            .ok_or_else(|| UnknownName {
                what: "boundary",
                given: s.to_owned(),
            })
    }
}

/// How a worker dies at the boundary (DESIGN.md, "Crash modes").
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CrashMode {
    /// Each worker is a child process in its own process group, SIGKILLed at the boundary.
    #[default]
    Kill,
    /// The worker is a task in the test process, dropped at the boundary; its browser is killed.
    Abort,
}

impl CrashMode {
    /// The name used in `crash = "..."` and in evidence.
    pub const fn as_str(self) -> &'static str {
        match self {
            CrashMode::Kill => "kill",
            CrashMode::Abort => "abort",
        }
    }
}

impl fmt::Display for CrashMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A negative path switched on at the site or the profile (DESIGN.md, "Hazard").
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Hazard {
    /// The session cookie stops working: the site redirects to login.
    ExpiredSession,
    /// A login interstitial stands before the object.
    LoginInterstitial,
    /// A consent interstitial stands before the object.
    ConsentInterstitial,
    /// The page's markers name one tenant while its API answers for another.
    TenantMismatch,
    /// The session belongs to an account other than the expected one.
    AccountSwitch,
    /// The object changed after the page was loaded.
    StaleTab,
    /// The profile was last written by another browser major version (recorded while the
    /// worker is down): the recovery must stop safely, or migrate by an explicit policy.
    BrowserVersionChanged,
    /// The account's password changes while the worker is down, and its sessions are signed
    /// out: the recovery signs in with the new credential from the account source.
    CredentialRotated,
}

impl Hazard {
    /// Every hazard.
    pub const ALL: [Hazard; 8] = [
        Hazard::ExpiredSession,
        Hazard::LoginInterstitial,
        Hazard::ConsentInterstitial,
        Hazard::TenantMismatch,
        Hazard::AccountSwitch,
        Hazard::StaleTab,
        Hazard::BrowserVersionChanged,
        Hazard::CredentialRotated,
    ];

    /// The name used in `hazards = [...]` and in trial names.
    pub const fn as_str(self) -> &'static str {
        match self {
            Hazard::ExpiredSession => "expired_session",
            Hazard::LoginInterstitial => "login_interstitial",
            Hazard::ConsentInterstitial => "consent_interstitial",
            Hazard::TenantMismatch => "tenant_mismatch",
            Hazard::AccountSwitch => "account_switch",
            Hazard::StaleTab => "stale_tab",
            Hazard::BrowserVersionChanged => "browser_version_changed",
            Hazard::CredentialRotated => "credential_rotated",
        }
    }

    /// Whether the site must switch the hazard on (the others are the harness's: the
    /// profile's marker, the account source).
    pub const fn is_site_hazard(self) -> bool {
        !matches!(self, Hazard::BrowserVersionChanged)
    }
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Hazard {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Hazard::ALL
            .into_iter()
            .find(|h| h.as_str() == s)
            .ok_or_else(|| UnknownName {
                what: "hazard",
                given: s.to_owned(),
            })
    }
}

/// Which world a boundary's fault strikes in: `landed` or `lost` for `after_click`,
/// `account_switched` for `after_target_verified`, and so on.
///
/// Each variant is declared beside the fault unit of its boundary (the harness's
/// `trial/faults/` folder), where everything it does to a trial lives; the constants below
/// are the ones that exist. Variants compare, hash and serialize as their names.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Variant(&'static str);

impl Variant {
    /// A variant of this name (its fault unit declares it).
    pub(crate) const fn named(name: &'static str) -> Variant {
        Variant(name)
    }

    /// The name in trial names.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Debug for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl serde::Serialize for Variant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_point_is_named_as_its_boundary_and_reads_back() {
        for b in Boundary::ALL {
            let p = FaultPoint::from(b);
            assert_eq!(p.as_str(), b.as_str());
            assert_eq!(p.boundary(), Some(b));
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                serde_json::to_string(&b).unwrap()
            );
        }
        for (p, name) in [
            (FaultPoint::BeforeVerify, "before_verify"),
            (FaultPoint::AfterStep, "after_step"),
        ] {
            assert_eq!(p.to_string(), name);
            assert_eq!(p.boundary(), None);
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{name}\""));
            let back: FaultPoint = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(back, p);
            assert!(
                name.parse::<Boundary>().is_err(),
                "`at` does not take {name}"
            );
        }
    }
}
