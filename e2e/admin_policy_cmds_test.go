package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestAdminCLIPolicyCmds: persistence (refused above the standalone's one
// bookie, accepted and used by the next ledgers within it), anti-affinity,
// consumers per subscription, encryption, clear-backlog and topic
// properties through `magnetar admin` against a standalone process;
// policies and properties survive a restart.
func TestAdminCLIPolicyCmds(t *testing.T) {
	dir := t.TempDir()
	p := startStandalone(t, dir)
	runAdmin(t, p, false, "namespaces", "create", "public/ext")
	if out := runAdmin(t, p, true, "namespaces", "set-persistence", "public/ext", "-e", "2", "-w", "2", "-a", "2"); !strings.Contains(out, "available bookies (1)") {
		t.Fatalf("ensemble above the bookies: %s", out)
	}
	if out := runAdmin(t, p, true, "namespaces", "set-persistence", "public/ext", "-e", "1", "-w", "2", "-a", "1"); !strings.Contains(out, "412") {
		t.Fatalf("Qw above E: %s", out)
	}
	runAdmin(t, p, false, "namespaces", "set-persistence", "public/ext", "-e", "1", "-w", "1", "-a", "1", "-r", "5")
	runAdmin(t, p, false, "namespaces", "set-anti-affinity-group", "public/ext", "-g", "g1")
	runAdmin(t, p, false, "namespaces", "set-max-consumers-per-subscription", "public/ext", "-c", "3")
	topic := "persistent://public/ext/t"
	runAdmin(t, p, false, "topics", "create", topic, "-m", "owner=a", "-m", "tier=1")
	runAdmin(t, p, false, "topics", "update-properties", topic, "-p", "tier=2")
	runAdmin(t, p, false, "topics", "remove-properties", topic, "-k", "owner")

	c := p.client(t)
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 4 {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("old")}); err != nil {
			t.Fatalf("send with the namespace's E/Qw/Qa 1/1/1: %v", err)
		}
	}
	runAdmin(t, p, false, "namespaces", "clear-backlog", "public/ext", "-s", "s", "--force")
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	p.stop()
	p = startStandalone(t, dir)
	var pers map[string]float64
	if err := json.Unmarshal([]byte(runAdmin(t, p, false, "-o", "json", "namespaces", "get-persistence", "public/ext")), &pers); err != nil ||
		pers["bookkeeperEnsemble"] != 1 || pers["managedLedgerMaxMarkDeleteRate"] != 5 {
		t.Fatalf("persistence after restart: %v %v", pers, err)
	}
	if out := strings.TrimSpace(runAdmin(t, p, false, "namespaces", "get-anti-affinity-group", "public/ext")); out != "g1" {
		t.Fatalf("anti-affinity group: %q", out)
	}
	if out := runAdmin(t, p, false, "namespaces", "get-anti-affinity-namespaces", "-c", "standalone", "-g", "g1"); !strings.Contains(out, "public/ext") {
		t.Fatalf("anti-affinity namespaces: %s", out)
	}
	if out := strings.TrimSpace(runAdmin(t, p, false, "-o", "json", "namespaces", "get-max-consumers-per-subscription", "public/ext")); out != "3" {
		t.Fatalf("max consumers per subscription: %s", out)
	}
	var props map[string]string
	if err := json.Unmarshal([]byte(runAdmin(t, p, false, "-o", "json", "topics", "get-properties", topic)), &props); err != nil ||
		!maps.Equal(props, map[string]string{"tier": "2"}) {
		t.Fatalf("properties after restart: %v %v", props, err)
	}
	// The cleared backlog stays cleared: only the later message comes.
	c = p.client(t)
	cons, err = c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	// A deadline of its own: the restart and the admin processes above
	// can take most of a minute on a loaded machine (CI: ctx ran out).
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	m, err := cons.Receive(rctx)
	if err != nil || string(m.Payload()) != "new" {
		t.Fatalf("first message after clear-backlog and restart: %v %v", m, err)
	}
	runAdmin(t, p, false, "namespaces", "set-encryption-required", "public/ext", "-e")
	if out := strings.TrimSpace(runAdmin(t, p, false, "-o", "json", "namespaces", "get-encryption-required", "public/ext")); out != "true" {
		t.Fatalf("encryption required: %s", out)
	}
}
