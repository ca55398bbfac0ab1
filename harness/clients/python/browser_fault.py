"""The browser-fault client for an agent written in Python: its checkpoints and fault points,
over the worker's checkpoint socket, and its claim.

The harness runs the agent as a command (`Worker::run_agent`) with its browser's endpoints and
this socket in its environment. Standard library only; put this file's folder on `PYTHONPATH`
(`browser_fault::clients::python_dir()` in Rust names it).

    from browser_fault import Harness, claim
    bf = Harness()
    driver = webdriver.Remote(command_executor=bf.webdriver_url, options=ChromeOptions())
    account = bf.account()
    ...
    bf.fault_point("after_login")
    rec = bf.intent("post-hello", args="thread=42;body=hello", key=my_key)
    bf.checks("account", "tenant", "object")
    bf.transition("post-hello", "TARGET_VERIFIED")
    claim("confirmed")

Every call returns once the worker answered: a checkpoint is then in the journal, and a
fault point armed for its boundary has struck (for a crash, the call never returns: the agent
is killed with its browser).
"""

import json
import os
import socket
from dataclasses import dataclass
from typing import Optional

__all__ = ["Harness", "Account", "Record", "Refused", "ProtocolError", "claim"]


class Refused(Exception):
    """The journal refused a checkpoint (a conflict, a changed key): stop, do not act."""


class ProtocolError(Exception):
    """The worker says a request was not its protocol (a bug of the caller)."""


@dataclass(frozen=True)
class Account:
    """The account the agent must act as."""

    username: str
    password: str
    id: str
    tenant: Optional[str]

    def __repr__(self) -> str:  # the password never reaches a log by accident
        return f"Account(username={self.username!r}, id={self.id!r}, tenant={self.tenant!r})"


@dataclass(frozen=True)
class Record:
    """A side effect as the journal has it: its request key and checkpoint."""

    key: str
    state: str


class Harness:
    """The worker, from inside the agent command."""

    def __init__(self) -> None:
        env = os.environ
        self.webdriver_url: str = env["BROWSER_FAULT_WEBDRIVER_URL"]
        self.cdp_url: Optional[str] = env.get("BROWSER_FAULT_CDP_URL")
        self.origin: str = env["BROWSER_FAULT_ORIGIN"]
        self.run_id: str = env["BROWSER_FAULT_RUN_ID"]
        self.incarnation: int = int(env["BROWSER_FAULT_INCARNATION"])
        self.state_dir: str = env["BROWSER_FAULT_STATE_DIR"]
        self.request_key: Optional[str] = env.get("BROWSER_FAULT_REQUEST_KEY")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(env["BROWSER_FAULT_SOCKET"])
        self._file = self._sock.makefile("rwb")

    def _ask(self, op: str, **fields) -> dict:
        request = {"op": op, **{k: v for k, v in fields.items() if v is not None}}
        self._file.write(json.dumps(request).encode() + b"\n")
        self._file.flush()
        line = self._file.readline()
        if not line:
            raise ConnectionError("the worker closed the checkpoint socket")
        answer = json.loads(line)
        if answer.get("ok"):
            return answer
        if answer.get("error") == "refused":
            raise Refused(answer.get("message", ""))
        raise ProtocolError(answer.get("message", ""))

    def account(self) -> Account:
        """The account's credentials (never in the environment or the arguments)."""
        a = self._ask("account")
        return Account(a["username"], a["password"], a["id"], a.get("tenant"))

    def intent(self, effect: str, args: str = "", key: Optional[str] = None) -> Record:
        """Records the intent of `effect` (idempotent: a recovery gets the same row). `key`
        is the agent's own request key; without it the journal derives one."""
        a = self._ask("intent", effect=effect, args=args, key=key)
        return Record(a["key"], a["state"])

    def side_effect(self, effect: str) -> Optional[Record]:
        """The journal's record of `effect`, or None."""
        r = self._ask("side_effect", effect=effect)["record"]
        return Record(r["key"], r["state"]) if r else None

    def transition(self, effect: str, to: str, from_: Optional[str] = None) -> None:
        """Moves `effect` to checkpoint `to` (`TARGET_VERIFIED`, `ACTION_SUBMITTED`,
        `REMOTE_CONFIRMED`, `UNKNOWN`), compare-and-set from `from_` (default: where the
        journal has it). Raises Refused when the journal refuses."""
        self._ask("transition", effect=effect, to=to, **{"from": from_})

    def checks(self, *names: str) -> None:
        """What the agent's verify step compared (account, tenant, object, route, origin,
        api_identity, no_interstitial): reported with the next TARGET_VERIFIED."""
        self._ask("checks", checks=list(names))

    def fault_point(self, boundary: str) -> None:
        """Marks a boundary (after_login, after_target_verified, after_click,
        after_remote_effect, before_verify …): an armed fault strikes here."""
        self._ask("fault_point", boundary=boundary)

    def profile(self) -> Optional[str]:
        """The worker's check of the profile it was given: None when it can be trusted, else
        the safe stop it calls for (`profile_rolled_back`, `browser_version_changed`)."""
        return self._ask("profile").get("stop")

    def log(self, line: str) -> None:
        """A line of the worker's log (redacted like all of it)."""
        self._ask("log", line=line)


def claim(outcome: str, reason: Optional[str] = None) -> None:
    """Prints the agent's claim, its last word: confirmed, unknown, completed,
    browser_crashed, or safe_stop with a reason (wrong_account, wrong_tenant, wrong_object,
    not_signed_in, interstitial, stale_target …)."""
    line = {"claim": outcome}
    if reason is not None:
        line["reason"] = reason
    print(json.dumps(line), flush=True)
