'use strict';
// What the peer's parent and workers share: the durable journal (SQLite, WAL, synchronous
// FULL, with better-sqlite3), the profile's owner marker (fsynced, atomically replaced), the
// profile's lease (a journal row, held while its pid lives), and the process table.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const Database = require('better-sqlite3');

const MARKER = '.bf-peer-owner.json';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, trial TEXT NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS side_effects (
  run_id TEXT NOT NULL, effect TEXT NOT NULL, args_hash TEXT NOT NULL,
  request_key TEXT NOT NULL UNIQUE, state TEXT NOT NULL,
  PRIMARY KEY (run_id, effect));
CREATE TABLE IF NOT EXISTS transitions (
  id INTEGER PRIMARY KEY, request_key TEXT NOT NULL, from_state TEXT, to_state TEXT NOT NULL,
  incarnation INTEGER NOT NULL, at_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS browser_sessions (
  session_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, incarnation INTEGER NOT NULL,
  profile TEXT NOT NULL, account TEXT NOT NULL, generation INTEGER NOT NULL,
  last_checkpoint TEXT, at_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS leases (
  profile TEXT PRIMARY KEY, run_id TEXT NOT NULL, incarnation INTEGER NOT NULL,
  pid INTEGER NOT NULL, expires_ms INTEGER NOT NULL);
`;

class Journal {
  constructor(file) {
    this.db = new Database(file, { timeout: 10000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(SCHEMA);
  }

  close() {
    this.db.close();
  }

  createRun(runId, trial) {
    this.db.prepare('INSERT INTO runs VALUES (?, ?, ?)').run(runId, trial, Date.now());
  }

  /// Idempotent: every incarnation gets the same row and request key.
  recordIntent(runId, effect, args, incarnation) {
    const hash = crypto.createHash('sha256').update(args).digest('hex');
    return this.db.transaction(() => {
      const key = `${effect}-${crypto.randomBytes(8).toString('hex')}`;
      const ins = this.db
        .prepare("INSERT OR IGNORE INTO side_effects VALUES (?, ?, ?, ?, 'INTENT_RECORDED')")
        .run(runId, effect, hash, key);
      if (ins.changes === 1) {
        this.db
          .prepare('INSERT INTO transitions (request_key, from_state, to_state, incarnation, at_ms) VALUES (?, NULL, ?, ?, ?)')
          .run(key, 'INTENT_RECORDED', incarnation, Date.now());
      }
      const row = this.db.prepare('SELECT * FROM side_effects WHERE run_id = ? AND effect = ?').get(runId, effect);
      if (row.args_hash !== hash) throw new Error(`${effect}: other arguments under the same intent`);
      return row;
    }).immediate();
  }

  /// Compare-and-set, durable before it returns.
  transition(key, from, to, incarnation) {
    this.db.transaction(() => {
      const r = this.db
        .prepare('UPDATE side_effects SET state = ? WHERE request_key = ? AND state = ?')
        .run(to, key, from);
      if (r.changes !== 1) throw new Error(`transition ${from} -> ${to} refused for ${key}`);
      this.db
        .prepare('INSERT INTO transitions (request_key, from_state, to_state, incarnation, at_ms) VALUES (?, ?, ?, ?, ?)')
        .run(key, from, to, incarnation, Date.now());
    }).immediate();
  }

  sideEffects(runId) {
    return this.db.prepare('SELECT * FROM side_effects WHERE run_id = ?').all(runId);
  }

  history(runId) {
    return this.db
      .prepare('SELECT t.* FROM transitions t JOIN side_effects s ON s.request_key = t.request_key WHERE s.run_id = ? ORDER BY t.id')
      .all(runId);
  }

  browserSessions(runId) {
    return this.db.prepare('SELECT * FROM browser_sessions WHERE run_id = ? ORDER BY at_ms').all(runId);
  }

  recordBrowserSession(rec) {
    this.db
      .prepare('INSERT INTO browser_sessions VALUES (@session_id, @run_id, @incarnation, @profile, @account, @generation, @last_checkpoint, @at_ms)')
      .run(rec);
  }

  /// The profile's lease: refused while another live process holds an unexpired one.
  claimLease(profile, runId, incarnation, ttlMs) {
    return this.db.transaction(() => {
      const held = this.db.prepare('SELECT * FROM leases WHERE profile = ?').get(profile);
      if (held && held.pid !== process.pid && pidAlive(held.pid) && held.expires_ms > Date.now()) {
        return false;
      }
      this.db
        .prepare('INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?)')
        .run(profile, runId, incarnation, process.pid, Date.now() + ttlMs);
      return true;
    }).immediate();
  }

  releaseLease(profile) {
    this.db.prepare('DELETE FROM leases WHERE profile = ? AND pid = ?').run(profile, process.pid);
  }

  liveLeases() {
    return this.db.prepare('SELECT * FROM leases').all().filter((l) => pidAlive(l.pid));
  }
}

function fsyncDir(dir) {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function readMarker(profile) {
  return JSON.parse(fs.readFileSync(path.join(profile, MARKER), 'utf8'));
}

/// Atomically: a temporary file, fsync, rename, fsync of the directory.
function writeMarker(profile, marker) {
  const tmp = path.join(profile, `${MARKER}.tmp-${process.pid}`);
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, JSON.stringify(marker));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, path.join(profile, MARKER));
  fsyncDir(profile);
}

function createProfile(root, name, runId, browserVersion) {
  fs.mkdirSync(root, { recursive: true, mode: 0o700 });
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { mode: 0o700 });
  writeMarker(dir, { run_id: runId, generation: 1, browser_version: browserVersion });
  fsyncDir(root);
  return dir;
}

const skipped = (name) => name.startsWith('Singleton');

/// A copy of the profile, Chromium's Singleton* files left out. Asynchronous, like every
/// bulk file operation of the parent: its event loop serves both lanes.
async function backupProfile(profile, dest) {
  await fs.promises.cp(profile, dest, { recursive: true, filter: (src) => !skipped(path.basename(src)) });
}

/// The profile's contents replaced by the backup's; the marker last, so the rollback shows.
async function restoreProfile(profile, backup) {
  const removed = (await fs.promises.readdir(profile))
    .filter((name) => name !== MARKER)
    .map((name) => fs.promises.rm(path.join(profile, name), { recursive: true, force: true, maxRetries: 5 }));
  await Promise.all(removed);
  const copied = (await fs.promises.readdir(backup))
    .filter((name) => name !== MARKER)
    .map((name) => fs.promises.cp(path.join(backup, name), path.join(profile, name), { recursive: true }));
  await Promise.all(copied);
  writeMarker(profile, readMarker(backup));
}

/// Whether `pid` is a live process (a zombie is dead).
function pidAlive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/// Whether a command line holds `needle` as a whole argument. Chromium's helpers rewrite
/// their command line into one space-separated string (their process title).
function namesProfile(cmd, needle) {
  for (let i = cmd.indexOf(needle); i >= 0; i = cmd.indexOf(needle, i + 1)) {
    const before = i === 0 ? '\0' : cmd[i - 1];
    const after = cmd[i + needle.length];
    if ((before === '\0' || before === ' ') && (after === undefined || after === '\0' || after === ' ')) {
      return true;
    }
  }
  return false;
}

/// Every live process whose command line names the profile (Chromium and its helpers).
function processesUsingProfile(profile) {
  const needle = `--user-data-dir=${profile}`;
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmd;
    try {
      cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (namesProfile(cmd, needle) && pidAlive(Number(entry))) found.push(Number(entry));
  }
  return found;
}

function killPids(pids) {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
}

async function waitAllDead(pids, limitMs) {
  const deadline = Date.now() + limitMs;
  while (pids.some(pidAlive) && Date.now() < deadline) await sleep(5);
  return !pids.some(pidAlive);
}

/// SIGKILLs every process on the profile, again until none is left (a helper may start
/// while the first ones die); returns whether none is.
async function killProfileProcesses(profile, limitMs) {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const pids = processesUsingProfile(profile);
    if (!pids.length) return true;
    killPids(pids);
    await waitAllDead(pids, Math.max(0, deadline - Date.now()));
    if (Date.now() >= deadline) return !processesUsingProfile(profile).length;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// `<host>-<pid>` from Chromium's SingletonLock symlink.
function singletonOwner(profile) {
  try {
    const target = fs.readlinkSync(path.join(profile, 'SingletonLock'));
    const i = target.lastIndexOf('-');
    return { host: target.slice(0, i), pid: Number(target.slice(i + 1)) };
  } catch {
    return null;
  }
}

/// A stale browser lock is removed only when its owner is dead, on this host.
function recoverStaleSingletonLock(profile) {
  const owner = singletonOwner(profile);
  if (!owner) return true;
  if (owner.host !== os.hostname() || pidAlive(owner.pid)) return false;
  for (const name of ['SingletonLock', 'SingletonSocket', 'SingletonCookie']) {
    fs.rmSync(path.join(profile, name), { force: true });
  }
  return true;
}

module.exports = {
  Journal,
  MARKER,
  readMarker,
  writeMarker,
  createProfile,
  backupProfile,
  restoreProfile,
  pidAlive,
  processesUsingProfile,
  killPids,
  waitAllDead,
  killProfileProcesses,
  recoverStaleSingletonLock,
  sleep,
};
