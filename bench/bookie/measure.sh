#!/bin/sh
# measure.sh: the headline figures of issue 35 item 2 on a quiet machine.
#
# Waits until the 1-minute load average is below $LOAD (default 1.0;
# checked every $POLL seconds, default 120, for at most $WAIT seconds,
# default 7200), then runs, $ROUNDS times (default 3):
#   - magnetar bench bookie at 100 B, 4,096 outstanding, adds in runs of
#     64 (the bookie server's path), the raw write+fdatasync loop
#     interleaved with the bookie's runs (3 each), then the half-peak cell
#     with its own interleaved raw runs; each round writes a report;
#   - BenchmarkAddRuns (CPU per add of the bookie alone on that path).
# Prints the load average before each step. Usage:
#   go build -o /tmp/magnetar ./cmd/magnetar
#   go test -c -o /tmp/bookie.test ./bookie/
#   sh bench/bookie/measure.sh /tmp/magnetar /tmp/bookie.test OUTDIR
set -eu
MG=${1:?magnetar binary}
BT=${2:?bookie test binary}
OUT=${3:?output directory}
LOAD=${LOAD:-1.0}
POLL=${POLL:-120}
WAIT=${WAIT:-7200}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
waited=0
while :; do
	l=$(cut -d' ' -f1 /proc/loadavg)
	if awk -v l="$l" -v max="$LOAD" 'BEGIN { exit !(l < max) }'; then
		break
	fi
	if [ "$waited" -ge "$WAIT" ]; then
		echo "load $l after ${waited}s: not quiet, giving up" >&2
		exit 1
	fi
	sleep "$POLL"
	waited=$((waited + POLL))
done
for r in $(seq 1 "$ROUNDS"); do
	echo "round $r, load $(cat /proc/loadavg)"
	"$MG" bench bookie --dir "$OUT/dir" --sizes 100 --outstanding 4096 --modes uring \
		--runs 3 --duration 3s --warmup 1s --batch 64 --report "$OUT/report-$r" \
		> "$OUT/bench-$r.txt" 2> "$OUT/bench-$r.log"
	echo "  cpu, load $(cat /proc/loadavg)"
	(cd "$OUT" && "$BT" -test.run XXX -test.bench 'AddRuns/size=100$' -test.benchtime 10000000x -test.count 1 \
		> "$OUT/cpu-$r.txt" 2>&1)
done
echo "done, load $(cat /proc/loadavg)"
