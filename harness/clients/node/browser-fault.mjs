// The browser-fault client for an agent written in JavaScript or TypeScript (Node 18+): its
// checkpoints and fault points, over the worker's checkpoint socket, and its claim.
//
// The harness runs the agent as a command (`Worker::run_agent`, or `#[browser_fault(command =
// "node agent.mjs")]`) with its browser's endpoints and this socket in its environment. No
// dependencies; import it by path (`browser_fault::clients::node_client()` in Rust names it,
// and the command gets it as BROWSER_FAULT_NODE_CLIENT):
//
//     const { Harness, claim } = await import(process.env.BROWSER_FAULT_NODE_CLIENT);
//     const bf = await Harness.connect();
//     const browser = await chromium.connectOverCDP(bf.cdpUrl);
//     const account = await bf.account();
//     ...
//     await bf.faultPoint("after_login");
//     const record = await bf.intent("post-hello", { args: "thread=42;body=hello", key });
//     await bf.checks("account", "tenant", "object");
//     await bf.transition("post-hello", "TARGET_VERIFIED");
//     claim("confirmed");
//
// Every call resolves once the worker answered: a checkpoint is then in the journal, and a
// fault point armed for its boundary has struck (for a crash, it never resolves: the agent is
// killed with its browser).

import net from "node:net";

/** The journal refused a checkpoint (a conflict, a changed key): stop, do not act. */
export class Refused extends Error {
  constructor(message) {
    super(message);
    this.name = "Refused";
  }
}

/** The worker says a request was not its protocol (a bug of the caller). */
export class ProtocolError extends Error {
  constructor(message) {
    super(message);
    this.name = "ProtocolError";
  }
}

/** The worker, from inside the agent command. */
export class Harness {
  /** Connects to the worker's checkpoint socket (BROWSER_FAULT_SOCKET). */
  static connect() {
    const env = process.env;
    return new Promise((resolve, reject) => {
      const socket = net.createConnection(env.BROWSER_FAULT_SOCKET);
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        resolve(new Harness(socket, env));
      });
    });
  }

  constructor(socket, env) {
    this.webdriverUrl = env.BROWSER_FAULT_WEBDRIVER_URL;
    this.cdpUrl = env.BROWSER_FAULT_CDP_URL ?? null;
    this.origin = env.BROWSER_FAULT_ORIGIN;
    this.runId = env.BROWSER_FAULT_RUN_ID;
    this.incarnation = Number(env.BROWSER_FAULT_INCARNATION);
    this.stateDir = env.BROWSER_FAULT_STATE_DIR;
    this.requestKey = env.BROWSER_FAULT_REQUEST_KEY ?? null;
    this._socket = socket;
    this._buffer = "";
    this._waiting = [];
    this._queue = Promise.resolve();
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => {
      this._buffer += chunk;
      let end;
      while ((end = this._buffer.indexOf("\n")) >= 0) {
        const line = this._buffer.slice(0, end);
        this._buffer = this._buffer.slice(end + 1);
        this._waiting.shift()?.resolve(line);
      }
    });
    const closed = (error) => {
      for (const w of this._waiting.splice(0)) {
        w.reject(error ?? new Error("the worker closed the checkpoint socket"));
      }
    };
    socket.on("error", closed);
    socket.on("close", () => closed());
  }

  /** One request, one answer; requests go one at a time, in the order they are made. */
  _ask(op, fields = {}) {
    const request = { op };
    for (const [k, v] of Object.entries(fields)) {
      if (v !== undefined && v !== null) request[k] = v;
    }
    const asked = this._queue.then(
      () =>
        new Promise((resolve, reject) => {
          this._waiting.push({ resolve, reject });
          this._socket.write(JSON.stringify(request) + "\n");
        }),
    );
    this._queue = asked.catch(() => {});
    return asked.then((line) => {
      const answer = JSON.parse(line);
      if (answer.ok) return answer;
      if (answer.error === "refused") throw new Refused(answer.message ?? "");
      throw new ProtocolError(answer.message ?? "");
    });
  }

  /** The account's credentials (never in the environment or the arguments). */
  async account() {
    const a = await this._ask("account");
    const account = { username: a.username, id: a.id, tenant: a.tenant ?? null };
    // Not enumerable: a `console.log(account)` or a JSON dump never shows it.
    Object.defineProperty(account, "password", { value: a.password, enumerable: false });
    return account;
  }

  /** Records the intent of `effect` (idempotent: a recovery gets the same row); `key` is the
   * agent's own request key, else the journal derives one. Resolves to `{ key, state }`. */
  async intent(effect, { args = "", key } = {}) {
    const a = await this._ask("intent", { effect, args, key });
    return { key: a.key, state: a.state };
  }

  /** The journal's record of `effect` (`{ key, state, incarnation }`), or null. */
  async sideEffect(effect) {
    return (await this._ask("side_effect", { effect })).record ?? null;
  }

  /** Moves `effect` to checkpoint `to` (TARGET_VERIFIED, ACTION_SUBMITTED, REMOTE_CONFIRMED,
   * UNKNOWN), compare-and-set from `from` (default: where the journal has it). Rejects with
   * Refused when the journal refuses. */
  async transition(effect, to, { from } = {}) {
    await this._ask("transition", { effect, to, from });
  }

  /** What the agent's verify step compared (account, tenant, object, route, fresh):
   * reported with the next TARGET_VERIFIED. */
  async checks(...names) {
    await this._ask("checks", { checks: names });
  }

  /** Marks a boundary (after_login, before_verify, after_target_verified, after_click,
   * after_remote_effect): an armed fault strikes here. */
  async faultPoint(boundary) {
    await this._ask("fault_point", { boundary });
  }

  /** The worker's check of the profile it was given: null when it can be trusted, else the
   * safe stop it calls for (`profile_rolled_back`, `browser_version_changed`). */
  async profile() {
    return (await this._ask("profile")).stop ?? null;
  }

  /** A line of the worker's log (redacted like all of it). */
  async log(line) {
    await this._ask("log", { line });
  }

  /** Closes the checkpoint socket. */
  close() {
    this._socket.end();
  }
}

/** Prints the agent's claim, its last word: confirmed, unknown, completed, browser_crashed,
 * or safe_stop with a reason (wrong_account, wrong_tenant, wrong_object, not_signed_in,
 * interstitial, stale_target …). */
export function claim(outcome, reason) {
  const line = { claim: outcome };
  if (reason !== undefined) line.reason = reason;
  process.stdout.write(JSON.stringify(line) + "\n");
}
