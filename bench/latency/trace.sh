#!/usr/bin/env bash
# A Go execution trace of a standalone taking RATE msgs/s (200 B, durable,
# with pulsar-perf's 1 ms batch delay unless PRODUCE_FLAGS says otherwise)
# for DURATION, and where its goroutines waited: scheduler latency
# (runnable -> running), blocking on sync primitives and in syscalls, as
# pprof top lists. The load is `magnetar perf`, or pulsar-client-go
# (bench/latency/goclient) with CLIENT=go.
#
#   bench/latency/trace.sh            # RATE=10000 DURATION=10s
#   CLIENT=go PRODUCE_FLAGS=--disable-batching bench/latency/trace.sh
#   go tool trace $OUT/standalone.trace   # the full trace in a browser
#
# Env: RATE, DURATION, PRODUCE_FLAGS, CLIENT (magnetar | go),
#      STANDALONE_FLAGS, MAGNETAR_BIN, OUT.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
RATE=${RATE:-10000}
DURATION=${DURATION:-10s}
STANDALONE_FLAGS=${STANDALONE_FLAGS:-}
PRODUCE_FLAGS=${PRODUCE_FLAGS:---batch-delay 1ms}
CLIENT=${CLIENT:-magnetar}
OUT=${OUT:-$(mktemp -d /tmp/magnetar-trace.XXXXXX)}
mkdir -p "$OUT"
if [[ -z ${MAGNETAR_BIN:-} ]]; then
  MAGNETAR_BIN="$OUT/magnetar"
  (cd "$repo" && go build -o "$MAGNETAR_BIN" ./cmd/magnetar)
fi
if [[ $CLIENT == go ]]; then
  (cd "$repo" && go build -o "$OUT/goclient" ./bench/latency/goclient)
fi
# shellcheck disable=SC2086
"$MAGNETAR_BIN" standalone --data-dir "$OUT/data" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
  --advertised-host 127.0.0.1 --log-level warn --no-functions-worker --trace "$OUT/standalone.trace" \
  $STANDALONE_FLAGS >"$OUT/ready" 2>"$OUT/log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$OUT/data"' EXIT
for _ in $(seq 600); do grep -q 'magnetar standalone ready' "$OUT/ready" && break; sleep 0.1; done
SVC=$(grep -o 'service=[^ ]*' "$OUT/ready" | cut -d= -f2)
# shellcheck disable=SC2086
if [[ $CLIENT == go ]]; then
  "$OUT/goclient" produce --service-url "$SVC" --topic trace --size 200 --rate "$RATE" \
    --duration "$DURATION" --window 1s $PRODUCE_FLAGS >"$OUT/pub.json"
else
  "$MAGNETAR_BIN" perf produce --service-url "$SVC" --topic trace --size 200 --rate "$RATE" \
    --test-duration "$DURATION" --window 1s $PRODUCE_FLAGS -q --json >"$OUT/pub.json"
fi
kill -TERM $pid; wait $pid || true
trap 'rm -rf "$OUT/data"' EXIT
echo "publish: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["latency"]; print("p50 %d p99 %d p999 %d us" % (d["p50_us"], d["p99_us"], d["p999_us"]))' "$OUT/pub.json")"
for kind in sched sync syscall; do
  go tool trace -pprof="$kind" "$OUT/standalone.trace" >"$OUT/$kind.pprof" 2>/dev/null || continue
  echo "== $kind: where goroutines waited (top by total wait)"
  go tool pprof -top -nodecount=25 "$OUT/$kind.pprof" 2>/dev/null | sed -n '1,32p'
done
echo "trace: $OUT/standalone.trace"
