package admin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/brokerconf"
)

// TestDedupSnapshotIntervalFallback: a topic's applied
// deduplicationSnapshotInterval is its own value, else its namespace's,
// else the broker's brokerDeduplicationSnapshotIntervalSeconds; negative
// values are refused (412), 0 is kept (no timed snapshots).
func TestDedupSnapshotIntervalFallback(t *testing.T) {
	t.Parallel()
	tb := startBroker(t, func(c *brokerconf.Config) { c.Delivery.DedupSnapshotIntervalSeconds = 77 })
	ns := newNamespace(t, tb)
	nsPath := "/admin/v2/namespaces/" + ns + "/deduplicationSnapshotInterval"
	topic := "persistent://" + ns + "/" + uniqueName("dsi")
	tPath := adminPath(topic) + "/deduplicationSnapshotInterval"
	mustHTTP(t, tb, "PUT", adminPath(topic), "", http.StatusNoContent)
	get := func(path string, want int) string {
		t.Helper()
		return strings.TrimSpace(mustHTTP(t, tb, "GET", path, "", want))
	}
	if got := get(tPath+"?applied=true", http.StatusOK); got != "77" {
		t.Fatalf("applied with nothing set = %s, want the broker's 77", got)
	}
	get(tPath, http.StatusNoContent)
	get(nsPath, http.StatusNoContent)
	mustHTTP(t, tb, "POST", nsPath, "30", http.StatusNoContent)
	if got := get(nsPath, http.StatusOK); got != "30" {
		t.Fatalf("namespace value = %s", got)
	}
	if got := get(tPath+"?applied=true", http.StatusOK); got != "30" {
		t.Fatalf("applied with the namespace's 30 = %s", got)
	}
	mustHTTP(t, tb, "POST", tPath, "0", http.StatusNoContent)
	if got := get(tPath, http.StatusOK); got != "0" {
		t.Fatalf("topic value = %s, want 0", got)
	}
	if got := get(tPath+"?applied=true", http.StatusOK); got != "0" {
		t.Fatalf("applied with the topic's 0 = %s", got)
	}
	if r := tb.AppliedPolicies(topic); r != nil && r.DedupSnapshotIntervalSeconds != 0 {
		t.Fatalf("the loaded topic resolves %d, want the topic's 0", r.DedupSnapshotIntervalSeconds)
	}
	// Pulsar's reasons: PersistentTopicsBase and NamespacesBase word
	// them differently.
	if body := mustHTTP(t, tb, "POST", tPath, "-1", http.StatusPreconditionFailed); !strings.Contains(body, `"interval must be 0 or more"`) {
		t.Fatalf("topic refusal = %s", body)
	}
	if body := mustHTTP(t, tb, "POST", nsPath, "-5", http.StatusPreconditionFailed); !strings.Contains(body, `"interval must be greater than or equal to 0"`) {
		t.Fatalf("namespace refusal = %s", body)
	}
	mustHTTP(t, tb, "DELETE", tPath, "", http.StatusNoContent)
	if got := get(tPath+"?applied=true", http.StatusOK); got != "30" {
		t.Fatalf("applied after the topic's removal = %s, want the namespace's 30", got)
	}
	mustHTTP(t, tb, "DELETE", nsPath, "", http.StatusNoContent)
	if got := get(tPath+"?applied=true", http.StatusOK); got != "77" {
		t.Fatalf("applied after both removals = %s, want the broker's 77", got)
	}
}
