#!/usr/bin/env bash
# pulsar-client-go catch-up and produce rates with the client process at
# GOGC=100 (Go's default) and GOGC=400, alternated on one standalone so both
# arms see the same machine. 200 B messages, durable. The backlog for the
# catch-up arm is written with the raw client (fast; same batching as run.sh).
#
# Env: MAGNETAR_BIN (skip the build), RUNS (3), MSGS (6000000), DURATION (10s).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-3}; MSGS=${MSGS:-6000000}; DURATION=${DURATION:-10s}
OUT=$(mktemp -d /tmp/magnetar-gogc.XXXXXX)
if [[ -z ${MAGNETAR_BIN:-} ]]; then
  MAGNETAR_BIN="$OUT/magnetar"; (cd "$repo" && go build -o "$MAGNETAR_BIN" ./cmd/magnetar)
fi
"$MAGNETAR_BIN" standalone --data-dir "$OUT/data" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
  --advertised-host 127.0.0.1 --log-level warn >"$OUT/ready" 2>"$OUT/log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$OUT/data"' EXIT
for _ in $(seq 600); do grep -q 'magnetar standalone ready' "$OUT/ready" && break; sleep 0.1; done
SVC=$(grep -o 'service=[^ ]*' "$OUT/ready" | cut -d= -f2)
B="--batch-max-messages 2000 --batch-max-bytes 524288"
"$MAGNETAR_BIN" perf produce --raw --service-url "$SVC" --topic gogc-backlog --size 200 --num-messages "$MSGS" \
  --num-producers 2 --max-pending 20000 $B -q --json >/dev/null
row() { python3 -c 'import json,sys; d=json.load(open(sys.argv[3])); u,s=open(sys.argv[4]).read().split()
print(sys.argv[1], "GOGC=%s" % sys.argv[2], round(d["msgs_per_sec"]), "msgs/s", round((float(u)+float(s))*1e6/d["messages"], 2), "client µs/msg")' "$@"; }
for r in $(seq "$RUNS"); do
  for g in 100 400; do
    GOGC=$g /usr/bin/time -f "%U %S" -o "$OUT/t" "$MAGNETAR_BIN" perf consume --service-url "$SVC" --topic gogc-backlog \
      --subscription-name "s$r-$g" --subscription-position earliest --num-messages "$MSGS" --receiver-queue-size 5000 -q --json >"$OUT/c.json"
    row catch-up $g "$OUT/c.json" "$OUT/t"
  done
done
for r in $(seq "$RUNS"); do
  for g in 100 400; do
    GOGC=$g /usr/bin/time -f "%U %S" -o "$OUT/t" "$MAGNETAR_BIN" perf produce --service-url "$SVC" --topic "gogc-p$r-$g" --size 200 \
      --test-duration "$DURATION" --num-producers 2 --max-pending 10000 --batch-delay 10ms $B --memory-limit 536870912 -q --json >"$OUT/p.json"
    row produce $g "$OUT/p.json" "$OUT/t"
  done
done
