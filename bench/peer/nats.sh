#!/usr/bin/env bash
# Runs the NATS JetStream peer benchmark at 200-byte messages in one mode
# and prints "key value" lines (msgs/s, latencies in µs) on stdout.
#
#   bench/peer/nats.sh default|always
#
# default: nats-server -js with its default file store (fsync every 2 min,
#          not durable per message).
# always:  the same with `jetstream { sync_interval: always }` (fsync per
#          write, no group commit).
# Env: PEER_DIR (see build.sh), NATS_MSGS (default 1000000),
#      NATS_MSGS_ALWAYS (default 20000), SIZE (default 200).
set -euo pipefail
mode=${1:?usage: nats.sh default|always}
here=$(cd "$(dirname "$0")" && pwd)
BIN=$("$here/build.sh")
SIZE=${SIZE:-200}
N=${NATS_MSGS:-1000000}
[[ $mode == always ]] && N=${NATS_MSGS_ALWAYS:-20000}

work=$(mktemp -d /tmp/nats-bench.XXXXXX)
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
nb() { "$BIN/nats" -s "nats://127.0.0.1:$port" bench js "$@" --size "$SIZE" --no-progress 2>&1; }
# rate LINE: the msgs/sec figure of a "stats:" line.
rate() { grep -m1 'stats:' | sed -E 's/.*stats: ([0-9,]+) msgs\/sec.*/\1/' | tr -d ,; }
lat() { grep -m1 'stats:' | sed -E "s/.*$1: ([0-9,.]+)us.*/\\1/" | tr -d , | cut -d. -f1; }

out=$(nb pub async bench.a --create --purge --msgs "$N")
echo "nats_${mode}_pub_async $(rate <<<"$out")"
echo "nats_${mode}_pub_async_p50_us $(lat P50 <<<"$out")"
echo "nats_${mode}_pub_async_p99_us $(lat P99 <<<"$out")"
if [[ $mode == default ]]; then
  echo "nats_${mode}_consume_durable $(nb consume --msgs "$N" | rate)"
  echo "nats_${mode}_consume_ordered $(nb ordered --msgs "$N" | rate)"
  echo "nats_${mode}_pub_fast $(nb pub fast bench.a --purge --msgs "$N" | rate)"
else
  echo "nats_${mode}_pub_atomic $(nb pub atomic bench.a --purge --msgs "$((N * 4))" | rate)"
fi
