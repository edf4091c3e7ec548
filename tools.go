//go:build tools

// Package tools pins the project's chosen dependencies (docs/architecture.md) in
// go.mod before every one of them has an importer.
package tools

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/RoaringBitmap/roaring/v2"
	_ "github.com/apache/pulsar-client-go/pulsar"
	_ "github.com/apache/pulsar-client-go/pulsaradmin"
	_ "github.com/cespare/xxhash/v2"
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/go-zookeeper/zk"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "github.com/valyala/bytebufferpool"
	_ "go.etcd.io/bbolt"
	_ "golang.org/x/sys/unix"
	_ "google.golang.org/protobuf/proto"
	_ "honnef.co/go/tools/cmd/staticcheck"
)
