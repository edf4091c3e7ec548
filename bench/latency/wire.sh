#!/usr/bin/env bash
# Where a publish's time goes, client vs broker: starts a durable
# standalone, sends RATE msgs/s of 200 B from one pulsar-client-go producer
# (bench/latency/goclient; 1 ms batch delay unless PRODUCE_FLAGS says
# otherwise) for 28 s, and captures the loopback traffic of its binary
# port with tcpdump for CAPTURE seconds from the 5th. Prints the client's
# publish percentiles (SendAsync -> callback, whole run) and, from the
# capture (wire.py), the broker's side of each publish: SEND frame in ->
# SEND_RECEIPT out on the wire, plus the clusters of slow sends over time.
#
#   bash bench/latency/wire.sh [standalone flags...]
#   PRODUCE_FLAGS=--disable-batching bash bench/latency/wire.sh
#   bash bench/latency/wire.sh --ledger-dirs /dev/shm/ledgers   # ledgers off the journal's disk
#
# First, as the same-run baseline, the disk's floor (bench/fsync -floor):
# the journal's group commit alone at the rate groups will arrive (RATE
# with --disable-batching, else ~870/s per producer: one batch per
# ~1.15 ms timer tick; FLOOR_RATE overrides, FLOOR_SECONDS 10, 0 = skip).
#
# The capture's kernel buffer is tcpdump's default 2 MiB (CAPTURE_BUFFER_KIB):
# a larger one is allocated when the capture starts, mid-run, and on this
# guest (~12 µs per fresh 4 KiB page, docs/benchmark-machine.md) a 256 MiB
# one stalled the client by 85-280 ms at p99. At half-peak rates the
# default drops packets (wire.py then skips the gaps and says how many);
# 32768 (~0.1 s of page faults at the capture's start) dropped none there.
#
# Needs tcpdump (apt-get install tcpdump) and root for the capture.
# Env: RATE (10000), CAPTURE (20), PRODUCE_FLAGS, MAGNETAR_BIN (default:
# build), PORT (16652), HTTP_PORT (18082), KEEP=1 keeps the directory.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
RATE=${RATE:-10000}
CAPTURE=${CAPTURE:-20}
PRODUCE_FLAGS=${PRODUCE_FLAGS:---batch-delay 1ms}
PORT=${PORT:-16652}
HTTP_PORT=${HTTP_PORT:-18082}
command -v tcpdump >/dev/null || { echo "wire.sh: needs tcpdump (apt-get install tcpdump)" >&2; exit 1; }
d=$(mktemp -d /tmp/magnetar-wire.XXXXXX)
p= t=
cleanup() {
  [[ -n $t ]] && kill "$t" 2>/dev/null
  [[ -n $p ]] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
  if [[ ${KEEP:-0} == 1 ]]; then echo "kept $d" >&2; else rm -rf "$d"; fi
}
trap cleanup EXIT
# shellcheck source=bench/latency/standalone.sh
. "$repo/bench/latency/standalone.sh"
build_bins "$d"
if [[ ${FLOOR_SECONDS:-10} != 0 ]]; then
  if [[ -z ${FLOOR_RATE:-} ]]; then
    if [[ $PRODUCE_FLAGS == *--disable-batching* ]]; then
      FLOOR_RATE=$RATE
    else
      np=$(grep -o -- '--num-producers [0-9]*' <<<"$PRODUCE_FLAGS" | awk '{print $2}' || true)
      FLOOR_RATE=$((870 * ${np:-1}))
    fi
  fi
  disk_floor "$d" "$FLOOR_RATE" "${FLOOR_SECONDS:-10}"
fi
start_standalone "$d" "$PORT" "$HTTP_PORT" "$@"
(sleep 5; exec timeout "$CAPTURE" tcpdump -i lo -nn -s 0 -B "${CAPTURE_BUFFER_KIB:-2048}" -w "$d/cap.pcap" "tcp port $PORT" 2>"$d/tcpdump.err") &
t=$!
# shellcheck disable=SC2086
"$d/goclient" produce --service-url "pulsar://127.0.0.1:$PORT" --topic persistent://public/default/wire \
  --size 200 --rate "$RATE" --duration 28s --window 10s --max-pending 10000 $PRODUCE_FLAGS >"$d/prod.json" 2>"$d/prod.err"
wait "$t" || true
t=
python3 - "$d/prod.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); l = d["latency"]
print("client: achieved %.0f msgs/s; publish p50/p99/p999 %d/%d/%d us" % (d["msgs_per_sec"], l["p50_us"], l["p99_us"], l["p999_us"]))
PY
python3 "$repo/bench/latency/wire.py" "$d/cap.pcap" "$PORT"
