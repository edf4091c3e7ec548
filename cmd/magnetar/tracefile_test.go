package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestStartTrace: --trace's file holds a Go execution trace once
// stopped; an empty path traces nothing; a path that cannot be created
// is an error (the process-level test is e2e's TestStandaloneTrace).
func TestStartTrace(t *testing.T) {
	dir := t.TempDir()
	stop, err := startTrace("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := startTrace(filepath.Join(dir, "missing", "x.trace")); err == nil {
		t.Fatal("trace into a missing directory accepted")
	}
	path := filepath.Join(dir, "run.trace")
	if stop, err = startTrace(path); err != nil {
		t.Fatal(err)
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Execution traces start with "go 1.NN trace".
	if !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Fatalf("trace file: %d bytes, starts %q", len(b), b[:min(len(b), 16)])
	}
}
