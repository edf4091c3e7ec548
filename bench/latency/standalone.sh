# Sourced by the latency drivers (brokercpu.sh, wire.sh); needs $repo.
#
# build_bins DIR: sets MAGNETAR_BIN (built into DIR unless already set)
# and builds DIR/goclient (pulsar-client-go, bench/latency/goclient).
build_bins() {
  if [[ -z ${MAGNETAR_BIN:-} ]]; then
    MAGNETAR_BIN=$1/magnetar
    (cd "$repo" && go build -o "$MAGNETAR_BIN" ./cmd/magnetar)
  fi
  (cd "$repo" && go build -o "$1/goclient" ./bench/latency/goclient)
  (cd "$repo" && go build -o "$1/fsync" ./bench/fsync)
}

# disk_floor DIR RATE SECONDS: the journal's group commit alone on DIR's
# disk at RATE arrivals/s (bench/fsync -floor): the latency no durable
# broker on this disk can go below at that rate, measured just before the
# broker runs, as the same-run baseline. Prints its latency line.
disk_floor() {
  "$1/fsync" -dir "$1" -floor "$2" -duration "${3}s" -window 10s -rounds 1 | awk 'NR == 2 { sub(/^ +/, ""); print "disk floor at '"$2"'/s: " $0 }'
}

# start_standalone DIR PORT HTTP_PORT [flags...]: starts a durable
# standalone with its data under DIR/data on 127.0.0.1, output in
# DIR/ready and DIR/log, and waits for its one "magnetar standalone
# ready" line; sets p to its pid. Exits if it dies or never gets ready.
start_standalone() {
  local dir=$1 port=$2 http=$3
  shift 3
  "$MAGNETAR_BIN" standalone --data-dir "$dir/data" --listen "127.0.0.1:$port" --http "127.0.0.1:$http" \
    --advertised-host 127.0.0.1 --log-level warn --no-functions-worker "$@" >"$dir/ready" 2>"$dir/log" &
  p=$!
  for _ in $(seq 600); do
    grep -q 'magnetar standalone ready' "$dir/ready" && return 0
    kill -0 "$p" 2>/dev/null || { cat "$dir/log" >&2; exit 1; }
    sleep 0.1
  done
  echo "standalone not ready" >&2
  exit 1
}
