package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// runAdmin runs `magnetar admin --admin-url <p.http> args...` (runMain).
func runAdmin(t *testing.T, p *proc, wantErr bool, args ...string) string {
	t.Helper()
	return runMain(t, wantErr, append([]string{"admin", "--admin-url", p.http}, args...)...)
}

func TestAdminCLIAgainstStandalone(t *testing.T) {
	p := startStandalone(t, t.TempDir())

	if out := runAdmin(t, p, false, "clusters", "list"); !strings.Contains(out, "CLUSTER") || !strings.Contains(out, "standalone") {
		t.Fatalf("clusters list:\n%s", out)
	}
	if out := runAdmin(t, p, false, "-o", "json", "clusters", "list"); strings.TrimSpace(out) != "[\n  \"standalone\"\n]" {
		t.Fatalf("clusters list -o json:\n%s", out)
	}
	if out := runAdmin(t, p, false, "brokers", "list", "standalone"); !strings.Contains(out, "BROKER") {
		t.Fatalf("brokers list:\n%s", out)
	}
	runAdmin(t, p, false, "bookies", "list")

	runAdmin(t, p, false, "tenants", "create", "cli", "--admin-roles", "ops", "--allowed-clusters", "standalone")
	if out := runAdmin(t, p, false, "tenants", "get", "cli"); !strings.Contains(out, "adminRoles") || !strings.Contains(out, "ops") {
		t.Fatalf("tenants get:\n%s", out)
	}
	if out := runAdmin(t, p, true, "tenants", "create", "cli"); !strings.Contains(out, "409") {
		t.Fatalf("duplicate tenant: %s", out)
	}
	runAdmin(t, p, false, "namespaces", "create", "cli/ns")
	if out := runAdmin(t, p, false, "namespaces", "list", "cli"); !strings.Contains(out, "cli/ns") {
		t.Fatalf("namespaces list:\n%s", out)
	}
	runAdmin(t, p, false, "namespaces", "set-retention", "cli/ns", "--time", "2h", "--size", "10M")
	var ret map[string]int
	if err := json.Unmarshal([]byte(runAdmin(t, p, false, "-o", "json", "namespaces", "get-retention", "cli/ns")), &ret); err != nil || ret["retentionTimeInMinutes"] != 120 || ret["retentionSizeInMB"] != 10 {
		t.Fatalf("retention %v %v", ret, err)
	}
	runAdmin(t, p, false, "namespaces", "set-message-ttl", "cli/ns", "-t", "3600")
	if out := runAdmin(t, p, false, "namespaces", "get-message-ttl", "cli/ns"); strings.TrimSpace(out) != "3600" {
		t.Fatalf("ttl: %q", out)
	}
	runAdmin(t, p, false, "namespaces", "set-backlog-quota", "cli/ns", "-l", "10M", "-p", "producer_exception")
	if out := runAdmin(t, p, false, "namespaces", "get-backlog-quotas", "cli/ns"); !strings.Contains(out, "destination_storage.policy") || !strings.Contains(out, "producer_exception") {
		t.Fatalf("quotas:\n%s", out)
	}
	runAdmin(t, p, false, "namespaces", "set-deduplication", "cli/ns", "--enable")
	runAdmin(t, p, false, "namespaces", "set-max-producers-per-topic", "cli/ns", "--max-producers-per-topic", "5")
	runAdmin(t, p, false, "namespaces", "set-max-unacked-messages-per-consumer", "cli/ns", "-c", "1000")
	runAdmin(t, p, false, "namespaces", "set-max-unacked-messages-per-subscription", "cli/ns", "-c", "4000")
	if out := runAdmin(t, p, false, "namespaces", "get-max-unacked-messages-per-consumer", "cli/ns"); strings.TrimSpace(out) != "1000" {
		t.Fatalf("max unacked per consumer: %q", out)
	}
	runAdmin(t, p, false, "namespaces", "remove-max-unacked-messages-per-subscription", "cli/ns")
	if out := runAdmin(t, p, false, "namespaces", "get-max-unacked-messages-per-subscription", "cli/ns"); strings.TrimSpace(out) != "(none)" {
		t.Fatalf("max unacked per subscription after remove: %q", out)
	}
	runAdmin(t, p, false, "namespaces", "set-auto-topic-creation", "cli/ns", "--enable", "--type", "partitioned", "-n", "2")
	if out := runAdmin(t, p, false, "namespaces", "policies", "cli/ns"); !strings.Contains(out, "max_producers_per_topic") || !strings.Contains(out, "autoTopicCreationOverride.defaultNumPartitions") {
		t.Fatalf("policies:\n%s", out)
	}

	runAdmin(t, p, false, "topics", "create", "cli/ns/plain")
	runAdmin(t, p, false, "topics", "create-partitioned-topic", "cli/ns/parted", "-p", "2")
	runAdmin(t, p, false, "topics", "update-partitioned-topic", "cli/ns/parted", "-p", "3")
	if out := runAdmin(t, p, false, "topics", "get-partitioned-topic-metadata", "cli/ns/parted"); !strings.Contains(out, "partitions") || !strings.Contains(out, "3") {
		t.Fatalf("metadata:\n%s", out)
	}
	out := runAdmin(t, p, false, "topics", "list", "cli/ns")
	for _, want := range []string{"persistent://cli/ns/plain", "persistent://cli/ns/parted-partition-2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("topics list lacks %s:\n%s", want, out)
		}
	}
	runAdmin(t, p, false, "subscriptions", "create", "cli/ns/plain", "sub", "-m", "earliest")

	// Publish a few messages, then inspect and move the subscription.
	c := p.client(t)
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://cli/ns/plain", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	var last pulsar.MessageID
	for _, s := range []string{"one", "two", "three"} {
		if last, err = prod.Send(t.Context(), &pulsar.ProducerMessage{Payload: []byte(s), Properties: map[string]string{"k": s}}); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	c.Close()

	if out := runAdmin(t, p, false, "subscriptions", "list", "cli/ns/plain"); !strings.Contains(out, "sub") {
		t.Fatalf("subscriptions list:\n%s", out)
	}
	if out := runAdmin(t, p, false, "topics", "stats", "cli/ns/plain"); !strings.Contains(out, "subscriptions.sub.msgBacklog") || !strings.Contains(out, "msgInCounter") {
		t.Fatalf("stats:\n%s", out)
	}
	if out := runAdmin(t, p, false, "topics", "stats-internal", "cli/ns/plain"); !strings.Contains(out, "cursors.sub.markDeletePosition") {
		t.Fatalf("internal stats:\n%s", out)
	}
	if out := runAdmin(t, p, false, "topics", "peek-messages", "cli/ns/plain", "-s", "sub", "-n", "2"); !strings.Contains(out, `"one"`) || !strings.Contains(out, `"two"`) {
		t.Fatalf("peek:\n%s", out)
	}
	lid := strings.Fields(strings.ReplaceAll(last.String(), ":", " "))
	if out := runAdmin(t, p, false, "topics", "get-message-by-id", "cli/ns/plain", "-l", lid[0], "-e", lid[1]); !strings.Contains(out, `"three"`) {
		t.Fatalf("get-message-by-id:\n%s", out)
	}
	runAdmin(t, p, false, "subscriptions", "skip", "cli/ns/plain", "sub", "-n", "1")
	if out := runAdmin(t, p, false, "topics", "peek-messages", "cli/ns/plain", "-s", "sub"); !strings.Contains(out, `"two"`) {
		t.Fatalf("peek after skip:\n%s", out)
	}
	runAdmin(t, p, false, "subscriptions", "reset-cursor", "cli/ns/plain", "sub", "-m", "earliest")
	runAdmin(t, p, false, "subscriptions", "clear-backlog", "cli/ns/plain", "sub")
	runAdmin(t, p, false, "subscriptions", "expire-messages", "cli/ns/plain", "sub", "-t", "0")
	runAdmin(t, p, false, "subscriptions", "reset-cursor", "cli/ns/plain", "sub", "-t", "1h")
	var st struct {
		Subscriptions map[string]struct {
			MsgBacklog int `json:"msgBacklog"`
		} `json:"subscriptions"`
	}
	if err := json.Unmarshal([]byte(runAdmin(t, p, false, "-o", "json", "topics", "stats", "cli/ns/plain")), &st); err != nil || st.Subscriptions["sub"].MsgBacklog != 3 {
		t.Fatalf("backlog after reset to 1h ago: %+v %v", st, err)
	}
	runAdmin(t, p, false, "subscriptions", "delete", "cli/ns/plain", "sub")
	if out := runAdmin(t, p, false, "topics", "terminate", "cli/ns/plain"); !strings.Contains(out, "ledgerId") {
		t.Fatalf("terminate:\n%s", out)
	}
	runAdmin(t, p, false, "topics", "unload", "cli/ns/plain")
	runAdmin(t, p, false, "topics", "delete", "cli/ns/plain")
	runAdmin(t, p, false, "topics", "delete-partitioned-topic", "cli/ns/parted")
	if out := runAdmin(t, p, true, "tenants", "delete", "cli"); !strings.Contains(out, "409") {
		t.Fatalf("delete non-empty tenant: %s", out)
	}
	runAdmin(t, p, false, "namespaces", "delete", "cli/ns")
	runAdmin(t, p, false, "tenants", "delete", "cli")
	if out := runAdmin(t, p, true, "topics", "stats", "cli/ns/plain"); !strings.Contains(out, "404") {
		t.Fatalf("stats in deleted namespace: %s", out)
	}
}
