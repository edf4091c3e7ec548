package connectors

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/magnetar-mq/magnetar/functions/iopolicy"
	"github.com/magnetar-mq/magnetar/functions/sdk"
)

// TestConnectorsRefuseBeforeActing: each builtin connector checks its
// configs against the policy before it opens, creates, binds or
// connects anything (the third check, after the worker's two), so a
// value the operator does not allow changes nothing even when the
// worker was bypassed. The instances here have no client: a connector
// that got past its check would fail differently (or panic).
func TestConnectorsRefuseBeforeActing(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	pol, err := iopolicy.New([]string{root}, []string{"127.0.0.1:*"}, []string{"db.internal:5432"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	inst := func(cfg map[string]any) *sdk.Instance {
		return &sdk.Instance{Spec: sdk.Spec{Tenant: "t1", Namespace: "ns", Name: "c", UserConfig: cfg}}
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"file sink outside", func() error {
			return fileSink(ctx, inst(map[string]any{"outputFile": filepath.Join(outside, "out.txt")}), pol)
		}},
		{"file sink through a link", func() error {
			return fileSink(ctx, inst(map[string]any{"outputFile": filepath.Join(root, "escape", "out.txt")}), pol)
		}},
		{"file source outside", func() error {
			return fileSource(ctx, inst(map[string]any{"inputDirectory": outside}), pol)
		}},
		{"file source processed through a link", func() error {
			return fileSource(ctx, inst(map[string]any{"inputDirectory": root, "processedDirectory": filepath.Join(root, "escape", "done")}), pol)
		}},
		{"webhook on all interfaces", func() error {
			return httpSource(ctx, inst(map[string]any{"listenAddress": ":" + strconv.Itoa(port)}), pol)
		}},
		{"postgres elsewhere", func() error {
			return postgresSink(ctx, inst(map[string]any{"url": "postgres://u@127.0.0.1:" + strconv.Itoa(port) + "/x", "table": "t"}), pol)
		}},
	} {
		if err := c.run(); !errors.Is(err, iopolicy.ErrRefused) {
			t.Errorf("%s: %v, want a refusal", c.name, err)
		}
	}
	for _, p := range []string{filepath.Join(outside, "out.txt"), filepath.Join(outside, ".processed"), filepath.Join(outside, "done")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a refused connector created %s", p)
		}
	}
	// The port is still free: nothing bound it.
	l2, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d was bound by a refused webhook: %v", port, err)
	}
	l2.Close()
}
