package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestFunctionsAdminCLI drives `magnetar admin functions|sources|sinks`
// against a standalone: create with an uploaded binary, list, get,
// status, trigger, querystate/putstate, stop/start, update, delete, and a
// builtin sink.
func TestFunctionsAdminCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := buildFnProg(t, "1")
	dataDir := t.TempDir()
	p := startStandalone(t, dataDir)
	out := runAdmin(t, p, false, "functions", "create", "--name", "cli", "--inputs", "cli-in", "--output", "cli-out",
		"--go", bin, "--user-config", `{"mode":"wordcount"}`)
	if !strings.Contains(out, "Created functions/public/default/cli") {
		t.Fatalf("create: %s", out)
	}
	if out := runAdmin(t, p, false, "functions", "list"); !strings.Contains(out, "cli") {
		t.Fatalf("list: %s", out)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(runAdmin(t, p, false, "functions", "get", "--fqfn", "public/default/cli")), &cfg); err != nil || cfg["output"] != "cli-out" {
		t.Fatalf("get: %v %v", cfg, err)
	}
	waitRunning(t, p, "functions", "cli", 1)
	if out := runAdmin(t, p, false, "functions", "trigger", "--name", "cli", "--trigger-value", "a b a"); strings.TrimSpace(out) != "a,b,a" {
		t.Fatalf("trigger: %q", out)
	}
	if out := runAdmin(t, p, false, "functions", "querystate", "--name", "cli", "--key", "a"); !strings.Contains(out, "2") {
		t.Fatalf("querystate: %s", out)
	}
	runAdmin(t, p, false, "functions", "putstate", "--name", "cli", "--state", `{"key":"greeting","stringValue":"hi"}`)
	if out := runAdmin(t, p, false, "-o", "json", "functions", "querystate", "--name", "cli", "--key", "greeting"); !strings.Contains(out, `"stringValue": "hi"`) {
		t.Fatalf("querystate greeting: %s", out)
	}
	runAdmin(t, p, false, "functions", "stop", "--name", "cli")
	waitRunning(t, p, "functions", "cli", 0)
	runAdmin(t, p, false, "functions", "start", "--name", "cli", "--instance-id", "0")
	waitRunning(t, p, "functions", "cli", 1)
	if out := runAdmin(t, p, false, "functions", "status", "--name", "cli"); !strings.Contains(out, `"numRunning": 1`) {
		t.Fatalf("status: %s", out)
	}
	// restart replaces the instance process.
	exe := fnPackagePath(t, dataDir, bin)
	before := instancePids(t, exe)
	if len(before) != 1 {
		t.Fatalf("want one instance process, got %v", before)
	}
	runAdmin(t, p, false, "functions", "restart", "--name", "cli")
	deadline := time.Now().Add(30 * time.Second)
	for {
		now := instancePids(t, exe)
		if len(now) == 1 && now[0] != before[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance not restarted: before %v, now %v", before, now)
		}
		time.Sleep(100 * time.Millisecond)
	}
	runAdmin(t, p, false, "functions", "update", "--name", "cli", "--user-config", `{"suffix":"?"}`)
	if out := runAdmin(t, p, false, "functions", "get", "--name", "cli"); !strings.Contains(out, `"suffix": "?"`) {
		t.Fatalf("get after update: %s", out)
	}
	if errOut := runAdmin(t, p, true, "functions", "get", "--name", "nosuch"); !strings.Contains(errOut, "404") {
		t.Fatalf("get missing: %s", errOut)
	}
	runAdmin(t, p, false, "sinks", "create", "--name", "logs", "--inputs", "cli-out", "--sink-type", "log")
	waitRunning(t, p, "sinks", "logs", 1)
	if out := runAdmin(t, p, false, "sinks", "list"); !strings.Contains(out, "logs") {
		t.Fatalf("sinks list: %s", out)
	}
	runAdmin(t, p, false, "sinks", "delete", "--name", "logs")
	runAdmin(t, p, false, "functions", "delete", "--name", "cli")
	if out := runAdmin(t, p, false, "-o", "json", "functions", "list"); strings.Contains(out, "cli") {
		t.Fatalf("list after delete: %s", out)
	}
	p.stop()
}
