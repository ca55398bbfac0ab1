"""look_alike.py TRACKER USER TITLE: the Roundup suite's test hook for a look-alike success.

Files an issue as USER with TITLE (and a note), through Roundup's own API, the way the
tracker's new-issue form would: another issue than the agent's, under another key, whose
page the harness's fault proxy answers the agent's lost submission with
(`after_click::live_look_alike`). Run with the tracker's virtualenv Python; the server may
keep running (sqlite, one commit). Prints the new issue's id.
"""

import sys

import roundup.instance


def main() -> int:
    if len(sys.argv) != 4:
        print("usage: look_alike.py TRACKER USER TITLE", file=sys.stderr)
        return 2
    tracker, user, title = sys.argv[1:]
    db = roundup.instance.open(tracker).open(user)
    try:
        note = db.msg.create(content="It is on fire.", author=db.getuid())
        issue = db.issue.create(title=title, messages=[note])
        db.commit()
        print(issue)
    finally:
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
