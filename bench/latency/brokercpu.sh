#!/usr/bin/env bash
# Where the CPU goes at a fixed publish rate: starts a durable standalone,
# optionally a tailing pulsar-client-go consumer (CONSUMER=1), and
# pulsar-client-go producers (bench/latency/goclient, 200 B, 1 ms batching)
# at RATE msgs/s for 16 s. Over the middle 10 s it reads the CPU ticks
# (user + system, /proc/PID/stat) of the standalone, the producer and the
# consumer processes, the machine's idle ticks (/proc/stat), and the summed
# context switches of the standalone's threads. Prints one line with those
# and the publish (and end-to-end) latency percentiles.
#
#   bash bench/latency/brokercpu.sh [standalone flags...]
#   RATE=50000 PRODUCERS=2 CONSUMER=1 bash bench/latency/brokercpu.sh
#
# Env: RATE (10000), PRODUCERS (1), CONSUMER (0), MAGNETAR_BIN (default:
# build), PORT (16651), HTTP_PORT (18081).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
RATE=${RATE:-10000}
PRODUCERS=${PRODUCERS:-1}
CONSUMER=${CONSUMER:-0}
PORT=${PORT:-16651}
HTTP_PORT=${HTTP_PORT:-18081}
d=$(mktemp -d /tmp/magnetar-brokercpu.XXXXXX)
p= c=
cleanup() {
  [[ -n $c ]] && kill "$c" 2>/dev/null
  [[ -n $p ]] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
  rm -rf "$d"
}
trap cleanup EXIT
# shellcheck source=bench/latency/standalone.sh
. "$repo/bench/latency/standalone.sh"
build_bins "$d"
start_standalone "$d" "$PORT" "$HTTP_PORT" "$@"
svc=pulsar://127.0.0.1:$PORT
topic=persistent://public/default/brokercpu
if [[ $CONSUMER == 1 ]]; then
  "$d/goclient" consume --service-url "$svc" --topic "$topic" --subscription tail --window 10s \
    --idle-timeout 5s --receiver-queue-size 1000 >"$d/cons.json" 2>"$d/cons.err" &
  c=$!
  sleep 1
fi
"$d/goclient" produce --service-url "$svc" --topic "$topic" --size 200 --rate "$RATE" --duration 16s \
  --window 10s --num-producers "$PRODUCERS" --max-pending 10000 --batch-delay 1ms \
  --batch-max-messages 2000 --batch-max-bytes 524288 --memory-limit 536870912 >"$d/prod.json" 2>"$d/prod.err" &
pp=$!
ticks() { [[ -n $1 ]] && awk '{print $14 + $15}' "/proc/$1/stat" || echo 0; }
idle() { awk '/^cpu / {print $5}' /proc/stat; }
ctxsw() { cat /proc/"$p"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s}'; }
sleep 4
b0=$(ticks "$p") q0=$(ticks "$pp") k0=$(ticks "$c") i0=$(idle) x0=$(ctxsw)
sleep 10
b1=$(ticks "$p") q1=$(ticks "$pp") k1=$(ticks "$c") i1=$(idle) x1=$(ctxsw)
wait "$pp"
[[ -n $c ]] && wait "$c"
c=
lat=$(python3 - "$d/prod.json" "$d/cons.json" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1])); l = d["latency"]
out = "achieved %.0f msgs/s; publish p50/p99/p999 %d/%d/%d us" % (d["msgs_per_sec"], l["p50_us"], l["p99_us"], l["p999_us"])
if os.path.exists(sys.argv[2]) and os.path.getsize(sys.argv[2]) > 0:
    e = json.load(open(sys.argv[2]))["latency"]
    out += "; end-to-end p50/p99 %d/%d us" % (e["p50_us"], e["p99_us"])
print(out)
PY
)
hz=$(getconf CLK_TCK)
echo "rate $RATE, $PRODUCERS producer(s), consumer $CONSUMER: CPU ticks in 10 s (${hz}/s): standalone $((b1-b0)), producer $((q1-q0)), consumer $((k1-k0)), machine idle $((i1-i0)) of $((hz*10*$(nproc))); standalone context switches $((x1-x0)); $lat"
