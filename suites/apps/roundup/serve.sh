#!/usr/bin/env bash
# serve.sh DIR PORT [WEB]: start.sh DIR PORT [WEB] for as long as standard input stays open. The caller
# (the Roundup suite) keeps a pipe to it, so the server stops when the caller exits, however
# it exits (a SIGKILL included): nothing of a run outlives it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/start.sh" "$@" </dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
# Until the caller's end of the pipe closes.
cat >/dev/null
