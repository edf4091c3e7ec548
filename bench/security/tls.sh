#!/usr/bin/env bash
# TLS vs plaintext on the binary protocol, in one run against one
# `magnetar standalone` serving both pulsar:// and pulsar+ssl://
# (throw-away certificates made with openssl in OUT). RUNS times,
# alternating plaintext and TLS:
#   produce  DURATION at max rate, 200-byte messages (PRODUCE_FLAGS)
#   catch-up consume of that backlog from earliest
# with the standalone's CPU seconds (user+system, /proc) and the client's
# (/usr/bin/time) for each. Prints the medians, TLS/plain ratios and CPU
# per message. Env: RUNS (3), DURATION (10s), OUT, MAGNETAR_BIN.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
SIZE=200
PRODUCE_FLAGS=${PRODUCE_FLAGS:---num-producers 2 --max-pending 10000 --batch-delay 10ms --batch-max-messages 2000 --batch-max-bytes 524288 --memory-limit 536870912}
CONSUME_FLAGS=${CONSUME_FLAGS:---receiver-queue-size 5000}
OUT=${OUT:-$(mktemp -d /tmp/magnetar-tlsbench.XXXXXX)}
mkdir -p "$OUT"
echo "results in $OUT" >&2
echo "commit $(git -C "$repo" rev-parse --short HEAD), $(nproc) cpus" | tee "$OUT/build.txt" >&2
if [[ -z ${MAGNETAR_BIN:-} ]]; then
  MAGNETAR_BIN="$OUT/magnetar"
  (cd "$repo" && go build -o "$MAGNETAR_BIN" ./cmd/magnetar)
fi

# Certificates (P-256, valid 2 days), never checked in.
c=$OUT/certs; mkdir -p "$c"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
  -keyout "$c/ca.key" -out "$c/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
  -keyout "$c/broker.key" -out "$c/broker.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$c/ext.cnf"
openssl x509 -req -in "$c/broker.csr" -CA "$c/ca.pem" -CAkey "$c/ca.key" -CAcreateserial -days 2 \
  -extfile "$c/ext.cnf" -out "$c/broker.pem" 2>/dev/null

data=$OUT/data
"$MAGNETAR_BIN" standalone --data-dir "$data" --listen 127.0.0.1:0 --http 127.0.0.1:0 --advertised-host 127.0.0.1 \
  --log-level warn --brokerServicePortTls 127.0.0.1:0 --tlsCertificateFilePath "$c/broker.pem" \
  --tlsKeyFilePath "$c/broker.key" >"$OUT/ready" 2>"$OUT/standalone.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 600); do grep -q ready "$OUT/ready" && break; sleep 0.1; done
PLAIN=$(grep -o 'service=[^ ]*' "$OUT/ready" | cut -d= -f2)
TLS=$(grep -o 'service-tls=[^ ]*' "$OUT/ready" | cut -d= -f2)
echo "plain $PLAIN tls $TLS" >&2

server_cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$pid/stat"; }
# run KEY URL perf-args: appends "KEY msgs rate server_cpu client_cpu" to results.
run() {
  local key=$1 url=$2 s0 s1 tf; shift 2
  tf=$(mktemp); s0=$(server_cpu)
  /usr/bin/time -f '%U %S' -o "$tf" "$MAGNETAR_BIN" perf "$@" --service-url "$url" --tls-trust-cert-path "$c/ca.pem" -q --json >"$OUT/$key.json"
  s1=$(server_cpu)
  python3 - "$OUT/$key.json" "$key" "$s0" "$s1" "$(awk '{print $1+$2}' "$tf")" >>"$OUT/results" <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); key=sys.argv[2]
print(key.rsplit('-',1)[0], d["messages"], round(d["msgs_per_sec"]), round(float(sys.argv[4])-float(sys.argv[3]),2), sys.argv[5])
PY
  rm -f "$tf"
}
: >"$OUT/results"
for i in $(seq "$RUNS"); do
  for mode in plain tls; do
    url=$PLAIN; [[ $mode == tls ]] && url=$TLS
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
    k,n,rate,scpu,ccpu=l.split(); rows[k].append((int(n),int(rate),float(scpu),float(ccpu)))
def med(k,i): return st.median(r[i] for r in rows[k])
def cpu_us(k,i): return st.median(r[i]/r[0]*1e6 for r in rows[k])
print(f"{'':10} {'plain msg/s':>12} {'TLS msg/s':>10} {'TLS/plain':>9} {'srv us/msg plain':>16} {'srv us/msg TLS':>14} {'cli us/msg plain':>16} {'cli us/msg TLS':>14}")
for op in ("produce","consume"):
    p,t=op+"_plain",op+"_tls"
    print(f"{op:10} {med(p,1):12.0f} {med(t,1):10.0f} {med(t,1)/med(p,1):9.2f} {cpu_us(p,2):16.2f} {cpu_us(t,2):14.2f} {cpu_us(p,3):16.2f} {cpu_us(t,3):14.2f}")
print("runs:", {k:[r[1] for r in v] for k,v in rows.items()})
PY
