package functions

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// TestScanConnectors: the connectors directory's descriptors become
// connectors; a broken one, one whose executable is a path or missing,
// one naming a compiled-in connector and a second of the same name are
// skipped.
func TestScanConnectors(t *testing.T) {
	dir := t.TempDir()
	put := func(sub, desc string, exe bool) {
		d := filepath.Join(dir, sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if exe {
			if err := os.WriteFile(filepath.Join(d, "prog"), []byte("#!/bin/true\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, descriptorFile), []byte(desc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "name: good\ndescription: d\nsourceClass: x.Y\nsinkClass: x.Z\nexecutable: prog\n", true)
	put("b", "name: [broken\n", true)
	put("c", "name: noexe\nsourceClass: x.Y\nexecutable: prog\n", false)
	put("d", "name: pathexe\nsourceClass: x.Y\nexecutable: ../a/prog\n", true)
	put("e", "name: log\nsinkClass: x.Y\nexecutable: prog\n", true)
	put("f", "name: nokind\nexecutable: prog\n", true)
	put("g", "name: good\nsinkClass: x.Y\nexecutable: prog\n", true)
	if err := os.WriteFile(filepath.Join(dir, "stray.yaml"), []byte("name: stray\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &Worker{log: slog.New(slog.DiscardHandler), opts: Options{ConnectorsDirectory: dir}}
	got := w.scanConnectors(dir)
	if len(got) != 1 {
		t.Fatalf("connectors: %+v", got)
	}
	c := got["good"]
	if !c.Source || !c.Sink || c.exe != filepath.Join(dir, "a", "prog") || c.Description != "d" {
		t.Fatalf("good: %+v", c)
	}
	if n := len(w.scanConnectors(filepath.Join(dir, "missing"))); n != 0 {
		t.Fatalf("a missing directory has %d connectors", n)
	}
	// The list holds the compiled-in ones, then the directory's, once
	// reloaded.
	has := func(source bool, name string) bool {
		for _, m := range w.connectorList(source) {
			if m["name"] == name {
				return true
			}
		}
		return false
	}
	if has(true, "good") {
		t.Fatal("listed before the reload")
	}
	w.reloadConnectors()
	if !has(true, "good") || !has(false, "good") || !has(true, "http") || has(false, "http") {
		t.Fatalf("sources %v sinks %v", w.connectorList(true), w.connectorList(false))
	}
}
