#!/usr/bin/env bash
# reset.sh DIR — put the tracker made by setup.sh back to its state right after setup:
# no issues, no messages, no sessions, no CSRF tokens; users admin, anonymous, alice, bob.
# Copies DIR/pristine-db over DIR/tracker/db. Stop the server first (start.sh's process):
# the sqlite file is replaced underneath it otherwise, and browser sessions become invalid.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
DIR=$(cd "$1" && pwd)
[ -d "$DIR/pristine-db" ] || { echo "reset: $DIR/pristine-db missing; run setup.sh $DIR" >&2; exit 1; }
rm -rf "$DIR/tracker/db.new"
cp -a "$DIR/pristine-db" "$DIR/tracker/db.new"
rm -rf "$DIR/tracker/db"
mv "$DIR/tracker/db.new" "$DIR/tracker/db"
rm -f "$DIR/tracker/mail.log"
