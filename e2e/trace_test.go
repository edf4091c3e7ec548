package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestStandaloneTrace: --trace writes a Go execution trace of the run,
// complete at a graceful stop; an unwritable path fails the start.
func TestStandaloneTrace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.trace")
	p := startStandalone(t, filepath.Join(dir, "data"), "--trace", path)
	produceSome(t, p)
	p.stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Execution traces start with "go 1.NN trace".
	if !bytes.HasPrefix(b, []byte("go 1.")) || len(b) < 1024 {
		t.Fatalf("trace file: %d bytes, starts %q", len(b), b[:min(len(b), 16)])
	}
	// A trace file that cannot be created fails the start.
	missing := filepath.Join(dir, "missing", "x.trace")
	out, err := magnetarCommand(t, "standalone", "--data-dir", filepath.Join(dir, "data2"),
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--trace", missing).CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte(missing)) {
		t.Fatalf("standalone with a trace into a missing directory: %v\n%s", err, out)
	}
}

// produceSome publishes a few messages so the trace holds a publish path.
func produceSome(t *testing.T, p *proc) {
	t.Helper()
	c := p.client(t)
	defer c.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "trace-topic"})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 10 {
		if _, err := prod.Send(t.Context(), &pulsar.ProducerMessage{Payload: []byte(payload(i))}); err != nil {
			t.Fatal(err)
		}
	}
}
