package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFunctionsE2EConnectorAllowList: the builtin connectors may name
// only the directories, listen addresses and hosts the operator allows.
// A refused create or update answers 400 with the reason and changes
// nothing (nothing stored, no file or directory created, no port bound);
// an allowed file sink writes; a sink deployed under one allow-list does
// not start once the operator narrows it (checked again at start).
func TestFunctionsE2EConnectorAllowList(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	base := t.TempDir()
	ioDir, outside := filepath.Join(base, "io"), filepath.Join(base, "outside")
	public, other := filepath.Join(ioDir, "public"), filepath.Join(ioDir, "other")
	for _, d := range []string{ioDir, outside, public, other, filepath.Join(public, "out")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	instancesMayReach(t, base, 0o711)
	instancesMayReach(t, ioDir, 0o755)
	instancesMayReach(t, filepath.Join(public, "out"), 0o777) // the sink (an unprivileged account) writes here
	dataDir := filepath.Join(base, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Each tenant gets its own directory below io.
	p := startStandalone(t, dataDir, "--connectors-allowed-directories", filepath.Join(ioDir, "{tenant}"))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	sink := func(cfg map[string]any) map[string]any {
		return map[string]any{"inputs": []string{"files-in"}, "archive": "builtin://file", "sourceSubscriptionPosition": "Earliest", "configs": cfg}
	}
	refused := []struct {
		what, kind string
		cfg        map[string]any
		reason     string
	}{
		{"file sink outside", "sinks", sink(map[string]any{"outputFile": filepath.Join(outside, "out.txt")}), "outside the directories"},
		{"file sink up and out", "sinks", sink(map[string]any{"outputFile": public + "/../../outside/out.txt"}), ".. element"},
		{"file sink in another tenant's directory", "sinks", sink(map[string]any{"outputFile": filepath.Join(other, "out.txt")}), "outside the directories"},
		{"file sink relative", "sinks", sink(map[string]any{"outputFile": "out.txt"}), "not absolute"},
		{"file source outside", "sources", map[string]any{"topicName": "files-out", "archive": "builtin://file",
			"configs": map[string]any{"inputDirectory": outside}}, "outside the directories"},
		{"file source processed outside", "sources", map[string]any{"topicName": "files-out", "archive": "builtin://file",
			"configs": map[string]any{"inputDirectory": public, "processedDirectory": filepath.Join(outside, "done")}}, "outside the directories"},
		{"webhook on every interface", "sources", map[string]any{"topicName": "hook-out", "archive": "builtin://http",
			"configs": map[string]any{"listenAddress": fmt.Sprintf(":%d", port)}}, "connectorsAllowedListenAddresses"},
		{"webhook on a routable address", "sources", map[string]any{"topicName": "hook-out", "archive": "builtin://http",
			"configs": map[string]any{"listenAddress": fmt.Sprintf("0.0.0.0:%d", port)}}, "connectorsAllowedListenAddresses"},
		{"postgres anywhere", "sinks", map[string]any{"inputs": []string{"pg-in"}, "archive": "builtin://jdbc-postgres",
			"configs": map[string]any{"url": fmt.Sprintf("postgres://u@127.0.0.1:%d/x", port), "table": "t"}}, "connectorsAllowedHosts"},
	}
	for i, c := range refused {
		name := fmt.Sprintf("refused-%d", i)
		code, b := fnUpload(t, p, http.MethodPost, c.kind, name, c.cfg, "", "")
		if code != http.StatusBadRequest || !strings.Contains(b, c.reason) {
			t.Errorf("%s: %d %s, want 400 naming %q", c.what, code, b, c.reason)
		}
		if code, _ := p.get(t, "/admin/v3/"+c.kind+"/public/default/"+name); code != http.StatusNotFound {
			t.Errorf("%s: refused, yet stored (GET %d)", c.what, code)
		}
	}
	for _, path := range []string{filepath.Join(outside, "out.txt"), filepath.Join(other, "out.txt"), filepath.Join(outside, ".processed"),
		filepath.Join(outside, "done")} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("a refused connector created %s", path)
		}
	}
	// Nothing bound the port the refused webhooks named.
	l2, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		t.Fatalf("port %d was bound: %v", port, err)
	}
	l2.Close()

	// An allowed sink writes every message as a line of its file.
	out := filepath.Join(public, "out", "sink.txt")
	if code, b := fnUpload(t, p, http.MethodPost, "sinks", "lines", sink(map[string]any{"outputFile": out}), "", ""); code != http.StatusNoContent {
		t.Fatalf("allowed file sink: %d %s", code, b)
	}
	// An update may not move it out either; the stored config stays.
	if code, b := fnUpload(t, p, http.MethodPut, "sinks", "lines", sink(map[string]any{"outputFile": filepath.Join(outside, "moved.txt")}), "", ""); code != http.StatusBadRequest {
		t.Fatalf("update to a path outside: %d %s", code, b)
	}
	if code, b := p.get(t, "/admin/v3/sinks/public/default/lines"); code != http.StatusOK || !strings.Contains(string(b), out) {
		t.Fatalf("config after a refused update: %d %s", code, b)
	}
	waitRunning(t, p, "sinks", "lines", 1)
	c := p.client(t)
	produceAll(t, c, "persistent://public/default/files-in", []string{"one", "two", "three"})
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(out)
		if string(b) == "one\ntwo\nthree\n" {
			break
		}
		if time.Now().After(deadline) {
			l, _ := os.ReadFile(filepath.Join(dataDir, "functions", "logs", "public_default_lines-sinks-0.log"))
			t.Fatalf("sink file holds %q; instance log:\n%s", b, l)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(outside, "moved.txt")); !os.IsNotExist(err) {
		t.Fatal("the refused update created its file")
	}
	c.Close()
	p.stop()

	// The operator narrows the allow-list: the deployed sink no longer
	// starts, says why, and creates nothing.
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	p = startStandalone(t, dataDir, "--connectors-allowed-directories", outside)
	deadline = time.Now().Add(60 * time.Second)
	for {
		s := getStatus(t, p, "sinks", "lines")
		if len(s.Instances) == 1 && strings.Contains(s.Instances[0].Status.Error, "outside the directories") {
			if s.Instances[0].Status.Running {
				t.Fatalf("refused sink reported running: %+v", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sink status does not show the refusal: %+v", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("the sink recreated its file under a policy that refuses it")
	}
	p.stop()
}
