#!/usr/bin/env bash
# Magnetar vs NATS JetStream, 200-byte messages, durable (fsync on), client
# and server on this machine. In one run: build magnetar, then RUNS times:
#   magnetar standalone on a temp dir, measured with `magnetar perf`:
#     (a) max produce msgs/s                (PRODUCE_FLAGS, DURATION)
#     (b) tailing consume msgs/s            (consumer running while producing)
#     (c) catch-up consume msgs/s           (the backlog (a) left, from earliest)
#     (d) publish latency p50/p99 at LAT_FRACTION of (a)'s rate
#     (e) max produce msgs/s with the raw protocol client (perf --raw,
#         RAW_PRODUCE_FLAGS, DURATION, a fresh topic)
#     (f) catch-up consume msgs/s of (e)'s backlog with the raw client
#     with client and server CPU seconds of (a), (c), (e) and (f)
#   NATS JetStream 2.15.2 at its default and with sync_interval: always
#   (bench/peer/nats.sh).
# and print the medians as one table with ratios. Raw figures stay in OUT.
#
# Env: PRODUCE_FLAGS, CONSUME_FLAGS, LAT_FLAGS, RAW_PRODUCE_FLAGS, RAW_CONSUME_FLAGS (see below), RUNS (3),
#      DURATION (20s), LAT_DURATION (15s), LAT_FRACTION (0.5),
#      OUT (a new /tmp dir), MAGNETAR_BIN (skip the build), SKIP_PEER=1, SKIP_RAW=1.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-3}
DURATION=${DURATION:-20s}
LAT_DURATION=${LAT_DURATION:-15s}
LAT_FRACTION=${LAT_FRACTION:-0.5}
SIZE=200
PRODUCE_FLAGS=${PRODUCE_FLAGS:---num-producers 2 --max-pending 10000 --batch-delay 10ms --batch-max-messages 2000 --batch-max-bytes 524288 --memory-limit 536870912}
CONSUME_FLAGS=${CONSUME_FLAGS:---receiver-queue-size 5000}
# (d) uses pulsar-perf's 1 ms batch delay: at a fixed rate the delay, not
# the server, would otherwise set the latency.
LAT_FLAGS=${LAT_FLAGS:---num-producers 2 --max-pending 10000 --batch-delay 1ms --batch-max-messages 2000 --batch-max-bytes 524288 --memory-limit 536870912}
# (e)/(f): the same batching as (a)/(c) for the raw client (it has no memory limit);
# a window of 20000 messages per producer: 10000 left the raw run latency-bound.
RAW_PRODUCE_FLAGS=${RAW_PRODUCE_FLAGS:---num-producers 2 --max-pending 20000 --batch-delay 10ms --batch-max-messages 2000 --batch-max-bytes 524288}
RAW_CONSUME_FLAGS=${RAW_CONSUME_FLAGS:---receiver-queue-size 5000}
OUT=${OUT:-$(mktemp -d /tmp/magnetar-bench.XXXXXX)}
mkdir -p "$OUT"
echo "results in $OUT" >&2
echo "commit $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD -- . 2>/dev/null || echo ' (+ uncommitted changes)'), $(nproc) cpus" | tee "$OUT/build.txt" >&2

if [[ -z ${MAGNETAR_BIN:-} ]]; then
  MAGNETAR_BIN="$OUT/magnetar"
  (cd "$repo" && go build -o "$MAGNETAR_BIN" ./cmd/magnetar)
fi
[[ -n ${SKIP_PEER:-} ]] || "$repo/bench/peer/build.sh" >/dev/null

# json FILE KEY: a top-level or latency.* field of a perf --json summary.
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); k=sys.argv[2]
v=d["latency"][k[4:]] if k.startswith("lat.") else d[k]; print(round(v) if isinstance(v,float) else v)' "$1" "$2"; }

standalone_pid=
stop_standalone() {
  [[ -n $standalone_pid ]] || return 0
  kill -TERM "$standalone_pid" 2>/dev/null || true
  wait "$standalone_pid" 2>/dev/null || true
  standalone_pid=
}
trap stop_standalone EXIT

# start_standalone DIR [flags]: sets SVC and ADMIN.
start_standalone() {
  local dir=$1; shift
  "$MAGNETAR_BIN" standalone --data-dir "$dir" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
    --advertised-host 127.0.0.1 --log-level warn "$@" >"$dir.ready" 2>"$dir.log" &
  standalone_pid=$!
  for _ in $(seq 600); do
    if grep -q 'magnetar standalone ready' "$dir.ready"; then
      SVC=$(grep -o 'service=[^ ]*' "$dir.ready" | cut -d= -f2)
      ADMIN=$(grep -o 'http=[^ ]*' "$dir.ready" | cut -d= -f2)
      return 0
    fi
    kill -0 "$standalone_pid" 2>/dev/null || { cat "$dir.log" >&2; return 1; }
    sleep 0.1
  done
  echo "standalone not ready" >&2; return 1
}

perf() { "$MAGNETAR_BIN" perf "$@" --service-url "$SVC" -q --json; }

# cpu_perf KEY perf-args...: perf, and the CPU seconds (user+system) of the
# client and of the standalone during it as KEY_client_cpu_s and
# KEY_server_cpu_s on stdout (perf's own stdout goes where redirected).
server_cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$standalone_pid/stat"; }
cpu_perf() {
  local key=$1 s0 s1 tf; shift
  tf=$(mktemp)
  s0=$(server_cpu)
  /usr/bin/time -f '%U %S' -o "$tf" "$MAGNETAR_BIN" perf "$@" --service-url "$SVC" -q --json
  s1=$(server_cpu)
  echo "${key}_client_cpu_s $(awk '{print $1+$2}' "$tf")" >&3
  echo "${key}_server_cpu_s $(python3 -c "print(round($s1-$s0,2))")" >&3
  rm -f "$tf"
}

magnetar_once() { # $1 = run dir; prints key value lines
  local d=$1 data="$1/data"
  start_standalone "$data"
  exec 3>&1
  # (a) max produce; leaves the backlog for (c).
  cpu_perf mag_produce produce --topic bench-a --size $SIZE --test-duration "$DURATION" $PRODUCE_FLAGS >"$d/a.json"
  local produced peak
  produced=$(json "$d/a.json" messages); peak=$(json "$d/a.json" msgs_per_sec)
  echo "mag_produce $peak"
  echo "mag_produce_msgs $produced"
  echo "mag_produce_p50_us $(json "$d/a.json" lat.p50_us)"
  echo "mag_produce_p99_us $(json "$d/a.json" lat.p99_us)"
  # (c) catch-up: a new subscription reads the whole backlog of (a).
  echo "mag_backlog $produced"
  cpu_perf mag_consume_catchup consume --topic bench-a --subscription-name catchup --subscription-position earliest \
    --num-messages "$produced" --test-duration 300s $CONSUME_FLAGS >"$d/c.json"
  echo "mag_consume_catchup $(json "$d/c.json" msgs_per_sec)"
  # (b) tailing: the consumer is subscribed (earliest on a fresh topic, so
  # nothing is missed) while the producer runs at max.
  perf consume --topic bench-b --subscription-name tail --subscription-position earliest \
    --idle-timeout 3s --test-duration 300s $CONSUME_FLAGS >"$d/b-consume.json" &
  local cpid=$!
  perf produce --topic bench-b --size $SIZE --test-duration "$DURATION" $PRODUCE_FLAGS >"$d/b-produce.json"
  wait $cpid
  echo "mag_tail_produce $(json "$d/b-produce.json" msgs_per_sec)"
  echo "mag_consume_tail $(json "$d/b-consume.json" msgs_per_sec)"
  echo "mag_tail_e2e_p50_us $(json "$d/b-consume.json" lat.p50_us)"
  echo "mag_tail_e2e_p99_us $(json "$d/b-consume.json" lat.p99_us)"
  # (d) latency at a fixed fraction of the peak.
  local rate
  rate=$(python3 -c "print(int($peak*$LAT_FRACTION))")
  perf produce --topic bench-d --size $SIZE --test-duration "$LAT_DURATION" --rate "$rate" $LAT_FLAGS >"$d/d.json"
  echo "mag_fixed_rate $rate"
  echo "mag_fixed_rate_achieved $(json "$d/d.json" msgs_per_sec)"
  echo "mag_fixed_p50_us $(json "$d/d.json" lat.p50_us)"
  echo "mag_fixed_p99_us $(json "$d/d.json" lat.p99_us)"
  if [[ -z ${SKIP_RAW:-} ]]; then
    # (e) max produce with the raw client on a fresh topic; backlog for (f).
    cpu_perf mag_raw_produce produce --raw --topic bench-e --size $SIZE --test-duration "$DURATION" $RAW_PRODUCE_FLAGS >"$d/e.json"
    produced=$(json "$d/e.json" messages)
    echo "mag_raw_produce $(json "$d/e.json" msgs_per_sec)"
    echo "mag_raw_msgs $produced"
    echo "mag_raw_produce_p50_us $(json "$d/e.json" lat.p50_us)"
    echo "mag_raw_produce_p99_us $(json "$d/e.json" lat.p99_us)"
    echo "mag_raw_produce_errors $(json "$d/e.json" errors)"
    # (f) catch-up of (e)'s backlog with the raw client.
    echo "mag_raw_backlog $produced"
    cpu_perf mag_raw_consume_catchup consume --raw --topic bench-e --subscription-name catchup --subscription-position earliest \
      --num-messages "$produced" --test-duration 300s $RAW_CONSUME_FLAGS >"$d/f.json"
    echo "mag_raw_consume_catchup $(json "$d/f.json" msgs_per_sec)"
  fi
  stop_standalone
  echo "mag_data_bytes $(du -sb "$data" | cut -f1)"
  rm -rf "$data"
}

for r in $(seq "$RUNS"); do
  d="$OUT/run$r"; mkdir -p "$d"
  {
    echo "load_before $(cut -d' ' -f1 /proc/loadavg)"
    magnetar_once "$d"
    if [[ -z ${SKIP_PEER:-} ]]; then
      "$repo/bench/peer/nats.sh" default
      "$repo/bench/peer/nats.sh" always
    fi
    echo "load_after $(cut -d' ' -f1 /proc/loadavg)"
  } | tee "$d/figures.kv" >&2
done

python3 "$repo/bench/perf/table.py" "$OUT"/run*/figures.kv
