//! A fault point, worker side: the screenshot, the report to the trial, the wait for its
//! word (and the reload it may ask for), and the cookie values reported as secrets.

use std::path::Path;
use std::time::Duration;

use super::{Shared, WorkerSpec};
use crate::browser::{Browser, SessionToken};
use crate::fault::{Resume, ScreenshotRef, Shot};
use crate::plan::FaultPoint;

pub(crate) async fn strike(shared: &Shared, token: Option<SessionToken>, boundary: FaultPoint) {
    shared.fault.crossed(boundary).await;
    if !shared.fault.is_armed_for(boundary) {
        return;
    }
    let cookies = cookies_at(shared, token, boundary).await;
    let screenshot = if boundary == FaultPoint::AfterClick {
        // The click is out: the site may hold the navigation it began, and whether the
        // screenshot, or the check of the page's text that follows it, meets that held
        // navigation would depend on how fast the click's timer fired (the evidence would
        // change with the machine's load). The helpers take this point's screenshot ahead
        // of the click ([`super::Worker::screenshot_ahead`]); a point marked after it has none.
        shared
            .log
            .line("fault point after_click: no screenshot (the page may wait on the site)");
        Shot::default()
    } else {
        take_screenshot(shared, token, boundary, &cookies).await
    };
    report_strike(shared, token, boundary, screenshot, cookies).await;
}

/// The cookie values the browser holds at `boundary`'s fault point: secrets for the
/// screenshot check and for the evidence. None after a click: the site may hold the
/// navigation, and every command would wait on it (that point's screenshot is taken ahead of
/// the click; the recovery worker reports the cookies of the same profile at its end).
pub(super) async fn cookies_at(
    shared: &Shared,
    token: Option<SessionToken>,
    boundary: FaultPoint,
) -> Vec<String> {
    if boundary == FaultPoint::AfterClick {
        Vec::new()
    } else {
        cookie_values(shared, token).await
    }
}

/// Takes the fault point's screenshot and keeps it only once the page it shows is checked:
/// its rendered text and the values of its fields (not `type=password` ones, which show
/// dots) must hold no secret the worker knows (the account's password, the `cookies` the
/// browser holds). A page that shows one, or cannot be checked, is not kept: a byte scan of
/// the evidence cannot read pixels.
pub(super) async fn take_screenshot(
    shared: &Shared,
    token: Option<SessionToken>,
    boundary: FaultPoint,
    cookies: &[String],
) -> Shot {
    let Some(driver) = token.and_then(|t| shared.registry.driver(t).ok()) else {
        return Shot::default();
    };
    let Some(dir) = shared.fault.screenshot_dir() else {
        return Shot::default();
    };
    let Ok(Ok(png)) = tokio::time::timeout(PAGE_READ_WAIT, driver.screenshot_as_png()).await else {
        return Shot::default();
    };
    let mut secrets = vec![(
        "the account's password",
        shared.spec.account.password.expose().to_owned(),
    )];
    secrets.extend(cookies.iter().map(|c| ("a cookie's value", c.clone())));
    // As long as the screenshot may take: a page that answers one answers this too.
    let shown = tokio::time::timeout(
        PAGE_READ_WAIT,
        driver.execute(SHOWN_TEXT_SCRIPT, Vec::new()),
    )
    .await;
    let shown = match shown {
        Ok(Ok(ret)) => match serde_json::from_value::<ShownText>(ret.json().clone()) {
            Ok(shown) => Some(shown),
            Err(e) => {
                shared
                    .log
                    .line(&format!("fault point {boundary}: the page's text: {e}"));
                None
            }
        },
        Ok(Err(e)) => {
            // The first line says what failed; the rest is chromedriver's stack.
            let e = e.to_string();
            let what = e.lines().find(|l| l.contains("error:")).unwrap_or("failed");
            shared.log.line(&format!(
                "fault point {boundary}: the page's text: {}",
                what.trim()
            ));
            None
        }
        Err(_) => None,
    };
    let withheld = match shown {
        None => Some("not kept: the page could not be checked for secrets".to_owned()),
        Some(shown) => shown.secret_shown(&secrets),
    };
    if let Some(why) = withheld {
        shared
            .log
            .line(&format!("fault point {boundary}: screenshot {why}"));
        return Shot {
            kept: None,
            withheld: Some(why),
        };
    }
    Shot {
        kept: save_screenshot(dir, &shared.spec, boundary, &png),
        withheld: None,
    }
}

/// How long a fault point's reads of the page may take (its screenshot, the check of the
/// text it shows, the browser's cookies): a page that cannot answer within it has none. Far
/// above what they take on a loaded machine (tens of ms), so that load never changes what
/// the evidence holds; only a page that hangs waits it out.
const PAGE_READ_WAIT: Duration = Duration::from_secs(5);

/// What a page shows, as a screenshot would: the rendered text of the document and of its
/// same-origin frames, and the values of the fields that show their value.
const SHOWN_TEXT_SCRIPT: &str = r#"
const docs = [document];
for (const frame of document.querySelectorAll('iframe, frame')) {
  try { if (frame.contentDocument) docs.push(frame.contentDocument); } catch (e) {}
}
const text = [];
const fields = [];
for (const doc of docs) {
  if (doc.body) text.push(doc.body.innerText || '');
  for (const el of doc.querySelectorAll('input, textarea, select')) {
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (type === 'password' || type === 'hidden') continue;
    fields.push(String(el.value || ''));
  }
}
return { text: text.join('\n'), fields: fields };
"#;

/// The answer of [`SHOWN_TEXT_SCRIPT`].
#[derive(serde::Deserialize)]
struct ShownText {
    text: String,
    fields: Vec<String>,
}

impl ShownText {
    /// Why the screenshot is withheld, when the page shows one of `secrets` (compared
    /// without case: CSS may change it): the secret's kind and where, never its value.
    fn secret_shown(&self, secrets: &[(&str, String)]) -> Option<String> {
        let text = self.text.to_lowercase();
        let fields: Vec<String> = self.fields.iter().map(|f| f.to_lowercase()).collect();
        secrets
            .iter()
            .filter(|(_, value)| value.len() >= MIN_SECRET_LEN)
            .find_map(|(kind, value)| {
                let value = value.to_lowercase();
                if fields.iter().any(|f| f.contains(&value)) {
                    Some(format!(
                        "not kept: the page showed {kind} in a field's value"
                    ))
                } else if text.contains(&value) {
                    Some(format!("not kept: the page showed {kind} in its text"))
                } else {
                    None
                }
            })
    }
}

pub(super) async fn report_strike(
    shared: &Shared,
    token: Option<SessionToken>,
    boundary: FaultPoint,
    screenshot: Shot,
    cookies: Vec<String>,
) {
    let pid = token.and_then(|t| {
        shared
            .registry
            .with_browser(t, Browser::browser_pid)
            .ok()
            .flatten()
    });
    shared.log.line(&format!("fault point {boundary} reached"));
    let word = shared
        .fault
        .strike(boundary, screenshot, pid, cookies)
        .await;
    if word == Resume::Reload
        && let Some(driver) = token.and_then(|t| shared.registry.driver(t).ok())
    {
        // The world changed while the worker waited; its tab shows the new world.
        let _ = tokio::time::timeout(shared.spec.step_timeout, driver.refresh()).await;
        shared.log.line("the page was reloaded under the worker");
    }
}

/// The shortest cookie value treated as a secret: shorter ones (`1`, `yes`, a consent flag)
/// would redact ordinary words.
const MIN_SECRET_LEN: usize = 8;

pub(super) async fn cookie_values(shared: &Shared, token: Option<SessionToken>) -> Vec<String> {
    let Some(driver) = token.and_then(|t| shared.registry.driver(t).ok()) else {
        return Vec::new();
    };
    match tokio::time::timeout(PAGE_READ_WAIT, driver.get_all_cookies()).await {
        Ok(Ok(cookies)) => cookies
            .into_iter()
            .map(|c| c.value)
            .filter(|v| v.len() >= MIN_SECRET_LEN)
            .collect(),
        _ => Vec::new(),
    }
}

fn save_screenshot(
    dir: &Path,
    spec: &WorkerSpec,
    boundary: FaultPoint,
    png: &[u8],
) -> Option<ScreenshotRef> {
    use sha2::Digest;
    let file = format!("w{}-{}.png", spec.incarnation, boundary);
    std::fs::create_dir_all(dir).ok()?;
    std::fs::write(dir.join(&file), png).ok()?;
    let sha256 = sha2::Sha256::digest(png)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(ScreenshotRef { file, sha256 })
}

#[cfg(test)]
mod tests {
    use super::ShownText;

    fn shown(text: &str, fields: &[&str]) -> ShownText {
        ShownText {
            text: text.to_owned(),
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    #[test]
    fn a_page_that_shows_a_secret_is_named_by_kind_and_place_never_by_value() {
        let secrets = [
            ("the account's password", "hunter2-CANARY".to_owned()),
            ("a cookie's value", "sess-0123456789".to_owned()),
        ];
        let in_field = shown("Compose", &["hunter2-canary"]).secret_shown(&secrets);
        assert_eq!(
            in_field.as_deref(),
            Some("not kept: the page showed the account's password in a field's value")
        );
        let in_text = shown("token: SESS-0123456789", &[]).secret_shown(&secrets);
        assert_eq!(
            in_text.as_deref(),
            Some("not kept: the page showed a cookie's value in its text")
        );
        assert!(!in_text.unwrap().contains("0123456789"));
        assert_eq!(shown("hello", &["hello"]).secret_shown(&secrets), None);
    }

    #[test]
    fn a_short_value_is_no_secret_to_look_for() {
        // A consent flag `yes` would withhold every page that says "yes".
        let secrets = [("a cookie's value", "yes".to_owned())];
        assert_eq!(shown("yes, send it", &[]).secret_shown(&secrets), None);
    }
}
