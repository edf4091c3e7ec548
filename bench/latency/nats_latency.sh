#!/usr/bin/env bash
# The NATS JetStream peer's publish latency at fixed rates, 200-byte
# messages: `nats bench js pub async` throttled to each rate for
# NATS_DURATION, on a fresh file store, in batches of about 1 ms worth of
# messages (rate/1000, at least 1; NATS_BATCH overrides), as the Pulsar
# producers batch for 1 ms. natscli times a batch from its first publish to
# its last ack, which is each of its messages' latency. Prints key value
# lines (nats_MODE_rRATE_{rate,achieved,batch,p50_us,p99_us,p999_us}).
# In always mode the peer manages a few hundred to a few thousand fsyncs a
# second, far under the asked rates: it sends NATS_ALWAYS_MSGS (5000)
# messages at the asked rate instead of running NATS_DURATION (natscli
# would send rate x duration messages whatever it takes).
#
#   NATS_RATES="10000 150000" bench/latency/nats_latency.sh default|always
#
# default: nats-server -js at its defaults (fsync every 2 min: not durable
#          per message). always: `jetstream { sync_interval: always }`
#          (fsync per write, no group commit). The peer is built by
#          bench/peer/build.sh (PEER_DIR).
set -euo pipefail
mode=${1:?usage: nats_latency.sh default|always}
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$("$repo/bench/peer/build.sh")
SIZE=${SIZE:-200}
NATS_RATES=${NATS_RATES:-10000}
NATS_DURATION=${NATS_DURATION:-30s}
NATS_ALWAYS_MSGS=${NATS_ALWAYS_MSGS:-5000}

work=$(mktemp -d /tmp/nats-lat.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
conf="$work/server.conf"
{
  echo "listen: 127.0.0.1:$port"
  if [[ $mode == always ]]; then echo "jetstream { sync_interval: always }"; fi
} >"$conf"
"$BIN/nats-server" -js -a 127.0.0.1 -p "$port" -sd "$work/store" -c "$conf" >"$work/server.log" 2>&1 &
srv=$!
cleanup() { kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 300); do
  grep -q "Server is ready" "$work/server.log" && break
  kill -0 "$srv" || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
rate() { grep -m1 'stats:' | sed -E 's/.*stats: ([0-9,]+) msgs\/sec.*/\1/' | tr -d ,; }
lat() { grep -m1 'stats:' | sed -E "s/.*$1: ([0-9,.]+)us.*/\\1/" | tr -d , | cut -d. -f1; }
for r in $NATS_RATES; do
  batch=${NATS_BATCH:-$(( r / 1000 > 1 ? r / 1000 : 1 ))}
  amount=(--duration "$NATS_DURATION")
  [[ $mode == always ]] && amount=(--msgs "$NATS_ALWAYS_MSGS")
  out=$("$BIN/nats" -s "nats://127.0.0.1:$port" bench js pub async bench.a --create --purge \
    --size "$SIZE" --throughput "$r" "${amount[@]}" --batch "$batch" --no-progress 2>&1)
  echo "$out" >"$work/pub-$r.txt"
  k="nats_${mode}_r$r"
  echo "${k}_rate $r"
  echo "${k}_achieved $(rate <<<"$out")"
  echo "${k}_p50_us $(lat P50 <<<"$out")"
  echo "${k}_p99_us $(lat P99 <<<"$out")"
  echo "${k}_p999_us $(lat P99.9 <<<"$out")"
  echo "${k}_batch $batch"
done
