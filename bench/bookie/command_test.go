package bookie

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommand runs `bench bookie` through its command line: a given --dir
// is made and kept, --json prints one result per cell, and an unknown
// --modes name is refused before anything runs.
func TestCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made")
	var out, errOut bytes.Buffer
	c := NewCommand()
	c.SetOut(&out)
	c.SetErr(&errOut)
	c.SetArgs([]string{"--dir", dir, "--sizes", "100", "--outstanding", "4", "--modes", "pwrite",
		"--duration", "200ms", "--warmup", "20ms", "--runs", "1", "--half-peak=false", "--write-cache", "1048576", "--json"})
	if err := c.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var rs []Result
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rs) != 2 || rs[0].Kind != "raw" || rs[1].Kind != "bookie" || rs[1].Mode != "pwrite" || rs[1].OpsPerSec <= 0 {
		t.Fatalf("cells: %+v", rs)
	}
	if !strings.Contains(errOut.String(), "bench bookie in "+dir) {
		t.Errorf("progress: %s", errOut.String())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("--dir not kept: %v", err)
	}

	bad := NewCommand()
	bad.SetOut(&out)
	bad.SetErr(&errOut)
	bad.SetArgs([]string{"--modes", "mmap"})
	if err := bad.Execute(); err == nil || !strings.Contains(err.Error(), `unknown mode "mmap"`) {
		t.Fatalf("--modes mmap: %v", err)
	}
}
