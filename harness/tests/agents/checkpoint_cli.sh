#!/usr/bin/env bash
# An agent in bash, for `tests/checkpoint_cli.rs`: it drives its browser over raw WebDriver
# (bash's /dev/tcp, no curl needed) and writes its checkpoints with `browser-fault checkpoint`.
# A first run records its intent, verifies and stops at `after_target_verified` (where the
# trial crashes it); a restart finds the record, proves the journal refuses a skipped step,
# and stops safely.
set -euo pipefail
bf="$BROWSER_FAULT_CLI"

# One WebDriver session on the worker's endpoint.
address="${BROWSER_FAULT_WEBDRIVER_URL#http://}"
hostport="${address%%/*}"
base=""
[ "$address" != "$hostport" ] && base="/${address#*/}"
base="${base%/}"
body='{"capabilities":{}}'
exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}"
printf 'POST %s/session HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "$base" "$hostport" "${#body}" "$body" >&3
read -r status <&3
cat <&3 >/dev/null
exec 3<&-
case "$status" in
    *" 200 "*) ;;
    *) echo "no WebDriver session: $status" >&2; exit 1 ;;
esac

record=$("$bf" checkpoint side-effect post-hello)
if [ -n "$record" ]; then
    "$bf" checkpoint log "restart: found ${record#* }"
    # A skipped step is refused by the journal, with exit status 3.
    set +e
    "$bf" checkpoint transition post-hello REMOTE_CONFIRMED --from INTENT_RECORDED 2>/dev/null
    refused=$?
    set -e
    "$bf" checkpoint log "skipped step: exit status $refused"
    "$bf" claim safe_stop stale_target
    exit 0
fi

[ "$("$bf" checkpoint profile)" = trusted ]
[ -n "$("$bf" checkpoint account id)" ]
"$bf" checkpoint intent post-hello --args "thread=42;body=hello" >/dev/null
"$bf" checkpoint fault-point before_verify
"$bf" checkpoint checks account tenant object
"$bf" checkpoint transition post-hello TARGET_VERIFIED
"$bf" checkpoint fault-point after_target_verified
# Not reached in the trial: the fault strikes at the mark above.
"$bf" claim completed
