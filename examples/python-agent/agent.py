"""An existing browser agent in Python, on Selenium: it posts "hello" on a thread once.

It signs in, checks who and where it is, records that it is submitting, sends with its own
request key, and waits for its own message to appear. On a restart it finds "submitting" in
its state file, reads the thread, and either finds its message (done) or sends again under
the same key. Its browser is the one browser-fault's worker gives it (the WebDriver URL);
its progress goes to the journal through `browser_fault.py`, and its last word is its claim.

    python agent.py [--variant careful|blind_retry|wrong_account|late_journal]

The variants other than `careful` carry one bug each, for browser-fault to catch.
"""

import argparse
import json
import os
import secrets
import sys

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from browser_fault import Harness, Refused, claim

EFFECT = "post-hello"
THREAD = "42"
WAIT = 20


class Stop(Exception):
    """A safe stop, by its browser-fault name."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class State:
    """Its state file: the key it minted, and how far it got."""

    def __init__(self, folder):
        self.path = os.path.join(folder, "hello-agent.json")
        try:
            with open(self.path) as f:
                saved = json.load(f)
        except FileNotFoundError:
            saved = {"key": "hello-" + secrets.token_hex(8), "phase": "new"}
        self.key = saved["key"]
        self.phase = saved["phase"]
        self.save()

    def save(self):
        """Written to a temporary file, synced, renamed: a crash leaves the old or the new."""
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"key": self.key, "phase": self.phase}, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, self.path)


def attribute(driver, css, name):
    element = WebDriverWait(driver, WAIT, poll_frequency=0.05).until(
        lambda d: d.find_element(By.CSS_SELECTOR, css)
    )
    return element.get_attribute(name)


def page_kind(driver):
    return attribute(driver, "body", "data-page") or ""


def check_identity(driver, account, variant):
    kind = page_kind(driver)
    if kind == "login":
        raise Stop("not_signed_in")
    if kind in ("login-interstitial", "consent"):
        raise Stop("interstitial")
    if kind == "stale":
        raise Stop("stale_target")
    if variant == "wrong_account":
        return  # the bug: it trusts the profile's session to be its own
    if attribute(driver, "body", "data-account-id") != account.id:
        raise Stop("wrong_account")
    if account.tenant is not None and attribute(driver, "body", "data-tenant-id") != account.tenant:
        raise Stop("wrong_tenant")
    # A page can look right while the site's API answers for someone else: ask the API too.
    me = api_identity(driver)
    if me is None:
        raise Stop("not_signed_in")  # the API knows no session here, whatever the page shows
    if me.get("account_id") != account.id:
        raise Stop("wrong_account")
    if account.tenant is not None and me.get("tenant_id") != account.tenant:
        raise Stop("wrong_tenant")


def api_identity(driver):
    """Who the site's API says this session is (`GET /api/me`, from the page), or None."""
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/api/me', {credentials: 'same-origin'})"
        ".then(r => (r.ok ? r.json() : null)).then(done, () => done(null));"
    )


def sign_in(driver, account):
    driver.find_element(By.CSS_SELECTOR, "#login-form input[name=username]").send_keys(account.username)
    driver.find_element(By.CSS_SELECTOR, "#login-form input[name=password]").send_keys(account.password)
    driver.find_element(By.ID, "login").click()
    answer = WebDriverWait(driver, WAIT, poll_frequency=0.05).until(
        # Whatever page answers the sign-in (the thread, an interstitial…): the identity
        # check that follows reads it.
        lambda d: d.find_element(By.CSS_SELECTOR, "body[data-page]:not([data-page=login]), #login-error")
    )
    if answer.get_attribute("id") == "login-error":
        raise Stop("not_signed_in")


def mine_on_thread(driver, url, account, variant, key):
    driver.get(url)
    check_identity(driver, account, variant)
    return bool(driver.find_elements(By.CSS_SELECTOR, f'li.message[data-sent-key="{key}"]'))


def answered_with_mine(driver, key):
    sent = f'[data-sent-key="{key}"]'
    # A success notice without its own message is another send's answer (a look-alike); the
    # first match in document order wins, and the site lists its messages before the notice.
    answers = (
        f"{sent}, body[data-page=stale], body[data-page=unavailable], body:not([data-page]),"
        " #sent-notice"
    )
    answer = WebDriverWait(driver, WAIT, poll_frequency=0.05).until(
        lambda d: d.find_element(By.CSS_SELECTOR, answers)
    )
    if answer.get_attribute("data-page") == "stale":
        # Sent, and answered "stale": what the site did with it is not for it to guess.
        return None
    return answer.get_attribute("data-sent-key") is not None


def post_hello(bf, driver, state, variant):
    account = bf.account()
    url = f"{bf.origin}/threads/{THREAD}"
    record = lambda: bf.intent(EFFECT, args=f"thread={THREAD};body=hello", key=state.key)

    driver.get(url)
    kind = page_kind(driver)
    if kind == "login":
        sign_in(driver, account)
        bf.fault_point("after_login")
    elif kind in ("login-interstitial", "consent"):
        raise Stop("interstitial")
    check_identity(driver, account, variant)

    if state.phase == "submitting" and variant == "blind_retry":
        # The bug: a restart sends again at once, without reading whether the last run did.
        record()
        bf.transition(EFFECT, "ACTION_SUBMITTED")
    elif state.phase == "submitting":
        # A restart: the last run may or may not have sent. Read, never guess.
        if mine_on_thread(driver, url, account, variant, state.key):
            return sent(bf, state)
        record()
        bf.transition(EFFECT, "ACTION_SUBMITTED")  # the resend, journaled before it is sent
    else:
        record()
        bf.fault_point("before_verify")
        driver.get(url)
        check_identity(driver, account, variant)
        if attribute(driver, "main", "data-object-id") != THREAD:
            raise Stop("wrong_object")
        bf.checks("account", "tenant", "api_identity", "object")
        bf.transition(EFFECT, "TARGET_VERIFIED")
        bf.fault_point("after_target_verified")
        state.phase = "submitting"
        state.save()
        if variant != "late_journal":
            bf.transition(EFFECT, "ACTION_SUBMITTED")

    driver.find_element(By.ID, "request-key").send_keys(state.key)
    driver.find_element(By.ID, "body").send_keys("hello")
    driver.find_element(By.CSS_SELECTOR, "button#send").click()
    if variant == "late_journal" and bf.side_effect(EFFECT).state == "TARGET_VERIFIED":
        bf.transition(EFFECT, "ACTION_SUBMITTED")  # the bug: journaled after the click
    bf.fault_point("after_click")
    answered = answered_with_mine(driver, state.key)
    if answered is None:
        bf.transition(EFFECT, "UNKNOWN")
        state.phase = "unknown"
        state.save()
        raise Stop("stale_target")
    if answered or mine_on_thread(driver, url, account, variant, state.key):
        return sent(bf, state)
    bf.transition(EFFECT, "UNKNOWN")
    state.phase = "unknown"
    state.save()
    return "unknown"


def sent(bf, state):
    record = bf.side_effect(EFFECT)
    if record is not None and record.state == "ACTION_SUBMITTED":
        bf.fault_point("after_remote_effect")
        bf.transition(EFFECT, "REMOTE_CONFIRMED")
    state.phase = "sent"
    state.save()
    return "confirmed"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--variant",
        default="careful",
        choices=["careful", "blind_retry", "wrong_account", "late_journal"],
    )
    variant = parser.parse_args().variant
    bf = Harness()
    state = State(bf.state_dir)
    if state.phase == "sent":
        return claim("confirmed")
    if state.phase == "unknown":
        return claim("unknown")
    # Its policy: a profile restored from an older backup, or written by another browser
    # version, is not acted on.
    untrusted = bf.profile()
    if untrusted is not None:
        return claim("safe_stop", untrusted)
    driver = webdriver.Remote(command_executor=bf.webdriver_url, options=Options())
    try:
        claim(post_hello(bf, driver, state, variant))
    except Stop as stop:
        claim("safe_stop", stop.reason)
    except Refused as refused:
        print(f"the journal refused: {refused}", file=sys.stderr)
        sys.exit(1)
    except TimeoutException as e:
        print(f"gave up waiting: {e.msg}", file=sys.stderr)
        sys.exit(1)
    except WebDriverException as e:
        # Its browser died under it (or its session went with it): the next worker verifies.
        # (The harness checks that claim against its browser.)
        print(f"browser error: {type(e).__name__}: {e.msg}", file=sys.stderr)
        claim("browser_crashed")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
