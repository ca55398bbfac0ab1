#!/usr/bin/env python3
"""probe.py — drive a real headless Chromium through chromedriver (W3C WebDriver over plain HTTP,
stdlib only) against a running Roundup tracker and print what FINDINGS.md states.

usage: probe.py BASE_URL CHROMEDRIVER_URL ADMIN_PASSWORD ALICE_PASSWORD
  e.g. probe.py http://127.0.0.1:18917/tracker/ http://127.0.0.1:19515 admin-pw-Adm1n alice-pw-Al1ce
Start chromedriver yourself (chromedriver --port=19515) and the tracker (start.sh DIR PORT) on an
empty db (reset.sh DIR). Exits non-zero on the first expectation that does not hold.
"""
import base64
import json
import re
import sys
import tempfile
import time
import urllib.parse
import urllib.request

BASE, WD, ADMIN_PW, ALICE_PW = sys.argv[1:5]
ELEM = "element-6066-11e4-a52e-4f735466cecf"


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(WD + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.load(r)["value"]
    except urllib.error.HTTPError as e:
        return {"webdriver_error": json.load(e)["value"]}


def ledger(query=""):
    url = BASE + "rest/data/issue?@fields=title,creator,creation&@verbose=2" + query
    req = urllib.request.Request(url, headers={
        "Authorization": "Basic " + base64.b64encode(f"admin:{ADMIN_PW}".encode()).decode()})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)["data"]


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        sys.exit(1)


profile = tempfile.mkdtemp(prefix="roundup-probe-")
caps = {"capabilities": {"alwaysMatch": {
    "browserName": "chrome", "unhandledPromptBehavior": "ignore",
    "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": [
        "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"]}}}}
sid = call("POST", "/session", caps)["sessionId"]
S = f"/session/{sid}"


def go(url):
    t = time.monotonic()
    call("POST", S + "/url", {"url": url})
    return time.monotonic() - t


def url():
    return call("GET", S + "/url")


def find(css):
    v = call("POST", S + "/elements", {"using": "css selector", "value": css})
    return [e[ELEM] for e in v] if isinstance(v, list) else []


def text(css):
    els = find(css)
    return call("GET", f"{S}/element/{els[0]}/text") if els else None


def typ(css, s):
    el = find(css)[0]
    call("POST", f"{S}/element/{el}/clear", {})
    call("POST", f"{S}/element/{el}/value", {"text": s})


def click(css):
    return call("POST", f"{S}/element/{find(css)[0]}/click", {})


def wait(pred, what, timeout=15):
    """Poll until pred() is truthy: a click that submits a form may return before the next page is there."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            v = pred()
        except Exception:
            v = None
        if v:
            return v
        time.sleep(0.05)
    check(False, "timed out waiting for " + what)


def click_and_wait_url(css, pred, what):
    before = url()
    click(css)
    return wait(lambda: (u := url()) != before and isinstance(u, str) and pred(u) and
                js("return document.readyState") == "complete" and u, what)


def js(src, *args):
    return call("POST", S + "/execute/sync", {"script": src, "args": list(args)})


LOGIN_USER = 'input[name="__login_name"]'
LOGIN_PASS = 'input[name="__login_password"]'
LOGIN_SUBMIT = 'form:has(input[name="@action"][value="Login"]) input[type="submit"]'
WHO = "nav p.userblock > b"
OK = "p.ok-message"
ERR = "p.error-message"
try:
    t = go(BASE)
    nav = js("const n=performance.getEntriesByType('navigation')[0];"
             "return [n.responseStart-n.requestStart, n.loadEventEnd-n.startTime];")
    print(f"info index page: webdriver navigate {t*1000:.0f} ms; TTFB {nav[0]:.0f} ms; load {nav[1]:.0f} ms")
    check(len(find(LOGIN_USER)) == 1 and len(find(LOGIN_PASS)) == 1 and len(find(LOGIN_SUBMIT)) == 1,
          "sign-in form present on the front page (anonymous)")
    check(text(WHO) == "Login", f"anonymous: {WHO} reads {text(WHO)!r} (no 'Hello, ...')")

    typ(LOGIN_USER, "alice"); typ(LOGIN_PASS, "wrong-password")
    click_and_wait_url(LOGIN_SUBMIT, lambda u: "error_message" in u, "refused-login page")
    check(text(ERR) == "Invalid login", f"refused login: {ERR} = {text(ERR)!r}; url {url()}")
    check(len(find(LOGIN_USER)) == 1, "sign-in form still shown after refusal")

    typ(LOGIN_USER, "alice"); typ(LOGIN_PASS, ALICE_PW)
    click_and_wait_url(LOGIN_SUBMIT, lambda u: "ok_message" in u, "signed-in page")
    check(text(WHO) == "Hello, alice", f"signed in: {WHO} = {text(WHO)!r}; {OK} = {text(OK)!r}; url {url()}")
    check(find(LOGIN_USER) == [], "no sign-in form when signed in")
    me = call("GET", f"{S}/element/{find('nav p.userblock a[href^=user]')[0]}/attribute/href")
    print(f"info 'Your Details' link (user id): {me}")
    cookies = call("GET", S + "/cookie")
    print("info cookies: " + json.dumps([{k: c.get(k) for k in ("name", "path", "httpOnly", "sameSite", "expiry")}
                                         for c in cookies]))
    # REST with the browser's session cookie (GET needs no extra header)
    go(BASE + "rest/data/user/" + me.rsplit("user", 1)[1] + "?@fields=username")
    body = js("return document.body.innerText")
    check('"username": "alice"' in body, "REST GET with the browser's session cookie sees alice")

    # create an issue; title and priority come prefilled from the URL
    key = "probe-" + str(int(time.time()))
    title = f"Probe issue [rk:{key}]"
    go(BASE + "issue?@template=item&priority=3&title=" + urllib.parse.quote(title))
    check(js("return document.querySelector('#title').value") == title, "title prefilled from ?title=")
    csrf1 = js("return document.querySelector('form[name=itemSynopsis] input[name=\"@csrf\"]').value")
    typ('textarea[name="@note"]', "body of the probe message")
    t = time.monotonic()
    u = click_and_wait_url("#submit_button", lambda u: re.search(r"/issue\d+", u), "issue page")
    t = time.monotonic() - t
    m = re.search(r"/issue(\d+)(\?|$)", u)
    check(m is not None, f"after submit url {u} ({t*1000:.0f} ms)")
    n = m.group(1)
    print(f"info ok-message: {text(OK)!r}; document.title: {js('return document.title')!r}")
    check(f"issue {n} created" in (text(OK) or ""), f"ok-message names issue {n}")
    check(len(ledger("&title=" + urllib.parse.quote(f"[rk:{key}]"))["collection"]) == 1, "ledger: one issue for key")

    # Back to the same form (same @csrf) and submit again: refused, single-use token
    call("POST", S + "/back", {})
    csrf2 = js("return document.querySelector('form[name=itemSynopsis] input[name=\"@csrf\"]').value")
    print(f"info after history.back(): same csrf token as before: {csrf1 == csrf2}; url {url()}")
    r = click("#submit_button")
    alert = call("GET", S + "/alert/text")
    print(f"info click submit at once on the page restored by back: alert {alert!r}")
    if isinstance(alert, str):
        call("POST", S + "/alert/accept", {})
    time.sleep(6)  # submit_once() forgets the first submit after 5 s
    click_and_wait_url("#submit_button", lambda u: u.endswith("/tracker/issue"), "csrf-refusal page")
    print(f"info resubmit of that page 6 s later: url {url()}; error {text(ERR)!r}")
    check("csrf failure" in (text(ERR) or ""), "old page resubmitted (spent @csrf) is refused")
    c = len(ledger("&title=" + urllib.parse.quote(f"[rk:{key}]"))["collection"])
    check(c == 1, f"ledger count for key after resubmitting the old page: {c}")
    kept = js("return document.querySelector('#title').value")
    csrf3 = js("return document.querySelector('form[name=itemSynopsis] input[name=\"@csrf\"]').value")
    print(f"info form after the refusal keeps the typed title: {kept!r}; carries a new csrf token: {csrf3 != csrf1}")

    # reload the form (new token) and submit the same thing: a duplicate is created
    go(BASE + "issue?@template=item&priority=3&title=" + urllib.parse.quote(title))
    typ('textarea[name="@note"]', "body of the probe message")
    click_and_wait_url("#submit_button", lambda u: re.search(r"/issue\d+", u), "second issue page")
    c = len(ledger("&title=" + urllib.parse.quote(f"[rk:{key}]"))["collection"])
    check(c == 2, f"fresh form, same data: ledger count {c} (duplicate accepted); url {url()}")

    # double click on submit: the page's submit_once() raises alert() on the second submit in 5 s
    go(BASE + "issue?@template=item&priority=3&title=" + urllib.parse.quote("double click [rk:dbl-" + key + "]"))
    js("const f=document.forms.itemSynopsis; f.addEventListener('submit', e => {}); "
       "window.__r1 = f.onsubmit(); window.__r2 = f.onsubmit(); return [window.__r1, window.__r2];")
    alert = call("GET", S + "/alert/text")
    print(f"info calling the form's onsubmit twice -> alert text: {alert!r}")
    if isinstance(alert, str):
        call("POST", S + "/alert/accept", {})

    # sign out
    go(BASE)
    click('nav p.userblock a[href*="@action=logout"]')
    wait(lambda: js("return document.readyState") == "complete" and find(LOGIN_USER), "sign-in form after logout")
    check(len(find(LOGIN_USER)) == 1 and text(WHO) == "Login", f"after logout sign-in form again; url {url()}")
finally:
    call("DELETE", S)
