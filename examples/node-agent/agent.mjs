// An existing browser agent in Node, on playwright-core over CDP: it posts "hello" on a thread
// once.
//
// It signs in, checks who and where it is, records that it is submitting, sends with its own
// request key, and waits for its own message to appear. On a restart it finds "submitting" in
// its state file, reads the thread, and either finds its message (done) or sends again under
// the same key. Its browser is the one browser-fault's worker gives it (the CDP URL, through
// `chromium.connectOverCDP`); its progress goes to the journal through the Node client, and
// its last word is its claim.
//
//     node agent.mjs [careful|blind_retry|wrong_account|quiet]
//
// `blind_retry` and `wrong_account` carry one bug each, for browser-fault to catch; `quiet` is
// careful but reports no checkpoint and marks no boundary (its own state file is its only
// record), to show what browser-fault judges of an agent that tells it nothing.

import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync, renameSync, openSync, fsyncSync, closeSync } from "node:fs";
import { join } from "node:path";

import { chromium, errors } from "playwright-core";

const { Harness, Refused, ProtocolError, claim } = await import(
  process.env.BROWSER_FAULT_NODE_CLIENT
);

const EFFECT = "post-hello";
const THREAD = "42";
const WAIT = 20_000;
const VARIANTS = ["careful", "blind_retry", "wrong_account", "quiet"];

/** A safe stop, by its browser-fault name. */
class Stop extends Error {
  constructor(reason) {
    super(reason);
    this.reason = reason;
  }
}

/** Its state file: the key it minted, and how far it got. */
class State {
  constructor(folder) {
    this.path = join(folder, "hello-agent.json");
    let saved;
    try {
      saved = JSON.parse(readFileSync(this.path, "utf8"));
    } catch (e) {
      if (e.code !== "ENOENT") throw e;
      saved = { key: "hello-" + randomBytes(8).toString("hex"), phase: "new" };
    }
    this.key = saved.key;
    this.phase = saved.phase;
    this.save();
  }

  /** Written to a temporary file, synced, renamed: a crash leaves the old or the new. */
  save() {
    const tmp = this.path + ".tmp";
    writeFileSync(tmp, JSON.stringify({ key: this.key, phase: this.phase }));
    const fd = openSync(tmp, "r+");
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, this.path);
  }
}

const attribute = (page, css, name) =>
  page.locator(css).first().getAttribute(name, { timeout: WAIT });

const pageKind = async (page) => (await attribute(page, "body", "data-page")) ?? "";

async function checkIdentity(page, account, variant) {
  const kind = await pageKind(page);
  if (kind === "login") throw new Stop("not_signed_in");
  if (kind === "login-interstitial" || kind === "consent") throw new Stop("interstitial");
  if (kind === "stale") throw new Stop("stale_target");
  if (variant === "wrong_account") return; // the bug: it trusts the profile's session to be its own
  if ((await attribute(page, "body", "data-account-id")) !== account.id) {
    throw new Stop("wrong_account");
  }
  if (account.tenant !== null && (await attribute(page, "body", "data-tenant-id")) !== account.tenant) {
    throw new Stop("wrong_tenant");
  }
  // A page can look right while the site's API answers for someone else: ask the API too.
  const me = await apiIdentity(page);
  // No answer: the API knows no session here, whatever the page shows.
  if (me === null) throw new Stop("not_signed_in");
  if (me.account_id !== account.id) throw new Stop("wrong_account");
  if (account.tenant !== null && me.tenant_id !== account.tenant) throw new Stop("wrong_tenant");
}

/** Who the site's API says this session is (`GET /api/me`, from the page), or null. */
const apiIdentity = (page) =>
  page.evaluate(() =>
    fetch("/api/me", { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null),
  );

async function signIn(page, account) {
  await page.fill("#login-form input[name=username]", account.username);
  await page.fill("#login-form input[name=password]", account.password);
  await page.click("#login");
  // Whatever page answers the sign-in (the thread, an interstitial…): the identity check
  // that follows reads it.
  const answer = await page.waitForSelector(
    "body[data-page]:not([data-page=login]), #login-error",
    { timeout: WAIT },
  );
  if ((await answer.getAttribute("id")) === "login-error") throw new Stop("not_signed_in");
}

async function mineOnThread(page, url, account, variant, key) {
  await page.goto(url);
  await checkIdentity(page, account, variant);
  return (await page.locator(`li.message[data-sent-key="${key}"]`).count()) > 0;
}

/** True: its own message is there; false: an answer without it; null: "stale". */
async function answeredWithMine(page, key) {
  const sent = `[data-sent-key="${key}"]`;
  // A success notice without its own message is another send's answer (a look-alike); the
  // first match in document order wins, and the site lists its messages before the notice.
  const answers = `${sent}, body[data-page=stale], body[data-page=unavailable], body:not([data-page]), #sent-notice`;
  const answer = await page.waitForSelector(answers, { timeout: WAIT });
  if ((await answer.getAttribute("data-page")) === "stale") {
    // Sent, and answered "stale": what the site did with it is not for it to guess.
    return null;
  }
  return (await answer.getAttribute("data-sent-key")) !== null;
}

async function sent(bf, state) {
  const record = await bf.sideEffect(EFFECT);
  if (record !== null && record.state === "ACTION_SUBMITTED") {
    await bf.faultPoint("after_remote_effect");
    await bf.transition(EFFECT, "REMOTE_CONFIRMED");
  }
  state.phase = "sent";
  state.save();
  return "confirmed";
}

async function postHello(bf, page, state, variant) {
  const account = await bf.account();
  const url = `${bf.origin}/threads/${THREAD}`;
  const record = () => bf.intent(EFFECT, { args: `thread=${THREAD};body=hello`, key: state.key });

  await page.goto(url);
  const kind = await pageKind(page);
  if (kind === "login") {
    await signIn(page, account);
    await bf.faultPoint("after_login");
  } else if (kind === "login-interstitial" || kind === "consent") {
    throw new Stop("interstitial");
  }
  await checkIdentity(page, account, variant);

  if (state.phase === "submitting" && variant === "blind_retry") {
    // The bug: a restart sends again at once, without reading whether the last run did.
    await record();
    await bf.transition(EFFECT, "ACTION_SUBMITTED");
  } else if (state.phase === "submitting") {
    // A restart: the last run may or may not have sent. Read, never guess.
    if (await mineOnThread(page, url, account, variant, state.key)) return sent(bf, state);
    await record();
    await bf.transition(EFFECT, "ACTION_SUBMITTED"); // the resend, journaled before it is sent
  } else {
    await record();
    await bf.faultPoint("before_verify");
    await page.goto(url);
    await checkIdentity(page, account, variant);
    if ((await attribute(page, "main", "data-object-id")) !== THREAD) throw new Stop("wrong_object");
    await bf.checks("account", "tenant", "api_identity", "object");
    await bf.transition(EFFECT, "TARGET_VERIFIED");
    await bf.faultPoint("after_target_verified");
    state.phase = "submitting";
    state.save();
    await bf.transition(EFFECT, "ACTION_SUBMITTED");
  }

  await page.fill("#request-key", state.key);
  await page.fill("#body", "hello");
  // The site may hold its answer: the click returns once it is dispatched.
  await page.click("button#send", { noWaitAfter: true });
  await bf.faultPoint("after_click");
  const answered = await answeredWithMine(page, state.key);
  if (answered === null) {
    await bf.transition(EFFECT, "UNKNOWN");
    state.phase = "unknown";
    state.save();
    throw new Stop("stale_target");
  }
  if (answered || (await mineOnThread(page, url, account, variant, state.key))) {
    return sent(bf, state);
  }
  await bf.transition(EFFECT, "UNKNOWN");
  state.phase = "unknown";
  state.save();
  return "unknown";
}

/** The client with every checkpoint and mark dropped: reads (the account, the profile
 * check) still go to the worker, the journal never hears of the effect. */
function quiet(bf) {
  const silent = new Set(["intent", "transition", "checks", "faultPoint"]);
  return new Proxy(bf, {
    get(target, name) {
      if (silent.has(name)) return async () => ({ key: null, state: null });
      if (name === "sideEffect") return async () => null;
      const value = target[name];
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function main() {
  const variant = process.argv[2] ?? "careful";
  if (!VARIANTS.includes(variant)) {
    console.error(`unknown variant ${variant}: one of ${VARIANTS.join(", ")}`);
    return 2;
  }
  let bf = await Harness.connect();
  if (variant === "quiet") bf = quiet(bf);
  const state = new State(bf.stateDir);
  if (state.phase === "sent") return claim("confirmed");
  if (state.phase === "unknown") return claim("unknown");
  // Its policy: a profile restored from an older backup, or written by another browser
  // version, is not acted on.
  const untrusted = await bf.profile();
  if (untrusted !== null) return claim("safe_stop", untrusted);
  const browser = await chromium.connectOverCDP(bf.cdpUrl, { timeout: WAIT });
  try {
    const context = browser.contexts()[0];
    const page = context.pages()[0] ?? (await context.newPage());
    claim(await postHello(bf, page, state, variant));
  } catch (e) {
    if (e instanceof Stop) {
      claim("safe_stop", e.reason);
    } else if (e instanceof Refused || e instanceof ProtocolError) {
      console.error(`the journal refused: ${e.message}`);
      return 1;
    } else if (e instanceof errors.TimeoutError) {
      console.error(`gave up waiting: ${e.message.split("\n")[0]}`);
      return 1;
    } else if (!browser.isConnected() || /closed|crashed|disconnected/i.test(e.message)) {
      // Its browser died under it: the next worker verifies. (The harness checks that claim
      // against its browser.)
      console.error(`browser error: ${e.message.split("\n")[0]}`);
      claim("browser_crashed");
    } else {
      throw e;
    }
  }
  return 0;
}

// It leaves the browser to the worker: exiting drops its CDP connection, nothing more.
process.exit(await main());
