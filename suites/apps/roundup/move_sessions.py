"""move_sessions.py TRACKER FROM TO: the Roundup suite's test hook for a live account switch.

Every session of user FROM comes to belong to user TO (the same cookie now signs the browser
in as TO), as the harness's `after_login::live_account_switch` demands. Run with the
tracker's virtualenv Python; the server may keep running (sqlite, one commit). Prints how
many sessions it moved.
"""

import sys

import roundup.instance


def main() -> int:
    if len(sys.argv) != 4:
        print("usage: move_sessions.py TRACKER FROM TO", file=sys.stderr)
        return 2
    tracker, source, dest = sys.argv[1:]
    db = roundup.instance.open(tracker).open("admin")
    try:
        db.user.lookup(dest)  # refuses a user the tracker does not have
        sessions = db.getSessionManager()
        moved = 0
        for key in list(sessions.list()):
            if sessions.get(key, "user", None) == source:
                sessions.set(key, user=dest)
                moved += 1
        sessions.commit()
        print(f"moved {moved} session(s) of {source} to {dest}")
    finally:
        db.close()
    return 0 if moved else 1


if __name__ == "__main__":
    sys.exit(main())
