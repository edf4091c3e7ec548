package perf

import (
	"strings"
	"testing"
)

// TestPerfReportHidesCredentials checks that neither the command line nor
// the settings a report shows carry the value of --auth-params.
func TestPerfReportHidesCredentials(t *testing.T) {
	got := redactedCommand([]string{"magnetar", "perf", "produce", "--auth-params", "token:SECRET", "--auth-params=file:///SECRET", "--rate", "5"})
	if strings.Contains(got, "SECRET") || !strings.Contains(got, "--rate 5") {
		t.Fatalf("redactedCommand = %q", got)
	}
	cmd := NewProduceCommand()
	if err := cmd.Flags().Parse([]string{"--auth-plugin", "token", "--auth-params", "token:SECRET", "--rate", "7"}); err != nil {
		t.Fatal(err)
	}
	var rate bool
	for _, kv := range perfSettings(cmd) {
		if strings.Contains(kv.Value, "SECRET") {
			t.Fatalf("setting %s = %q", kv.Key, kv.Value)
		}
		rate = rate || (kv.Key == "--rate" && kv.Value == "7")
	}
	if !rate {
		t.Fatal("--rate 7 not among the settings")
	}
}
