'use strict';
// The peer benchmark: the drill's nine trials (xtask/src/main.rs, DRILL) hand-written with
// Playwright, as a user who picks Playwright over browser-fault would write them. Each trial
// mirrors harness/src/trial/engine.rs: the fixture site of its own (the `fixture-site` bin,
// knobs on its stdin), a durable journal, a fresh on-disk profile, worker 1 as a child Node
// process in its own process group, SIGKILLed with its group and its Chromium at the
// boundary, the world perturbed, a recovery worker on the same profile, then the ledger
// judged. Two trials at a time, like the drill under cargo test here.
//
// usage: node peer.js --site PATH/TO/fixture-site [--json REPORT.json] [--out EVIDENCE_DIR]
//                     [--jobs 2] [--filter SUBSTRING] [--cold]

const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const crypto = require('node:crypto');
const { performance } = require('node:perf_hooks');
const lib = require('./lib');

const TRIALS = [
  { name: 'send_message::after_target_verified', boundary: 'after_target_verified', expect: { ok: 'confirmed' } },
  {
    name: 'send_message::after_target_verified::account_switched',
    boundary: 'after_target_verified',
    variant: 'account_switched',
    expect: { err: { type: 'safe_stop', reason: 'wrong_account' } },
  },
  { name: 'send_message::after_click::landed', boundary: 'after_click', variant: 'landed', expect: { ok: 'confirmed' } },
  { name: 'send_message::after_click::lost', boundary: 'after_click', variant: 'lost', expect: { ok: 'unknown' } },
  { name: 'send_message::after_remote_effect', boundary: 'after_remote_effect', expect: { ok: 'confirmed' } },
  {
    name: 'send_message::stale_profile_restore::other_account',
    boundary: 'stale_profile_restore',
    variant: 'other_account',
    expect: { err: { type: 'safe_stop', reason: 'profile_rolled_back' } },
  },
  {
    name: 'send_message::stale_profile_restore::older_generation',
    boundary: 'stale_profile_restore',
    variant: 'older_generation',
    expect: { err: { type: 'safe_stop', reason: 'profile_rolled_back' } },
  },
  { name: 'send_message::browser_crash', boundary: 'browser_crash', expect: { ok: 'confirmed' } },
  {
    name: 'send_message::concurrent_profile',
    boundary: 'concurrent_profile',
    expect: { err: { type: 'safe_stop', reason: 'lease_held' } },
  },
];

const ACCOUNT = 'acct-test-42';
const TIMEOUT_MS = 60000;
const STEP_TIMEOUT_MS = 20000;

function args() {
  const a = { jobs: 2, json: null, site: null, filter: null, out: null, cold: false };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    if (v[i] === '--site') a.site = v[++i];
    else if (v[i] === '--json') a.json = v[++i];
    else if (v[i] === '--jobs') a.jobs = Number(v[++i]);
    else if (v[i] === '--filter') a.filter = v[++i];
    else if (v[i] === '--out') a.out = v[++i];
    else if (v[i] === '--cold') a.cold = true;
    else throw new Error(`unknown argument ${v[i]}`);
  }
  if (!a.site) throw new Error('--site PATH (the fixture-site bin) is required');
  return a;
}

/// Lines from a stream, awaited one at a time.
class Lines {
  constructor(stream) {
    this.queue = [];
    this.waiting = [];
    this.closed = false;
    const rl = readline.createInterface({ input: stream });
    rl.on('line', (l) => {
      const w = this.waiting.shift();
      if (w) w(l);
      else this.queue.push(l);
    });
    rl.on('close', () => {
      this.closed = true;
      for (const w of this.waiting.splice(0)) w(null);
    });
  }
  next(timeoutMs) {
    if (this.queue.length) return Promise.resolve(this.queue.shift());
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => {
      let timer = null;
      const w = (l) => {
        clearTimeout(timer);
        resolve(l);
      };
      this.waiting.push(w);
      if (timeoutMs) {
        timer = setTimeout(() => {
          const i = this.waiting.indexOf(w);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve(undefined);
        }, timeoutMs);
      }
    });
  }
}

/// The fixture site of one trial, its knobs on its stdin.
class Site {
  static async start(bin) {
    const child = spawn(bin, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    const site = new Site(child);
    const ready = JSON.parse(await site.lines.next(20000));
    site.origin = ready.base_url;
    site.accounts = ready.accounts;
    return site;
  }
  constructor(child) {
    this.child = child;
    this.lines = new Lines(child.stdout);
    this.busy = Promise.resolve();
  }
  /// One command, one answer, in order.
  command(line) {
    const run = this.busy.then(async () => {
      this.child.stdin.write(`${line}\n`);
      const answer = JSON.parse(await this.lines.next());
      if (!answer.ok) throw new Error(`site: ${line}: ${answer.error}`);
      return answer;
    });
    this.busy = run.catch(() => {});
    return run;
  }
  account(id) {
    return this.accounts.find((a) => a.id === id);
  }
  async ledger() {
    return (await this.command('ledger')).ledger;
  }
  async stop() {
    await this.command('quit').catch(() => {});
    this.child.stdin.end();
  }
}

/// Worker processes started ahead, each in its own process group, node up and Playwright
/// loaded, waiting for a spec (`--cold`: none, every worker is spawned when it is needed).
/// Loading Playwright costs a worker most of a core for half a second or more, so the pool
/// loads `parallel` at a time, keeps up to `size` loaded or loading (a trial takes two
/// workers, the concurrent one both at once), hands out loaded ones first, and never starts
/// more than the run will use (`budget`): a spare worker is CPU taken from the trials.
class Pool {
  constructor(size, budget, parallel) {
    this.size = size;
    this.budget = budget;
    this.parallel = parallel;
    this.spawned = 0;
    this.loading = 0;
    this.idle = [];
    this.fill();
  }
  spawn() {
    this.spawned += 1;
    const child = spawn(process.execPath, [path.join(__dirname, 'worker.js')], {
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: process.env,
    });
    child.pooledAt = Math.round(performance.timeOrigin + performance.now());
    child.lines = new Lines(child.stdout);
    child.exited = new Promise((r) => child.on('exit', r));
    // The worker's first line says it is loaded; it is the pool's, never a trial's event.
    child.loaded = false;
    this.loading += 1;
    child.lines.next().then(() => {
      child.loaded = true;
      this.loading -= 1;
      this.fill();
    });
    return child;
  }
  /// Starts workers, up to `parallel` loading at once, within the pool's size and the run's
  /// budget.
  fill() {
    while (
      this.loading < this.parallel &&
      this.idle.length < this.size &&
      this.spawned < this.budget
    ) {
      this.idle.push(this.spawn());
    }
  }
  take() {
    const i = this.idle.findIndex((c) => c.loaded);
    const child = i >= 0 ? this.idle.splice(i, 1)[0] : this.idle.shift() || this.spawn();
    this.fill();
    return child;
  }
  drain() {
    for (const child of this.idle.splice(0)) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }
  }
}

let pool = null;

/// A worker process in its own process group; events on its stdout, words on its stdin.
class Worker {
  constructor(spec) {
    this.spec = spec;
    this.spawned = performance.now();
    this.child = pool.take();
    this.pooled_at = this.child.pooledAt;
    this.child.stdin.write(`${JSON.stringify(spec)}\n`);
    this.events = this.child.lines;
    this.log = '';
    this.child.stderr.on('data', (d) => {
      this.log = (this.log + d).slice(-8192);
    });
    this.exited = this.child.exited;
    this.end = 'died';
    this.result = null;
    this.timing = { launch_ms: 0, browser_ms: 0, quit_ms: 0 };
    this.untrusted = [];
    this.struck = null;
  }
  async next(deadline) {
    const line = await this.events.next(Math.max(1, deadline - Date.now()));
    if (line === undefined) return { ev: 'timeout' };
    if (line === null) return null;
    return JSON.parse(line);
  }
  say(word) {
    this.child.stdin.write(`${word}\n`);
  }
  /// SIGKILL the worker's group and every process on its profile; wait until they are dead.
  /// Playwright starts Chromium in a process group of its own, so the group kill alone
  /// leaves it running, and a Chromium whose CDP pipe closes shuts down politely, saving its
  /// profile: it is SIGKILLed in the same instant as the worker, not after the worker's exit
  /// has been observed. Its pids are read before the kill (a dying process's command line
  /// reads as empty) and waited for until dead, so the recovery finds the browser's lock held
  /// by a dead pid.
  async crash(mark = () => {}) {
    const browsers = lib.processesUsingProfile(this.spec.profile);
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {}
    lib.killPids(browsers);
    await this.exited;
    mark('crash: worker exited');
    await lib.waitAllDead(browsers, 10000);
    await lib.killProfileProcesses(this.spec.profile, 10000);
  }
  /// Takes one event of a worker not at its armed point. Returns whether it ended.
  async follow(event) {
    switch (event.ev) {
      case 'boundary':
      case 'ready':
        this.say('resume');
        return false;
      case 'profile_checked':
        this.untrusted = event.untrusted;
        return false;
      case 'started':
      case 'verified':
        return false;
      case 'finished':
        this.result = event.result;
        this.timing = event.timing;
        this.end = 'finished';
        this.finished_at = performance.now();
        await Promise.race([this.exited, lib.sleep(30000)]);
        this.exited_at = performance.now();
        return true;
      default:
        return false;
    }
  }
  async driveToEnd(deadline) {
    for (;;) {
      const event = await this.next(deadline);
      if (event === null) {
        this.end = 'died';
        break;
      }
      if (event.ev === 'timeout') {
        await this.crash();
        this.end = 'timed_out';
        break;
      }
      if (await this.follow(event)) break;
    }
    this.total_ms = performance.now() - this.spawned;
  }
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

async function runTrial(trial, env) {
  const started = performance.now();
  const phases = [];
  const mark = (what) => phases.push([what, Math.round(performance.now() - started)]);
  const root = path.join(env.base, crypto.randomBytes(4).toString('hex'));
  fs.mkdirSync(root, { recursive: true, mode: 0o700 });
  const evidenceDir = env.out ? path.join(env.out, trial.name.replaceAll('::', '__')) : null;
  if (evidenceDir) {
    fs.rmSync(evidenceDir, { recursive: true, force: true });
    fs.mkdirSync(evidenceDir, { recursive: true });
  }
  const site = await Site.start(env.siteBin);
  mark('site started');
  try {
    const journal = new lib.Journal(path.join(root, 'journal.sqlite3'));
    const runId = crypto.randomBytes(8).toString('hex');
    journal.createRun(runId, trial.name);
    const profiles = path.join(root, 'profiles');
    const profile = lib.createProfile(profiles, `p-${runId.slice(0, 8)}`, runId, env.browserVersion);
    const account = site.account(ACCOUNT);
    const backup = trial.boundary === 'stale_profile_restore' ? path.join(root, 'backup-older') : null;
    if (backup) await lib.backupProfile(profile, backup);
    if (trial.boundary === 'after_click') await site.command(`arm ${trial.variant}`);
    mark('journal, profile, arm');
    const specFor = (incarnation, armed) => ({
      run_id: runId,
      incarnation,
      journal: path.join(root, 'journal.sqlite3'),
      profile,
      tmp_dir: path.join(root, `tmp-w${incarnation}`),
      evidence_dir: evidenceDir,
      origin: site.origin,
      account,
      armed,
      browser_version: env.browserVersion,
      chrome: env.chrome,
      step_timeout_ms: STEP_TIMEOUT_MS,
      start_gate: false,
    });
    const workers = [];
    const fault = { struck: false, instead: null };

    if (trial.boundary === 'concurrent_profile') {
      // Two workers on one profile at once: both wait at the gate, then go together.
      const gated = (i) => ({ ...specFor(i, null), start_gate: true });
      const a = new Worker(gated(1));
      const b = new Worker(gated(2));
      workers.push(a, b);
      const deadline = Date.now() + TIMEOUT_MS;
      const ready = await Promise.all(workers.map((w) => w.next(deadline)));
      if (ready.every((e) => e && e.ev === 'ready')) fault.struck = true;
      else fault.instead = 'a worker never reached the start gate';
      for (const w of workers) w.say('go');
      await Promise.all(workers.map((w) => w.driveToEnd(deadline)));
    } else {
      const armed = trial.boundary === 'stale_profile_restore' ? 'after_target_verified' : trial.boundary;
      const first = new Worker(specFor(1, armed));
      workers.push(first);
      const deadline = Date.now() + TIMEOUT_MS;
      for (;;) {
        const event = await first.next(deadline);
        if (event === null) {
          first.end = 'died';
          break;
        }
        if (event.ev === 'timeout') {
          await first.crash();
          first.end = 'timed_out';
          break;
        }
        if (event.ev === 'boundary') {
          first.struck = event.name;
          first.timing = event.timing;
          fault.struck = event.name === armed;
          if (event.name === 'browser_crash') {
            // The browser dies under a live worker, which must notice.
            await lib.killProfileProcesses(profile, 10000);
            first.say('resume');
            continue;
          }
          if (event.name === 'after_click') {
            // Deterministic: the request has landed (or been lost) at the site.
            await site.command(`wait-armed ${TIMEOUT_MS}`);
            mark('armed request reached');
          }
          mark(`worker 1 at ${event.name}`);
          await first.crash(mark);
          mark('worker 1 crashed, its processes dead');
          first.end = 'crashed';
          break;
        }
        if (await first.follow(event)) break;
      }
      first.total_ms = performance.now() - first.spawned;
      // An arm no request took must not catch the recovery's; a held one is let go.
      await site.command('disarm');
      await site.command('release');
      mark('site disarmed, released');
      if (!fault.struck) fault.instead = `worker 1 never reached ${armed} (${JSON.stringify(first.result)})`;

      // The world changes during the crash.
      if (fault.struck && first.end === 'crashed') {
        if (backup) await lib.restoreProfile(profile, backup);
        if (trial.variant === 'other_account' || trial.variant === 'account_switched') {
          await site.command('hazard account_switch on');
        }
      }
      // The recovery worker: the same run, the same profile.
      mark('perturbed');
      const recovery = new Worker(specFor(2, null));
      workers.push(recovery);
      await recovery.driveToEnd(Date.now() + TIMEOUT_MS);
    }

    // Facts, before cleanup: what the agents left behind.
    mark('workers ended');
    const ledger = await site.ledger();
    mark('ledger read');
    const effects = journal.sideEffects(runId);
    const leftProcesses = lib.processesUsingProfile(profile);
    const leftLeases = journal.liveLeases();
    journal.close();
    // Cleanup: every profile of the trial, its processes first.
    mark('journal read');
    await lib.killProfileProcesses(profile, 10000);
    mark('processes checked');
    await fs.promises.rm(root, { recursive: true, force: true });
    const cleaned = !fs.existsSync(root);
    mark('judged facts read, cleaned');

    const verdicts = judge({ trial, ledger, effects, workers, fault, leftProcesses, leftLeases, cleaned, account });
    const total = performance.now() - started;
    const sum = (k) => workers.reduce((s, w) => s + (w.timing[k] || 0), 0);
    return {
      trial: trial.name,
      passed: verdicts.every((v) => v.held),
      verdicts,
      workers: workers.map((w) => ({
        incarnation: w.spec.incarnation,
        end: w.end,
        struck: w.struck,
        result: w.result,
        timing: w.timing,
        total_ms: Math.round(w.total_ms || 0),
        taken_at: Math.round(performance.timeOrigin + w.spawned),
        pooled_at: w.pooled_at,
        exit_wait_ms: w.exited_at ? Math.round(w.exited_at - w.finished_at) : undefined,
        log: w.end === 'finished' && !process.env.BF_PEER_TRACE ? undefined : w.log.slice(-4000),
      })),
      phases,
      started_at: Math.round(performance.timeOrigin + started),
      durations: {
        total_ms: Math.round(total),
        browser_launch_ms: sum('launch_ms'),
        browser_steps_ms: sum('browser_ms'),
        browser_quit_ms: sum('quit_ms'),
      },
    };
  } finally {
    await site.stop();
    await fs.promises.rm(root, { recursive: true, force: true });
  }
}

/// The invariants the drill's matrix shows, judged from the ledger and the journal.
function judge({ trial, ledger, effects, workers, fault, leftProcesses, leftLeases, cleaned, account }) {
  const v = [];
  const add = (invariant, held, why) => v.push({ invariant, held, why: held ? undefined : why });
  add('fault_struck', fault.struck, fault.instead);
  add(
    'no_wrong_account',
    ledger.every((e) => e.account === account.id && e.tenant === account.tenant),
    `effects under ${ledger.map((e) => e.account).join(', ')}`,
  );
  add('no_duplicate', ledger.length <= 1, `${ledger.length} effects for one intent`);
  add('no_wrong_object', ledger.every((e) => e.object === '42'), 'an effect on another object');
  const keys = new Set(ledger.map((e) => e.request_key));
  const ambiguity = effects.every(
    (s) =>
      s.state !== 'ACTION_SUBMITTED' &&
      (s.state !== 'REMOTE_CONFIRMED' || keys.has(s.request_key)) &&
      (!keys.has(s.request_key) || ['REMOTE_CONFIRMED', 'UNKNOWN'].includes(s.state)),
  ) && ledger.every((e) => effects.some((s) => s.request_key === e.request_key));
  add('ambiguity_visible', ambiguity, `journal ${JSON.stringify(effects.map((s) => s.state))} vs ${ledger.length} effect(s)`);
  const judged = workers.filter((w) => w.end !== 'crashed');
  const safe = judged.every(
    (w) => w.end === 'finished' && w.result && (w.result.ok || ['safe_stop', 'browser'].includes(w.result.err && w.result.err.type)),
  );
  add('recover_or_stop_safely', safe, judged.map((w) => `${w.end} ${JSON.stringify(w.result)}`).join('; '));
  const claims = judged.every((w) => {
    const state = effects[0] && effects[0].state;
    if (!w.result || !w.result.ok) return true;
    if (w.result.ok === 'confirmed') return state === 'REMOTE_CONFIRMED' && ledger.length === 1;
    if (w.result.ok === 'unknown') return state === 'UNKNOWN';
    return true;
  });
  add('claims_match_facts', claims, 'a worker claimed what the journal or the ledger does not show');
  add(
    'profile_trusted',
    !(workers.some((w) => w.untrusted.length) && ledger.length > 1),
    'acted on an untrusted profile',
  );
  add('no_leak', cleaned && leftProcesses.length === 0 && leftLeases.length === 0, `${leftProcesses.length} process(es), ${leftLeases.length} lease(s) left`);
  const last = workers[workers.length - 1];
  const results = workers.map((w) => w.result);
  const expected =
    trial.boundary === 'concurrent_profile'
      ? results.some((r) => same(r, { ok: 'confirmed' })) && results.some((r) => same(r, trial.expect))
      : same(last.result, trial.expect);
  add('expected_recovery', expected, `recovery ${JSON.stringify(last.result)}, expected ${JSON.stringify(trial.expect)}`);
  return v;
}

async function main() {
  const a = args();
  const trials = TRIALS.filter((t) => !a.filter || t.name.includes(a.filter));
  // Every trial takes two workers (worker 1 and the recovery, or the two at the gate). The
  // first ones load while the version is read.
  pool = new Pool(a.cold ? 0 : 2 * a.jobs, 2 * trials.length, a.jobs);
  const chrome = process.env.BROWSER_FAULT_CHROME || '/usr/bin/chromium';
  const version = execFileSync(chrome, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const browserVersion = (version.match(/(\d+)\./) || [])[1] || 'unknown';
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  const env = {
    siteBin: a.site,
    chrome,
    browserVersion,
    base: path.join(os.tmpdir(), `bf-peer-${uid}`),
    out: a.out,
  };
  const started = performance.now();
  const reports = new Array(trials.length);
  let nextIndex = 0;
  const lane = async () => {
    while (nextIndex < trials.length) {
      const i = nextIndex++;
      try {
        reports[i] = await runTrial(trials[i], env);
      } catch (e) {
        reports[i] = { trial: trials[i].name, passed: false, error: String(e && e.stack), durations: {} };
      }
      const r = reports[i];
      process.stderr.write(`peer: ${r.trial.padEnd(56)} ${r.passed ? 'ok' : 'FAILED'} ${r.durations.total_ms ?? '?'} ms\n`);
    }
  };
  await Promise.all(Array.from({ length: a.jobs }, lane));
  const wall = performance.now() - started;
  pool.drain();
  const summary = { wall_ms: Math.round(wall), passed: reports.every((r) => r.passed), trials: reports };
  if (a.json) fs.writeFileSync(a.json, JSON.stringify(summary, null, 2));
  for (const r of reports.filter((r) => !r.passed)) {
    process.stderr.write(`peer: ${r.trial} failed:\n${JSON.stringify(r, null, 2)}\n`);
  }
  process.stderr.write(`peer: wall ${(wall / 1000).toFixed(1)} s, ${reports.filter((r) => r.passed).length} of ${reports.length} trials passed\n`);
  process.exit(summary.passed ? 0 : 1);
}

main().catch((e) => {
  process.stderr.write(`peer: ${e && e.stack}\n`);
  process.exit(2);
});
