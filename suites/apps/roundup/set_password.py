"""set_password.py TRACKER USER: the Roundup suite's test hook for a credential rotation.

Reads the new password from standard input (never an argument: a process listing shows
those), sets it on USER through Roundup's own API, and signs out every session of USER
(a rotation ends them, as the harness's `credential_rotated` hazard demands). Run with the
tracker's virtualenv Python; the server may keep running (sqlite, one commit each).
Prints how many sessions it ended.
"""

import sys

import roundup.instance
from roundup.password import Password


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: set_password.py TRACKER USER < password", file=sys.stderr)
        return 2
    tracker, user = sys.argv[1], sys.argv[2]
    password = sys.stdin.read().rstrip("\n")
    if not password:
        print("set_password.py: no password on standard input", file=sys.stderr)
        return 2
    db = roundup.instance.open(tracker).open("admin")
    try:
        uid = db.user.lookup(user)
        db.user.set(uid, password=Password(password, config=db.config))
        db.commit()
        sessions = db.getSessionManager()
        ended = 0
        for key in list(sessions.list()):
            if sessions.get(key, "user", None) == user:
                sessions.destroy(key)
                ended += 1
        sessions.commit()
        print(f"ended {ended} session(s) of {user}")
    finally:
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
