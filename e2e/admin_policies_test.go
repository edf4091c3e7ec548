package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAdminCLIPolicies: the rate, inactivity and topic-level policy
// commands against a standalone process; a topic's value wins over the
// namespace's in `get-... --applied`, removing it falls back.
func TestAdminCLIPolicies(t *testing.T) {
	p := startStandalone(t, t.TempDir())
	runAdmin(t, p, false, "namespaces", "create", "public/pol")
	runAdmin(t, p, false, "namespaces", "set-publish-rate", "public/pol", "--msg-publish-rate", "100", "--byte-publish-rate", "2048")
	var pr map[string]int
	if err := json.Unmarshal([]byte(runAdmin(t, p, false, "-o", "json", "namespaces", "get-publish-rate", "public/pol")), &pr); err != nil ||
		pr["publishThrottlingRateInMsg"] != 100 || pr["publishThrottlingRateInByte"] != 2048 {
		t.Fatalf("namespace publish rate = %v, %v", pr, err)
	}
	runAdmin(t, p, false, "namespaces", "set-subscription-dispatch-rate", "public/pol", "--msg-dispatch-rate", "30", "--dispatch-rate-period", "2")
	runAdmin(t, p, false, "namespaces", "set-subscribe-rate", "public/pol", "--subscribe-rate", "4", "--subscribe-rate-period", "10")
	runAdmin(t, p, false, "namespaces", "set-inactive-topic-policies", "public/pol", "-e", "-t", "120", "-m", "delete_when_subscriptions_caught_up")
	if out := runAdmin(t, p, false, "namespaces", "get-inactive-topic-policies", "public/pol"); !strings.Contains(out, "delete_when_subscriptions_caught_up") {
		t.Fatalf("inactive topic policies:\n%s", out)
	}
	runAdmin(t, p, false, "namespaces", "set-subscription-expiration-time", "public/pol", "-t", "15")
	if out := runAdmin(t, p, false, "-o", "json", "namespaces", "get-subscription-expiration-time", "public/pol"); strings.TrimSpace(out) != "15" {
		t.Fatalf("subscription expiration time: %s", out)
	}
	runAdmin(t, p, false, "namespaces", "set-message-ttl", "public/pol", "-t", "600")

	topic := "persistent://public/pol/t1"
	runAdmin(t, p, false, "topics", "create", topic)
	runAdmin(t, p, false, "topics", "set-publish-rate", topic, "-m", "7")
	runAdmin(t, p, false, "topicPolicies", "set-message-ttl", topic, "-t", "30")
	runAdmin(t, p, false, "topics", "set-retention", topic, "--time", "1h", "--size", "5M")
	appliedTTL := func() string {
		return strings.TrimSpace(runAdmin(t, p, false, "-o", "json", "topics", "get-message-ttl", topic, "--applied"))
	}
	if got := appliedTTL(); got != "30" {
		t.Fatalf("applied TTL = %s, want the topic's 30", got)
	}
	if err := json.Unmarshal([]byte(runAdmin(t, p, false, "-o", "json", "topics", "get-publish-rate", topic)), &pr); err != nil || pr["publishThrottlingRateInMsg"] != 7 {
		t.Fatalf("topic publish rate = %v, %v", pr, err)
	}
	var ret map[string]int
	if err := json.Unmarshal([]byte(runAdmin(t, p, false, "-o", "json", "topics", "get-retention", topic)), &ret); err != nil ||
		ret["retentionTimeInMinutes"] != 60 || ret["retentionSizeInMB"] != 5 {
		t.Fatalf("topic retention = %v, %v", ret, err)
	}
	runAdmin(t, p, false, "topics", "remove-message-ttl", topic)
	if got := appliedTTL(); got != "600" {
		t.Fatalf("applied TTL after remove = %s, want the namespace's 600", got)
	}
	if out := runAdmin(t, p, true, "topics", "set-max-consumers", topic, "-c", "-5"); !strings.Contains(out, "412") {
		t.Fatalf("negative max consumers: %s", out)
	}
	if out := runAdmin(t, p, true, "topics", "get-retention", "persistent://public/pol/none"); !strings.Contains(out, "404") {
		t.Fatalf("policy of a missing topic: %s", out)
	}
}
