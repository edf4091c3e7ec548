#!/usr/bin/env bash
# Through `magnetar proxy` vs direct to the broker, in one run: one
# `magnetar standalone` and one `magnetar proxy` in front of it (static
# broker list). RUNS times, alternating direct and proxied:
#   produce  DURATION at max rate, 200-byte messages (PRODUCE_FLAGS)
#   catch-up consume of that backlog from earliest
# with the CPU seconds (user+system, /proc) of the standalone, of the
# proxy and of the client (/usr/bin/time) for each. Prints the medians,
# the proxy/direct ratios and the proxy's CPU per relayed message.
# Env: RUNS (3), DURATION (10s), OUT, MAGNETAR_BIN, KEEP_DATA (1 keeps the
# standalone's data dir, which five batched runs grow to ~23 GB; removed
# at exit otherwise).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
SIZE=200
PRODUCE_FLAGS=${PRODUCE_FLAGS:---num-producers 2 --max-pending 10000 --batch-delay 10ms --batch-max-messages 2000 --batch-max-bytes 524288 --memory-limit 536870912}
CONSUME_FLAGS=${CONSUME_FLAGS:---receiver-queue-size 5000}
OUT=${OUT:-$(mktemp -d /tmp/magnetar-proxybench.XXXXXX)}
mkdir -p "$OUT"
echo "results in $OUT" >&2
echo "commit $(git -C "$repo" rev-parse --short HEAD), $(nproc) cpus" | tee "$OUT/build.txt" >&2
if [[ -z ${MAGNETAR_BIN:-} ]]; then
  MAGNETAR_BIN="$OUT/magnetar"
  (cd "$repo" && go build -o "$MAGNETAR_BIN" ./cmd/magnetar)
fi

waitready() { for _ in $(seq 600); do grep -q ready "$1" && return; sleep 0.1; done; echo "not ready: $1" >&2; exit 1; }
"$MAGNETAR_BIN" standalone --data-dir "$OUT/data" --listen 127.0.0.1:0 --http 127.0.0.1:0 --advertised-host 127.0.0.1 \
  --log-level warn >"$OUT/ready" 2>"$OUT/standalone.log" &
spid=$!
ppid=
trap 'kill -TERM $spid $ppid 2>/dev/null; wait $spid $ppid 2>/dev/null || true; [[ ${KEEP_DATA:-} == 1 ]] || rm -rf "$OUT/data"' EXIT
waitready "$OUT/ready"
DIRECT=$(grep -o 'service=[^ ]*' "$OUT/ready" | cut -d= -f2)
WEB=$(grep -o 'http=[^ ]*' "$OUT/ready" | cut -d= -f2)
"$MAGNETAR_BIN" proxy --broker-service-url "$DIRECT" --broker-web-service-url "$WEB" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
  --log-level warn >"$OUT/proxy-ready" 2>"$OUT/proxy.log" &
ppid=$!
waitready "$OUT/proxy-ready"
PROXY=$(grep -o 'service=[^ ]*' "$OUT/proxy-ready" | cut -d= -f2)
echo "direct $DIRECT proxy $PROXY" >&2

cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$1/stat"; }
# run KEY URL perf-args: appends "KEY msgs rate server_cpu proxy_cpu client_cpu" to results.
run() {
  local key=$1 url=$2 s0 s1 p0 p1 tf; shift 2
  tf=$(mktemp); s0=$(cpu $spid); p0=$(cpu $ppid)
  /usr/bin/time -f '%U %S' -o "$tf" "$MAGNETAR_BIN" perf "$@" --service-url "$url" -q --json >"$OUT/$key.json"
  s1=$(cpu $spid); p1=$(cpu $ppid)
  python3 - "$OUT/$key.json" "$key" "$s0" "$s1" "$p0" "$p1" "$(awk '{print $1+$2}' "$tf")" >>"$OUT/results" <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); key=sys.argv[2]
a=[float(x) for x in sys.argv[3:7]]
print(key.rsplit('-',1)[0], d["messages"], round(d["msgs_per_sec"]), round(a[1]-a[0],2), round(a[3]-a[2],2), sys.argv[7])
PY
  rm -f "$tf"
}
: >"$OUT/results"
for i in $(seq "$RUNS"); do
  for mode in direct proxy; do
    url=$DIRECT; [[ $mode == proxy ]] && url=$PROXY
    run "produce_$mode-$i" "$url" produce --topic "bench-$mode-$i" --size $SIZE --test-duration "$DURATION" $PRODUCE_FLAGS
    n=$(tail -1 "$OUT/results" | awk '{print $2}')
    run "consume_$mode-$i" "$url" consume --topic "bench-$mode-$i" --subscription-name c --subscription-position earliest \
      --num-messages "$n" --test-duration 300s $CONSUME_FLAGS
  done
done
python3 - "$OUT/results" <<'PY'
import sys,statistics as st,collections
rows=collections.defaultdict(list)
for l in open(sys.argv[1]):
    k,n,rate,scpu,pcpu,ccpu=l.split(); rows[k].append((int(n),int(rate),float(scpu),float(pcpu),float(ccpu)))
def med(k,i): return st.median(r[i] for r in rows[k])
def cpu_us(k,i): return st.median(r[i]/r[0]*1e6 for r in rows[k])
print(f"{'':8} {'direct msg/s':>12} {'proxy msg/s':>11} {'proxy/direct':>12} {'proxy us/msg':>12} {'broker us/msg direct/proxy':>27} {'client us/msg direct/proxy':>27}")
for op in ("produce","consume"):
    d,p=op+"_direct",op+"_proxy"
    print(f"{op:8} {med(d,1):12.0f} {med(p,1):11.0f} {med(p,1)/med(d,1):12.2f} {cpu_us(p,3):12.2f} {cpu_us(d,2):13.2f} / {cpu_us(p,2):<11.2f} {cpu_us(d,4):13.2f} / {cpu_us(p,4):<11.2f}")
print("runs:", {k:[r[1] for r in v] for k,v in rows.items()})
PY
