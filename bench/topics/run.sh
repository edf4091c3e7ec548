#!/usr/bin/env bash
# Scale: topics. Starts a standalone on a fresh data dir and measures it
# empty (the baseline), creates N topics (bench/topics: durable
# subscription + one message from a producer that closes), measures
# RSS/heap/goroutines right after (recent topics still loaded) and after
# the idle unloader ran and the server collected garbage, times HTTP
# lookups and the admin topic listing, then restarts the standalone on the
# same data and measures start-up time, RSS, lookups and listing again.
#
# With COLD=1 (root: it writes /proc/sys/vm/drop_caches) it then restarts
# a third time after dropping the page cache and measures that start-up.
#
# Env: N (100000), CONC (256), CLIENTS (64), IDLE (60s, --topic-unload-idle),
#      OUT (a new /tmp dir), MAGNETAR_BIN (skip the build), PORT (16700),
#      COLD (unset).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
N=${N:-100000}
CONC=${CONC:-256}
CLIENTS=${CLIENTS:-64}
IDLE=${IDLE:-60s}
PORT=${PORT:-16700}
HPORT=$((PORT + 1))
OUT=${OUT:-$(mktemp -d /tmp/magnetar-topics.XXXXXX)}
mkdir -p "$OUT"
if [ -z "${MAGNETAR_BIN:-}" ]; then
	MAGNETAR_BIN=$OUT/magnetar
	(cd "$repo" && go build -o "$MAGNETAR_BIN" ./cmd/magnetar)
fi
(cd "$repo" && go build -o "$OUT/topicsbench" ./bench/topics)
start() {
	"$MAGNETAR_BIN" standalone --data-dir "$OUT/data" --listen 127.0.0.1:$PORT --http 127.0.0.1:$HPORT \
		--advertised-host 127.0.0.1 --log-level warn --topic-unload-idle "$IDLE" \
		--expose-topic-level-metrics=false --memprofile "$OUT/heap-$1.pb.gz" >"$OUT/standalone-$1.log" 2>&1 &
	PID=$!
	t0=$(date +%s.%N)
	until grep -q "standalone ready" "$OUT/standalone-$1.log"; do
		kill -0 $PID 2>/dev/null || { cat "$OUT/standalone-$1.log"; exit 1; }
		sleep 0.05
	done
	echo "startup_seconds=$(echo "$(date +%s.%N) - $t0" | bc)"
}
bench() {
	"$OUT/topicsbench" --service-url pulsar://127.0.0.1:$PORT --http-url http://127.0.0.1:$HPORT --pid $PID "$@"
}
stop() {
	kill -TERM $PID
	wait $PID || true
}
echo "# N=$N CONC=$CONC CLIENTS=$CLIENTS IDLE=$IDLE OUT=$OUT"
echo "## run 1: empty standalone (baseline)"
start create
bench --topics 0 --lookups 0
echo "## run 1: create"
bench --topics "$N" --concurrency "$CONC" --clients "$CLIENTS" --lookups 0
echo "## after the idle unloader and the next GC"
bench --topics 0 --wait-unloaded 10m --lookups 5000 --lookup-range "$N" --lists 3 --wait-gc 150s
stop
echo "## run 2: restart on $N topics"
start restart
bench --topics 0 --lookups 0
bench --topics 0 --lookups 5000 --lookup-range "$N" --lists 3
stop
if [ -n "${COLD:-}" ]; then
	echo "## run 3: restart on $N topics with the page cache dropped"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	start cold
	bench --topics 0 --lookups 0
	stop
fi
du -sh "$OUT/data"/*
