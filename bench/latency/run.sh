#!/usr/bin/env bash
# Publish and end-to-end latency of a durable standalone, as issue 20 item 1
# states its targets: pulsar-client-go producers and consumer
# (bench/latency/goclient; CLIENT=magnetar uses `magnetar perf`, the
# project's own client, instead), 200-byte messages, journal fdatasync on,
# percentiles per 10-second window.
#
# In one run: build magnetar, then RUNS times, each on a fresh standalone:
#   (peak) max-rate produce for PEAK_DURATION (bench/perf/run.sh's (a)
#          flags): the peak rate, and the publish latency at peak
#   (10k)  RATE_LOW msgs/s for DURATION with LOW_FLAGS (pulsar-perf's
#          defaults: one producer, 1 ms batch delay), a tailing consumer
#          subscribed before the first message
#   (half) half of (peak)'s rate for DURATION with HALF_FLAGS, a tailing
#          consumer likewise
# each fixed-rate step reporting publish latency (send -> receipt) and
# end-to-end latency (send time stamped in the payload -> received by the
# tailing consumer) for the whole step and per WINDOW, plus the per-stage
# breakdown from the standalone's /metrics scraped before and after the
# step (stages.py: broker publish, bookie add, journal group sync, group
# sizes, GC cycles). Before each run, the disk's floor (bench/fsync
# -floor) at the 10k step's group rate: the latency no durable broker on
# this disk goes below in that run's hour. Then the NATS JetStream peer (bench/peer, default and
# sync_interval: always) publishing at the same rates, if SKIP_PEER is unset.
# Prints the medians over the runs as one table; raw JSON and key/value
# files stay in OUT.
#
# Env: RUNS (3), DURATION (30s), PEAK_DURATION (20s), WINDOW (10s),
#      RATE_LOW (10000), HALF_FRACTION (0.5), LOW_FLAGS, HALF_FLAGS,
#      PEAK_FLAGS, CONSUME_FLAGS, FLOOR_RATE (870: one group per ~1.15 ms
#      batch tick of the 10k step's producer), FLOOR_SECONDS (20; 0 skips
#      the floor), STANDALONE_FLAGS (extra standalone flags,
#      e.g. --journal-max-group-wait 1ms for an A/B), MAGNETAR_BIN (skip the
#      build), OUT (a new /tmp dir), SKIP_PEER=1, SKIP_PEAK=1 (then PEAK
#      must be given in msgs/s), CLIENT (go | magnetar). The *_FLAGS are
#      `magnetar perf` flags; goclient takes the same names.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/bench/latency
RUNS=${RUNS:-3}
DURATION=${DURATION:-30s}
PEAK_DURATION=${PEAK_DURATION:-20s}
WINDOW=${WINDOW:-10s}
RATE_LOW=${RATE_LOW:-10000}
FLOOR_RATE=${FLOOR_RATE:-870}
FLOOR_SECONDS=${FLOOR_SECONDS:-20}
HALF_FRACTION=${HALF_FRACTION:-0.5}
SIZE=200
LOW_FLAGS=${LOW_FLAGS:---num-producers 1 --max-pending 10000 --batch-delay 1ms}
HALF_FLAGS=${HALF_FLAGS:---num-producers 2 --max-pending 10000 --batch-delay 1ms --batch-max-messages 2000 --batch-max-bytes 524288 --memory-limit 536870912}
PEAK_FLAGS=${PEAK_FLAGS:---num-producers 2 --max-pending 10000 --batch-delay 10ms --batch-max-messages 2000 --batch-max-bytes 524288 --memory-limit 536870912}
CONSUME_FLAGS=${CONSUME_FLAGS:---receiver-queue-size 1000}
STANDALONE_FLAGS=${STANDALONE_FLAGS:-}
CLIENT=${CLIENT:-go}
OUT=${OUT:-$(mktemp -d /tmp/magnetar-latency.XXXXXX)}
mkdir -p "$OUT"
echo "results in $OUT" >&2
echo "commit $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD -- . 2>/dev/null || echo ' (+ uncommitted changes)'), $(nproc) cpus, client $CLIENT, standalone flags: ${STANDALONE_FLAGS:-none}" | tee "$OUT/build.txt" >&2

if [[ -z ${MAGNETAR_BIN:-} ]]; then
  MAGNETAR_BIN="$OUT/magnetar"
  (cd "$repo" && go build -o "$MAGNETAR_BIN" ./cmd/magnetar)
fi
GOCLIENT=$OUT/goclient
(cd "$repo" && go build -o "$GOCLIENT" ./bench/latency/goclient)
FSYNC=$OUT/fsync
(cd "$repo" && go build -o "$FSYNC" ./bench/fsync)

# floor DIR: the disk's floor at the 10k step's group rate (bench/fsync
# -floor: the journal's group commit alone), as key value lines.
floor() {
  "$FSYNC" -dir "$1" -floor "$FLOOR_RATE" -duration "${FLOOR_SECONDS}s" -window "$WINDOW" -rounds 1 | awk '
    /latency p50/ { print "floor_p50_us", $3 * 1000; print "floor_p99_us", $5 * 1000; print "floor_p999_us", $7 * 1000 }
    /per window/ { m = 0; for (i = 7; i <= NF; i++) { split($i, a, "/"); if (a[1] + 0 > m) m = a[1] + 0 }; print "floor_worst_window_p99_us", m * 1000 }'
}

# json FILE EXPR: a value of a perf --json summary (python expression on d).
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=eval(sys.argv[2]); print(round(v) if isinstance(v,float) else v)' "$1" "$2"; }
# Worst window's p99 / p999 (windows with at least 100 samples).
worst() { json "$1" "max([w['$2'] for w in d.get('windows',[]) if w['msgs']>=100] or [-1])"; }

standalone_pid=
stop_standalone() {
  [[ -n $standalone_pid ]] || return 0
  kill -TERM "$standalone_pid" 2>/dev/null || true
  wait "$standalone_pid" 2>/dev/null || true
  standalone_pid=
}
trap stop_standalone EXIT

start_standalone() { # DIR: sets SVC and ADMIN
  local dir=$1
  # shellcheck disable=SC2086
  "$MAGNETAR_BIN" standalone --data-dir "$dir" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
    --advertised-host 127.0.0.1 --log-level warn --no-functions-worker $STANDALONE_FLAGS >"$dir.ready" 2>"$dir.log" &
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

# produce TOPIC RATE DURATION FLAGS...: publish latency JSON on stdout
# (RATE 0: as fast as the producers go).
produce() {
  local topic=$1 rate=$2 dur=$3; shift 3
  if [[ $CLIENT == go ]]; then
    "$GOCLIENT" produce --service-url "$SVC" --topic "$topic" --size $SIZE --rate "$rate" --duration "$dur" --window "$WINDOW" "$@"
  elif [[ $rate == 0 ]]; then
    perf produce --topic "$topic" --size $SIZE --test-duration "$dur" --window "$WINDOW" "$@"
  else
    perf produce --topic "$topic" --size $SIZE --rate "$rate" --test-duration "$dur" --payload-timestamp --window "$WINDOW" "$@"
  fi
}

# tail TOPIC FLAGS...: a tailing consumer's end-to-end latency JSON.
tail_consume() {
  local topic=$1; shift
  if [[ $CLIENT == go ]]; then
    "$GOCLIENT" consume --service-url "$SVC" --topic "$topic" --subscription tail --window "$WINDOW" --idle-timeout 3s "$@" 2>/dev/null
  else
    perf consume --topic "$topic" --subscription-name tail --subscription-position earliest \
      --payload-timestamp --window "$WINDOW" --idle-timeout 3s --test-duration 600s "$@"
  fi
}

# wait_sub TOPIC SUB: until the subscription exists (the consumer is attached).
wait_sub() {
  for _ in $(seq 300); do
    curl -sf "$ADMIN/admin/v2/persistent/public/default/$1/subscriptions" | grep -q "\"$2\"" && return 0
    sleep 0.1
  done
  echo "subscription $2 on $1 never appeared" >&2; return 1
}

# fixed_rate KEY RATE FLAGS: a tailing consumer and a producer at RATE.
fixed_rate() {
  local key=$1 rate=$2 flags=$3 d=$4 topic="lat-$1"
  # shellcheck disable=SC2086
  tail_consume "$topic" $CONSUME_FLAGS >"$d/$key-e2e.json" &
  local cpid=$!
  wait_sub "$topic" tail
  curl -s "$ADMIN/metrics" >"$d/$key-metrics-before.txt"
  # shellcheck disable=SC2086
  produce "$topic" "$rate" "$DURATION" $flags >"$d/$key-pub.json"
  curl -s "$ADMIN/metrics" >"$d/$key-metrics-after.txt"
  wait $cpid
  local p=$d/$key-pub.json e=$d/$key-e2e.json
  echo "${key}_rate $rate"
  echo "${key}_achieved $(json "$p" "d['msgs_per_sec']")"
  for q in p50 p99 p999; do echo "${key}_pub_${q}_us $(json "$p" "d['latency']['${q}_us']")"; done
  echo "${key}_pub_worst_window_p99_us $(worst "$p" p99_us)"
  echo "${key}_pub_worst_window_p999_us $(worst "$p" p999_us)"
  echo "${key}_e2e_received $(json "$e" "d['messages']")"
  for q in p50 p99 p999; do echo "${key}_e2e_${q}_us $(json "$e" "d['latency']['${q}_us']")"; done
  echo "${key}_e2e_worst_window_p99_us $(worst "$e" p99_us)"
  python3 "$here/stages.py" "$d/$key-metrics-before.txt" "$d/$key-metrics-after.txt" "$key"
}

magnetar_once() { # RUN_DIR: prints key value lines
  local d=$1 data="$1/data" peak
  start_standalone "$data"
  if [[ -z ${SKIP_PEAK:-} ]]; then
    curl -s "$ADMIN/metrics" >"$d/peak-metrics-before.txt"
    # shellcheck disable=SC2086
    produce lat-peak 0 "$PEAK_DURATION" $PEAK_FLAGS >"$d/peak.json"
    curl -s "$ADMIN/metrics" >"$d/peak-metrics-after.txt"
    peak=$(json "$d/peak.json" "d['msgs_per_sec']")
    echo "peak_rate $peak"
    for q in p50 p99 p999; do echo "peak_pub_${q}_us $(json "$d/peak.json" "d['latency']['${q}_us']")"; done
    echo "peak_pub_worst_window_p99_us $(worst "$d/peak.json" p99_us)"
    python3 "$here/stages.py" "$d/peak-metrics-before.txt" "$d/peak-metrics-after.txt" peak
  else
    peak=${PEAK:?SKIP_PEAK needs PEAK}
    echo "peak_rate $peak"
  fi
  fixed_rate low "$RATE_LOW" "$LOW_FLAGS" "$d"
  fixed_rate half "$(python3 -c "print(int($peak*$HALF_FRACTION))")" "$HALF_FLAGS" "$d"
  stop_standalone
  rm -rf "$data"
}

for r in $(seq "$RUNS"); do
  d="$OUT/run$r"; mkdir -p "$d"
  echo "load_before $(cut -d' ' -f1 /proc/loadavg)" >"$d/kv.txt"
  echo "run $r/$RUNS ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  [[ $FLOOR_SECONDS == 0 ]] || floor "$d" >>"$d/kv.txt"
  magnetar_once "$d" >>"$d/kv.txt"
  if [[ -z ${SKIP_PEER:-} ]]; then
    peak=$(awk '$1=="peak_rate"{print $2}' "$d/kv.txt")
    for mode in default always; do
      NATS_RATES="$RATE_LOW $(python3 -c "print(int($peak*$HALF_FRACTION))")" \
        NATS_DURATION="$DURATION" "$here/nats_latency.sh" "$mode" >>"$d/kv.txt" || echo "peer $mode failed" >&2
    done
  fi
  echo "load_after $(cut -d' ' -f1 /proc/loadavg)" >>"$d/kv.txt"
done

python3 "$here/table.py" "$OUT"/run*/kv.txt | tee "$OUT/table.md"
