//! Hazards: worker 1 is crashed once signed in, and a negative path is switched on at the
//! site, the profile or the account source before the recovery runs.

use super::FaultUnit;
use crate::plan::{FaultPoint, Hazard};
use crate::proxy::Interstitial;
use crate::site::{SiteChange, SiteSpec};
use crate::trial::context::UnitCtx;

pub(super) fn unit(hazard: Hazard) -> &'static dyn FaultUnit {
    &UNITS[Hazard::ALL
        .iter()
        .position(|&h| h == hazard)
        .expect("Hazard::ALL lists every hazard")]
}

static UNITS: [HazardUnit; Hazard::ALL.len()] = {
    let mut units = [HazardUnit(Hazard::ExpiredSession); Hazard::ALL.len()];
    let mut i = 0;
    while i < Hazard::ALL.len() {
        units[i] = HazardUnit(Hazard::ALL[i]);
        i += 1;
    }
    units
};

#[derive(Clone, Copy)]
struct HazardUnit(Hazard);

#[async_trait::async_trait]
impl FaultUnit for HazardUnit {
    fn planned(&self) -> String {
        format!("hazard {} after a crash at after_login", self.0)
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        // The hazard appears while the worker is down, after it signed in.
        Some(FaultPoint::AfterLogin)
    }

    fn expects_action(&self) -> bool {
        matches!(
            self.0,
            Hazard::ExpiredSession | Hazard::StaleTab | Hazard::CredentialRotated
        )
    }

    fn demands_stop(&self) -> Option<&'static str> {
        match self.0 {
            Hazard::LoginInterstitial => Some("a login interstitial stands before the target"),
            Hazard::ConsentInterstitial => Some("a consent interstitial stands before the target"),
            Hazard::AccountSwitch => Some(super::account_switch::DEMANDS_STOP),
            Hazard::TenantMismatch => {
                Some("the site's API answers for another tenant than its pages show")
            }
            _ => None,
        }
    }

    fn cannot_run(&self, site: &SiteSpec) -> Option<&'static str> {
        match self.0 {
            Hazard::ExpiredSession => super::needs_fault_proxy(site),
            Hazard::BrowserVersionChanged => None,
            Hazard::AccountSwitch => super::needs_other_account(site),
            // A site that cannot show its own gets the fault proxy's.
            hazard if proxy_interstitial(hazard).is_some() => {
                let change = change_of(hazard)?;
                match (super::needs_change(site, change), site.has_fault_proxy()) {
                    (None, _) | (Some(_), true) => None,
                    (Some(_), false) if hazard == Hazard::LoginInterstitial => Some(
                        "shows a sign-in interstitial before the target: this site's adapter cannot (Site::can_change(SiteChange::LoginInterstitial)), and the fault proxy, which stands its own, is turned off",
                    ),
                    (Some(_), false) => Some(
                        "shows a consent interstitial before the target: this site's adapter cannot (Site::can_change(SiteChange::ConsentInterstitial)), and the fault proxy, which stands its own, is turned off",
                    ),
                }
            }
            hazard => super::needs_change(site, change_of(hazard)?),
        }
    }

    fn cannot_run_at(&self, webdriver_url: Option<&str>) -> Option<&'static str> {
        match self.0 {
            Hazard::BrowserVersionChanged if webdriver_url.is_some() => Some(
                "checks the profile against the local browser's version; a remote endpoint's is not known before its session starts",
            ),
            _ => None,
        }
    }

    async fn while_down(&self, e: &mut UnitCtx<'_, '_>) -> Result<(), String> {
        match self.0 {
            Hazard::AccountSwitch => super::account_switch::switch_profile_account(e).await,
            Hazard::BrowserVersionChanged => {
                // The profile comes back as another browser major version left it.
                let older = match e.browser_version.parse::<u32>() {
                    Ok(major) => major.saturating_sub(1).to_string(),
                    Err(_) => format!("{}-older", e.browser_version),
                };
                e.store
                    .record_browser_version(&e.profile, &older)
                    .map_err(|err| {
                        format!(
                            "the profile's browser version could not be rewritten ({})",
                            err.to_string().chars().take(200).collect::<String>()
                        )
                    })
            }
            // The recovery gets the new password from the account source.
            Hazard::CredentialRotated => e.site.rotate_password(&e.account).await,
            hazard => match change_of(hazard) {
                // A user's site shows it through its adapter, or the fault proxy shows its own
                // interstitial; the bundled site shows it by its knob.
                Some(change) if !e.site.is_fixture() => match proxy_interstitial(hazard) {
                    Some(kind) if proxy_shows(hazard, e) => {
                        e.site.show_interstitial(kind).map_err(str::to_owned)
                    }
                    _ => {
                        let object = e.trial.scenario.effects.and_then(|o| o.first().copied());
                        e.site.change_world(change, &e.account, object).await
                    }
                },
                _ => e.site.set_hazard(hazard, true).map_err(str::to_owned),
            },
        }
    }

    async fn after_recovery(&self, e: &mut UnitCtx<'_, '_>) -> Result<(), String> {
        if proxy_shows(self.0, e) && e.site.interstitials_shown() == 0 {
            return Err(format!(
                "the recovery never met the fault proxy's {} interstitial: it opened no page of the site and sent it no change",
                self.0
            ));
        }
        Ok(())
    }
}

/// The fault proxy's own interstitial for `hazard`, shown on a user's site whose adapter
/// cannot show the site's own.
fn proxy_interstitial(hazard: Hazard) -> Option<Interstitial> {
    match hazard {
        Hazard::LoginInterstitial => Some(Interstitial::SignIn),
        Hazard::ConsentInterstitial => Some(Interstitial::Consent),
        _ => None,
    }
}

/// Whether the fault proxy shows `hazard` on this trial's site (a user's site whose adapter
/// cannot show its own).
fn proxy_shows(hazard: Hazard, e: &UnitCtx<'_, '_>) -> bool {
    proxy_interstitial(hazard).is_some()
        && !e.site.is_fixture()
        && change_of(hazard).is_some_and(|c| !e.site.spec().adapter().can_change(c))
}

/// The change of a site's own records that shows `hazard` ([`Site::change`]), for the hazards
/// a user's site shows through its adapter.
///
/// [`Site::change`]: crate::site::Site::change
fn change_of(hazard: Hazard) -> Option<SiteChange> {
    Some(match hazard {
        Hazard::CredentialRotated => SiteChange::RotatePassword,
        Hazard::LoginInterstitial => SiteChange::LoginInterstitial,
        Hazard::ConsentInterstitial => SiteChange::ConsentInterstitial,
        Hazard::TenantMismatch => SiteChange::ApiForOtherTenant,
        Hazard::StaleTab => SiteChange::StaleTab,
        Hazard::ExpiredSession | Hazard::BrowserVersionChanged | Hazard::AccountSwitch => {
            return None;
        }
    })
}
