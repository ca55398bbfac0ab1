'use strict';
// One incarnation of the careful agent, hand-written with Playwright: the drill's
// reference agent (suites/src/lib.rs `send_hello`) and the worker's protocol
// (harness/src/worker), as a Playwright user would write them.
//
// The parent starts the process ahead (node up, Playwright loaded, as Playwright Test keeps
// its workers warm; the first line on stdout says it is loaded) and hands it the spec as the
// first line on stdin. Events go to the
// parent as JSON lines on stdout; at an armed fault point the worker reports and waits for
// a line on stdin (`resume` or `reload`), and is usually SIGKILLed with its process group
// instead.

const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const { performance } = require('node:perf_hooks');
const { chromium } = require('playwright-core');
const lib = require('./lib');

let spec = { incarnation: '?' };
const ROUTE = '/threads/42';
const OBJECT = '42';
const EFFECT = 'send-hello';

// The headless flags of the harness (harness/src/browser/mod.rs, HEADLESS_FLAGS).
const HEADLESS_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
  '--password-store=basic',
  '--window-size=1024,768',
];

class Stop extends Error {
  constructor(type, reason) {
    super(`${type}: ${reason}`);
    this.type = type;
    this.reason = reason;
  }
}
const safeStop = (reason) => new Stop('safe_stop', reason);

const timing = { launch_ms: 0, browser_ms: 0, quit_ms: 0 };
const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const TRACE = !!process.env.BF_PEER_TRACE;
const T0 = performance.now();
const log = (line) => process.stderr.write(`w${spec.incarnation} +${(performance.now() - T0).toFixed(0)}: ${line}\n`);

// The parent's words, one per line.
const words = [];
const waiting = [];
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const w = waiting.shift();
  if (w) w(line.trim());
  else words.push(line.trim());
});
const nextWord = () => (words.length ? Promise.resolve(words.shift()) : new Promise((r) => waiting.push(r)));

let context = null;
let page = null;
let browserPid = null;

const rounded = () => ({
  launch_ms: Math.round(timing.launch_ms),
  browser_ms: Math.round(timing.browser_ms),
  quit_ms: Math.round(timing.quit_ms),
});

/// Time inside the browser: the agent's page work.
async function step(fn, name = fn.name || 'step') {
  const started = performance.now();
  try {
    return await fn();
  } finally {
    const took = performance.now() - started;
    timing.browser_ms += took;
    if (TRACE) log(`${name} ${took.toFixed(0)} ms`);
  }
}

async function screenshot(boundary) {
  if (!spec.evidence_dir || !page) return null;
  const file = path.join(spec.evidence_dir, `w${spec.incarnation}-${boundary}.png`);
  try {
    await step(() => page.screenshot({ path: file, timeout: 5000 }), 'screenshot');
    return path.basename(file);
  } catch {
    return null;
  }
}

/// A fault point: when armed, screenshot, report, and wait for the parent's word.
async function strike(boundary, shot) {
  if (spec.armed !== boundary) return;
  const file = shot === undefined ? await screenshot(boundary) : shot;
  emit({ ev: 'boundary', name: boundary, screenshot: file, browser_pid: browserPid, timing: rounded() });
  const word = await nextWord();
  if (word === 'reload' && page) await step(() => page.reload(), 'reload');
}

function browserAlive() {
  return browserPid !== null && lib.pidAlive(browserPid);
}

/// Chromium's main process: our child on this profile, without `--type=`.
function findBrowserPid() {
  for (const pid of lib.processesUsingProfile(spec.profile)) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes('--type=')) return pid;
    } catch {}
  }
  return null;
}

async function markers() {
  return step(function markers() { return (
    page.evaluate(() => {
      const b = document.body;
      const o = document.querySelector('[data-object-id]');
      return {
        page: b ? b.dataset.page || null : null,
        account: b ? b.dataset.accountId || null : null,
        tenant: b ? b.dataset.tenantId || null : null,
        object: o ? o.dataset.objectId : null,
        origin: location.origin,
        path: location.pathname,
      };
    }));
  });
}

/// A read-only GET from inside the page, with the session's cookies.
async function apiGet(route) {
  return step(function apiGet() { return (
    page.evaluate(async (r) => {
      try {
        const res = await fetch(r, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
        const text = await res.text();
        let body = null;
        try {
          body = JSON.parse(text);
        } catch {}
        return [res.status, body];
      } catch {
        return [0, null];
      }
    }, route));
  });
}

async function signIn() {
  const a = spec.account;
  await step(() => page.fill('#login-form input[name=username]', a.username), 'fill');
  await step(() => page.fill('#login-form input[name=password]', a.password), 'fill');
  await step(() => page.click('button#login'), 'click');
  await step(() => page.waitForSelector('#login-error, body:not([data-page=login])'), 'wait_for_any');
  if (await step(() => page.$('#login-error'), '$')) throw safeStop('not_signed_in');
  log('signed in');
  await strike('after_login');
}

/// Who the site says this session is: never trusted from the profile.
async function probeIdentity() {
  const [status, me] = await apiGet('/api/me');
  if (status === 401 || status === 403) throw safeStop('not_signed_in');
  if (!me || typeof me.account_id !== 'string') throw new Stop('failure', 'unexpected /api/me');
  if (me.account_id !== spec.account.id) throw safeStop('wrong_account');
  if (me.tenant_id !== spec.account.tenant) throw safeStop('wrong_tenant');
}

/// The page must be the target: no interstitial, origin, route, account, tenant, object.
async function verifyTarget() {
  const m = await markers();
  if (m.page === 'login') throw safeStop('not_signed_in');
  if (m.page === 'login-interstitial' || m.page === 'consent') throw safeStop('interstitial');
  if (m.page === 'stale') throw safeStop('stale_target');
  if (m.origin !== spec.origin) throw safeStop('wrong_route');
  if (!(m.path === ROUTE || m.path.startsWith(`${ROUTE}/`))) throw safeStop('wrong_route');
  if (m.account !== spec.account.id) throw safeStop('wrong_account');
  if (m.tenant !== spec.account.tenant) throw safeStop('wrong_tenant');
  if (m.object !== OBJECT) throw safeStop('wrong_object');
  return ['no_interstitial', 'origin', 'route', 'account', 'tenant', 'object'];
}

async function effectStatus(key) {
  const [status, body] = await apiGet(`/api/effects/${key}`);
  if (status === 401) throw safeStop('not_signed_in');
  if (!body || typeof body.exists !== 'boolean') throw new Stop('failure', 'unexpected effect status');
  return body.exists;
}

/// An ACTION_SUBMITTED resolved read-only, never by sending again.
async function settle(journal, key) {
  if (await effectStatus(key)) {
    journal.transition(key, 'ACTION_SUBMITTED', 'REMOTE_CONFIRMED', spec.incarnation);
    log('reconciled: the site has the effect; REMOTE_CONFIRMED');
    return 'confirmed';
  }
  journal.transition(key, 'ACTION_SUBMITTED', 'UNKNOWN', spec.incarnation);
  log('reconciled: the site shows no effect; UNKNOWN');
  return 'unknown';
}

async function run(journal) {
  if (spec.start_gate) {
    emit({ ev: 'ready' });
    await nextWord();
  }
  // The profile's lease: a second worker is refused before anything launches.
  if (!journal.claimLease(spec.profile, spec.run_id, spec.incarnation, 120000)) throw safeStop('lease_held');
  // The profile check, against the journal: a rolled-back profile is never used.
  const marker = lib.readMarker(spec.profile);
  const sessions = journal.browserSessions(spec.run_id);
  const untrusted = [];
  if (sessions.length) {
    const expected = Math.max(...sessions.map((s) => s.generation));
    if (marker.generation < expected) untrusted.push('generation rolled back');
  }
  if (marker.browser_version !== spec.browser_version) untrusted.push('browser version changed');
  emit({ ev: 'profile_checked', untrusted });
  if (TRACE) log('lease and profile checked');
  if (untrusted.includes('generation rolled back')) throw safeStop('profile_rolled_back');
  if (untrusted.length) throw safeStop('browser_version_changed');

  // A new generation and the session record, durable before Chromium starts.
  marker.generation += 1;
  lib.writeMarker(spec.profile, marker);
  const effects = journal.sideEffects(spec.run_id);
  journal.recordBrowserSession({
    session_id: `${spec.run_id}-w${spec.incarnation}-s1`,
    run_id: spec.run_id,
    incarnation: spec.incarnation,
    profile: spec.profile,
    account: spec.account.id,
    generation: marker.generation,
    last_checkpoint: effects.length ? effects[effects.length - 1].state : null,
    at_ms: Date.now(),
  });
  if (!lib.recoverStaleSingletonLock(spec.profile)) throw safeStop('profile_in_use');
  if (TRACE) log('generation bumped, session recorded');
  fs.mkdirSync(spec.tmp_dir, { recursive: true });
  const launched = performance.now();
  context = await chromium.launchPersistentContext(spec.profile, {
    executablePath: spec.chrome,
    headless: true,
    args: HEADLESS_FLAGS,
    env: { ...process.env, TMPDIR: spec.tmp_dir },
    timeout: 60000,
  });
  context.setDefaultTimeout(spec.step_timeout_ms);
  context.setDefaultNavigationTimeout(spec.step_timeout_ms);
  page = context.pages()[0] || (await context.newPage());
  timing.launch_ms = performance.now() - launched;
  browserPid = findBrowserPid();
  emit({ ev: 'started', launch_ms: Math.round(timing.launch_ms), browser_pid: browserPid });
  if (TRACE) log(`browser launched in ${timing.launch_ms.toFixed(0)} ms`);
  await strike('after_profile_created');

  // Open the route, signing in when the profile holds no valid login.
  await step(() => page.goto(`${spec.origin}${ROUTE}`), 'goto');
  let m = await markers();
  if (m.page === 'login') {
    await signIn();
    m = await markers();
  }
  if (m.page === 'login-interstitial' || m.page === 'consent') throw safeStop('interstitial');
  await probeIdentity();

  // The side effect, each checkpoint durable before the next step.
  const record = journal.recordIntent(spec.run_id, EFFECT, `thread=${OBJECT};body=hello`, spec.incarnation);
  const key = record.request_key;
  switch (record.state) {
    case 'REMOTE_CONFIRMED':
      return 'confirmed';
    case 'UNKNOWN':
      return 'unknown';
    case 'ACTION_SUBMITTED':
      log(`${EFFECT}: ACTION_SUBMITTED by an earlier worker; reconciling`);
      return settle(journal, key);
    default:
  }
  await strike('before_verify');
  const checked = await verifyTarget();
  emit({ ev: 'verified', effect: EFFECT, checked });
  journal.transition(key, record.state, 'TARGET_VERIFIED', spec.incarnation);
  log(`${EFFECT}: TARGET_VERIFIED`);
  await strike('after_target_verified');
  await strike('browser_crash');
  if (!browserAlive()) {
    log(`${EFFECT}: the browser died before the action; stopping`);
    throw new Stop('browser', 'crashed');
  }
  journal.transition(key, 'TARGET_VERIFIED', 'ACTION_SUBMITTED', spec.incarnation);
  log(`${EFFECT}: ACTION_SUBMITTED`);
  const shot = spec.armed === 'after_click' ? await screenshot('after_click') : undefined;
  await step(() => page.fill('#request-key', key), 'fill');
  await step(() => page.fill('#body', 'hello'), 'fill');
  // Dispatched; the site may hold the navigation it starts, so no wait after.
  await step(() => page.click('button#send', { noWaitAfter: true }), 'click');
  await strike('after_click', shot ?? null);
  let observed;
  try {
    observed = await step(async function observe() {
      const sent = `[data-sent-key="${key}"]`;
      await page.waitForSelector(
        `${sent}, body[data-page=stale], body[data-page=unavailable], body:not([data-page])`,
      );
      if (await page.$(sent)) return 'sent';
      if (await page.$('body[data-page=stale]')) return 'stale';
      return 'error';
    });
  } catch (e) {
    observed = 'timeout';
  }
  if (observed === 'stale') throw safeStop('stale_target');
  if (observed !== 'sent') {
    log(`${EFFECT}: result not observed (${observed}); reconciling`);
    return settle(journal, key);
  }
  await strike('after_remote_effect');
  journal.transition(key, 'ACTION_SUBMITTED', 'REMOTE_CONFIRMED', spec.incarnation);
  log(`${EFFECT}: REMOTE_CONFIRMED`);
  return 'confirmed';
}

async function main() {
  const loaded = process.uptime() * 1000;
  emit({ ev: 'loaded' });
  spec = JSON.parse(await nextWord());
  if (TRACE) log(`node up and playwright loaded ${loaded.toFixed(0)} ms after exec; spec ${(process.uptime() * 1000 - loaded).toFixed(0)} ms later; t0 ${(performance.timeOrigin + T0).toFixed(0)}`);
  const journal = new lib.Journal(spec.journal);
  let result;
  try {
    result = { ok: await run(journal) };
  } catch (e) {
    result = e instanceof Stop ? { err: { type: e.type, reason: e.reason } } : { err: { type: 'failure', reason: String(e && e.message) } };
    log(`ended: ${JSON.stringify(result)}`);
  }
  // Ends well: the browser quit politely (bounded), the lease released.
  if (context) {
    const quit = performance.now();
    await Promise.race([context.close().catch(() => {}), lib.sleep(5000)]);
    timing.quit_ms = performance.now() - quit;
    if (TRACE) log(`quit ${timing.quit_ms.toFixed(0)} ms`);
    lib.killPids(lib.processesUsingProfile(spec.profile));
  }
  journal.releaseLease(spec.profile);
  journal.close();
  if (TRACE) log('lease released');
  emit({
    ev: 'finished',
    result,
    timing: rounded(),
  });
  process.exit(0);
}

main();
