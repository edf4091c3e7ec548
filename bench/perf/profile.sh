#!/usr/bin/env bash
# CPU profiles of the standalone (its --cpuprofile flag) and of the perf
# client (the hidden --cpuprofile flag of `magnetar perf`) under
#   1. max produce for DURATION, and
#   2. catch-up consume of that backlog after a restart (cold caches: the
#      reads come from the entry logs).
# Also reports the CPU seconds each process used, so the split between
# client and server is visible. Writes *.pprof and *.top.txt into OUT.
#
# Env: DURATION (20s), OUT (new /tmp dir), MAGNETAR_BIN, PRODUCE_FLAGS,
#      CONSUME_FLAGS (as in run.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
DURATION=${DURATION:-20s}
PRODUCE_FLAGS=${PRODUCE_FLAGS:---num-producers 2 --max-pending 10000 --batch-delay 10ms --batch-max-messages 2000 --batch-max-bytes 524288 --memory-limit 536870912}
CONSUME_FLAGS=${CONSUME_FLAGS:---receiver-queue-size 5000}
OUT=${OUT:-$(mktemp -d /tmp/magnetar-profile.XXXXXX)}
mkdir -p "$OUT"
if [[ -z ${MAGNETAR_BIN:-} ]]; then
  MAGNETAR_BIN="$OUT/magnetar"
  (cd "$repo" && go build -o "$MAGNETAR_BIN" ./cmd/magnetar)
fi
data="$OUT/data"
pid=
cpu_secs() { # utime+stime of a pid, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$1/stat"
}
start() { # $1 = profile name
  : >"$OUT/ready"
  "$MAGNETAR_BIN" standalone --data-dir "$data" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
    --advertised-host 127.0.0.1 --log-level warn --cpuprofile "$OUT/server-$1.pprof" >"$OUT/ready" 2>>"$OUT/server.log" &
  pid=$!
  until grep -q 'standalone ready' "$OUT/ready"; do kill -0 $pid; sleep 0.1; done
  SVC=$(grep -o 'service=[^ ]*' "$OUT/ready" | cut -d= -f2)
}
stop() { kill -TERM $pid; wait $pid || true; }
top() { go tool pprof -top -nodecount=40 "$1" >"${1%.pprof}.top.txt" 2>/dev/null; }
trap 'kill $pid 2>/dev/null || true' EXIT

start produce
s0=$(cpu_secs $pid)
TIMEFORMAT='client cpu: user %U s, sys %S s, wall %R s'
{ time "$MAGNETAR_BIN" perf produce --service-url "$SVC" -q --json --topic prof --size 200 \
    --test-duration "$DURATION" $PRODUCE_FLAGS --cpuprofile "$OUT/client-produce.pprof" >"$OUT/produce.json"; } 2>"$OUT/client-produce.time"
s1=$(cpu_secs $pid)
echo "produce: $(cat "$OUT/produce.json")"
echo "produce: server cpu $(python3 -c "print(round($s1-$s0,1))") s; $(cat "$OUT/client-produce.time")"
stop
n=$(python3 -c "import json; print(json.load(open('$OUT/produce.json'))['messages'])")

start catchup
s0=$(cpu_secs $pid)
{ time "$MAGNETAR_BIN" perf consume --service-url "$SVC" -q --json --topic prof --subscription-name prof \
    --subscription-position earliest --num-messages "$n" --test-duration 300s $CONSUME_FLAGS \
    --cpuprofile "$OUT/client-catchup.pprof" >"$OUT/catchup.json"; } 2>"$OUT/client-catchup.time"
s1=$(cpu_secs $pid)
echo "catch-up: $(cat "$OUT/catchup.json")"
echo "catch-up: server cpu $(python3 -c "print(round($s1-$s0,1))") s; $(cat "$OUT/client-catchup.time")"
stop
for f in "$OUT"/*.pprof; do top "$f"; done
echo "profiles and tops in $OUT"
