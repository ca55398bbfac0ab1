#!/usr/bin/env bash
# start.sh DIR PORT [WEB] — serve the tracker made by setup.sh at http://127.0.0.1:PORT/tracker/,
# in the foreground, bound to 127.0.0.1 only. The caller backgrounds it and kills it (the script
# execs roundup-server, so the pid it gets is the server's; kill that pid; the per-request
# children it forks (-t fork) each exit after their request).
#
# Ready when stdout shows the line:  Roundup server started on 127.0.0.1:PORT
# (printed after the socket is bound and listening). Request log lines go to stderr.
#
# Roundup builds every absolute URL (form actions, redirects, __came_from) from config.ini's
# [tracker] web, and checks the CSRF Origin/Referer/Host headers of POSTs against it, so it must
# be exactly the served URL: this script rewrites it for PORT before starting, or to WEB when
# given (the URL the browsers use when a front such as a TLS terminator stands before PORT:
# https://tracker.example.test:4443/tracker/).
set -euo pipefail
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: $0 DIR PORT [WEB]" >&2; exit 2; }
DIR=$(cd "$1" && pwd)
PORT=$2
case $PORT in ''|*[!0-9]*) echo "start: PORT must be a number" >&2; exit 2;; esac
TRACKER=$DIR/tracker
[ -f "$TRACKER/.setup-complete" ] || { echo "start: no tracker in $TRACKER; run setup.sh $DIR" >&2; exit 1; }

URL=${3:-"http://127.0.0.1:$PORT/tracker/"}
case $URL in http://*/|https://*/) ;; *) echo "start: WEB must be an http(s) URL ending in /" >&2; exit 2;; esac
# exactly one line `web = ...` exists in config.ini (section [tracker])
sed -i "s|^web = .*\$|web = $URL|" "$TRACKER/config.ini"
grep -qx "web = $URL" "$TRACKER/config.ini" || { echo "start: could not set web URL" >&2; exit 1; }

# roundup-server refuses to run as root ("Can't run as root!") unless told a user with -u;
# as root, run as the owner of the tracker (which may be root itself: -u 0 is accepted).
as_user=()
if [ "$(id -u)" = 0 ]; then
    as_user=(-u "$(stat -c %u "$TRACKER")" -g "$(stat -c %g "$TRACKER")")
fi

export PYTHONUNBUFFERED=1
exec "$DIR/venv/bin/roundup-server" -n 127.0.0.1 -p "$PORT" -t fork "${as_user[@]}" \
    "tracker=$TRACKER"
