#!/usr/bin/env bash
# Builds the peer (NATS JetStream server 2.15.2 and the natscli 0.5.0 bench
# tool) into a throwaway GOPATH/GOBIN outside the repository. Nothing is
# added to our go.mod. Prints the bin directory on stdout.
#   PEER_DIR (default /tmp/magnetar-peer) holds the GOPATH and bin.
set -euo pipefail
PEER_DIR=${PEER_DIR:-/tmp/magnetar-peer}
BIN="$PEER_DIR/bin"
mkdir -p "$BIN" "$PEER_DIR/gopath"
if [[ ! -x "$BIN/nats-server" || ! -x "$BIN/nats" ]]; then
  (
    cd "$PEER_DIR"   # outside any module: go install pkg@version
    export GOPATH="$PEER_DIR/gopath" GOBIN="$BIN" GOFLAGS=-modcacherw GO111MODULE=on
    [[ -x "$BIN/nats-server" ]] || go install github.com/nats-io/nats-server/v2@v2.15.2 >&2
    [[ -x "$BIN/nats" ]] || go install github.com/nats-io/natscli/nats@v0.5.0 >&2
  )
fi
echo "$BIN"
