package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/version"
)

// TestVersion: `magnetar version` (text and JSON) and `--version`.
func TestVersion(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		root := newRootCmd()
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	i := version.Get()
	if got := run("version"); got != "magnetar "+i.Version+"\ncommit "+i.Commit+"\n"+runtime.Version()+"\n" {
		t.Errorf("version: %q", got)
	}
	var j version.Info
	if err := json.Unmarshal([]byte(run("version", "--json")), &j); err != nil || j != i {
		t.Errorf("version --json: %+v %v", j, err)
	}
	if got := run("--version"); !strings.HasPrefix(got, "magnetar "+i.Version+" (commit ") {
		t.Errorf("--version: %q", got)
	}
}
