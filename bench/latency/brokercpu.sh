#!/usr/bin/env bash
# The broker's own cost at a fixed publish rate: starts a durable standalone,
# runs one pulsar-client-go producer (bench/latency/goclient, 200 B, 1 ms
# batching) at RATE msgs/s for 16 s, and over the middle 10 s reads the
# standalone's user and system CPU ticks (/proc/PID/stat) and the summed
# context switches of its threads (/proc/PID/task/*/status). Prints one
# line with those and the producer's publish p50/p99/p999.
#
#   bash bench/latency/brokercpu.sh [standalone flags...]
#
# Env: RATE (10000), MAGNETAR_BIN (default: build), PORT (16651), HTTP_PORT (18081).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
RATE=${RATE:-10000}
PORT=${PORT:-16651}
HTTP_PORT=${HTTP_PORT:-18081}
d=$(mktemp -d /tmp/magnetar-brokercpu.XXXXXX)
trap 'rm -rf "$d"' EXIT
if [[ -z ${MAGNETAR_BIN:-} ]]; then
  MAGNETAR_BIN=$d/magnetar
  (cd "$repo" && go build -o "$MAGNETAR_BIN" ./cmd/magnetar)
fi
(cd "$repo" && go build -o "$d/goclient" ./bench/latency/goclient)
"$MAGNETAR_BIN" standalone --data-dir "$d/data" --listen "127.0.0.1:$PORT" --http "127.0.0.1:$HTTP_PORT" \
  --advertised-host 127.0.0.1 --log-level warn --no-functions-worker "$@" >"$d/out" 2>&1 &
p=$!
trap 'kill $p 2>/dev/null || true; wait $p 2>/dev/null || true; rm -rf "$d"' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$HTTP_PORT/admin/v2/clusters" >/dev/null 2>&1 && break
  sleep 0.1
done
"$d/goclient" produce --service-url "pulsar://127.0.0.1:$PORT" --topic persistent://public/default/brokercpu \
  --size 200 --rate "$RATE" --duration 16s --window 10s --num-producers 1 --max-pending 10000 --batch-delay 1ms >"$d/prod.json" 2>"$d/prod.err" &
c=$!
ticks() { awk '{print $14, $15}' "/proc/$p/stat"; }
ctxsw() { cat /proc/"$p"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s}'; }
sleep 4
read -r u0 s0 < <(ticks); x0=$(ctxsw)
sleep 10
read -r u1 s1 < <(ticks); x1=$(ctxsw)
wait $c
lat=$(python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["latency"]; print(l["p50_us"], l["p99_us"], l["p999_us"])' "$d/prod.json")
echo "rate $RATE: broker CPU ticks in 10 s: user $((u1-u0)) sys $((s1-s0)) (tick = $(getconf CLK_TCK)/s); context switches $((x1-x0)) (live threads); publish p50/p99/p999 us $lat"
