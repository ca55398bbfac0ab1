#!/usr/bin/env bash
# setup.sh DIR — install the Roundup issue tracker (PyPI `roundup`, pinned) into DIR/venv and
# create a classic/sqlite tracker in DIR/tracker with three accounts (admin, alice, bob).
# Idempotent and non-interactive: a second run with everything in place does nothing.
#
# Layout made under DIR:
#   DIR/venv/             python3 -m venv with roundup==$ROUNDUP_VERSION
#   DIR/tracker/          tracker home (config.ini, schema.py, html/, db/)
#   DIR/pristine-db/      copy of DIR/tracker/db right after setup (reset.sh copies it back)
#   DIR/accounts.env      the test accounts (shell syntax), for callers
#
# The tracker's [tracker] web URL is a placeholder here; start.sh rewrites it for the port it
# serves on (Roundup builds absolute URLs and checks CSRF Origin/Referer/Host against it).
# Environment: PYTHON (default python3), PIP_FLAGS (extra pip flags).
set -euo pipefail

ROUNDUP_VERSION=2.6.0
ADMIN_PASSWORD='admin-pw-Adm1n'
ALICE_PASSWORD='alice-pw-Al1ce'
BOB_PASSWORD='bob-pw-B0b'

[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
mkdir -p "$1"
DIR=$(cd "$1" && pwd)
PY=${PYTHON:-python3}
VENV=$DIR/venv
TRACKER=$DIR/tracker
PRISTINE=$DIR/pristine-db
ADMIN=$VENV/bin/roundup-admin

# 1. venv + pinned roundup
have_version=$("$VENV/bin/python" -c 'import roundup; print(roundup.__version__)' 2>/dev/null || true)
if [ "$have_version" != "$ROUNDUP_VERSION" ]; then
    echo "setup: installing roundup==$ROUNDUP_VERSION into $VENV"
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/pip" install --quiet --disable-pip-version-check ${PIP_FLAGS:-} "roundup==$ROUNDUP_VERSION"
fi

# 2. tracker (skipped when a complete one is there: config, db and the pristine copy)
if [ -f "$TRACKER/config.ini" ] && [ -f "$TRACKER/.setup-complete" ] && [ -d "$PRISTINE" ]; then
    echo "setup: tracker already set up in $TRACKER"
else
    echo "setup: creating tracker in $TRACKER"
    rm -rf "$TRACKER" "$PRISTINE"
    # Options are [section]option pairs written as section_option (see `roundup-admin help install`).
    # - web: placeholder, rewritten by start.sh
    # - mail_debug: outgoing mail (nosy messages) goes to a file instead of an SMTP server
    # - web_login_attempts_min=0: Roundup rate-limits ALL web logins (good and bad) to 3 per user per
    #   minute by default; a test suite logging in many times would be refused. 0 turns it off.
    "$ADMIN" -i "$TRACKER" install classic sqlite \
        "tracker_web=http://127.0.0.1:8080/tracker/,mail_domain=localhost,mail_host=localhost,mail_debug=mail.log,web_login_attempts_min=0" \
        </dev/null >/dev/null
    "$ADMIN" -i "$TRACKER" initialise "$ADMIN_PASSWORD" </dev/null >/dev/null
    "$ADMIN" -i "$TRACKER" create user username=alice "password=$ALICE_PASSWORD" \
        address=alice@example.com realname=Alice roles=User </dev/null >/dev/null
    "$ADMIN" -i "$TRACKER" create user username=bob "password=$BOB_PASSWORD" \
        address=bob@example.com realname=Bob roles=User </dev/null >/dev/null
    cp -a "$TRACKER/db" "$PRISTINE"
    touch "$TRACKER/.setup-complete"
fi

cat > "$DIR/accounts.env" <<EOF
ROUNDUP_ADMIN_USER=admin
ROUNDUP_ADMIN_PASSWORD='$ADMIN_PASSWORD'
ROUNDUP_USER1=alice
ROUNDUP_USER1_PASSWORD='$ALICE_PASSWORD'
ROUNDUP_USER2=bob
ROUNDUP_USER2_PASSWORD='$BOB_PASSWORD'
EOF
echo "setup: done ($DIR)"
