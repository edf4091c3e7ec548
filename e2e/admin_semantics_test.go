package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

const (
	cliAvroV1 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`
	cliAvroV3 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"email","type":"string"}]}`
)

func schemaFile(t *testing.T, def string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"type": "AVRO", "schema": def, "properties": map[string]string{}})
	p := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAdminCLISchemasAndCompaction drives `magnetar admin schemas`, the
// namespace schema policies and topic compaction against a standalone
// process, with data from the Go client.
func TestAdminCLISchemasAndCompaction(t *testing.T) {
	p := startStandalone(t, t.TempDir())
	topic := "persistent://public/default/cli-schema"
	runAdmin(t, p, false, "schemas", "upload", topic, "-f", schemaFile(t, cliAvroV1))
	if out := runAdmin(t, p, false, "-o", "json", "schemas", "get", topic); !strings.Contains(out, `"type": "AVRO"`) || !strings.Contains(out, `"version": 0`) {
		t.Fatalf("schemas get:\n%s", out)
	}
	// V3 adds a field without a default: refused under the FULL default.
	if out := runAdmin(t, p, true, "schemas", "upload", topic, "-f", schemaFile(t, cliAvroV3)); !strings.Contains(out, "409") {
		t.Fatalf("incompatible upload: %s", out)
	}
	if out := runAdmin(t, p, false, "-o", "json", "schemas", "compatibility", topic, "-f", schemaFile(t, cliAvroV3)); !strings.Contains(out, `"compatibility": false`) {
		t.Fatalf("compatibility test:\n%s", out)
	}
	runAdmin(t, p, false, "namespaces", "set-schema-compatibility-strategy", "public/default", "FORWARD")
	if out := runAdmin(t, p, false, "namespaces", "get-schema-compatibility-strategy", "public/default"); strings.TrimSpace(out) != "FORWARD" {
		t.Fatalf("namespace strategy: %q", out)
	}
	runAdmin(t, p, false, "schemas", "upload", topic, "-f", schemaFile(t, cliAvroV3))
	var all struct {
		Versions []struct {
			Version int `json:"version"`
		} `json:"getSchemaResponses"`
	}
	if err := json.Unmarshal([]byte(runAdmin(t, p, false, "-o", "json", "schemas", "get", topic, "--all-versions")), &all); err != nil || len(all.Versions) != 2 {
		t.Fatalf("all versions: %+v %v", all, err)
	}
	runAdmin(t, p, false, "schemas", "set-compatibility-strategy", topic, "ALWAYS_INCOMPATIBLE")
	if out := runAdmin(t, p, false, "schemas", "get-compatibility-strategy", topic, "--applied"); strings.TrimSpace(out) != "ALWAYS_INCOMPATIBLE" {
		t.Fatalf("topic strategy: %q", out)
	}
	// The Go client's producer is refused a third version.
	cl := p.client(t)
	if _, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(`{"type":"record","name":"User","fields":[]}`, nil)}); err == nil || !strings.Contains(err.Error(), "IncompatibleSchema") {
		t.Fatalf("producer under ALWAYS_INCOMPATIBLE: %v", err)
	}
	runAdmin(t, p, false, "schemas", "delete", topic)
	runAdmin(t, p, true, "schemas", "get", topic)

	// Compaction from the CLI.
	ct := "persistent://public/default/cli-compact"
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: ct})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", i%5), Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	runAdmin(t, p, false, "topics", "compact", ct)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := runAdmin(t, p, false, "-o", "json", "topics", "compaction-status", ct)
		if strings.Contains(out, "SUCCESS") {
			break
		}
		if strings.Contains(out, "ERROR") || time.Now().After(deadline) {
			t.Fatalf("compaction status:\n%s\n%s", out, p.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: ct, StartMessageID: pulsar.EarliestMessageID(), ReadCompacted: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r.HasNext() {
		m, err := r.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Key()+"="+string(m.Payload()))
	}
	if want := "k0=45 k1=46 k2=47 k3=48 k4=49"; strings.Join(got, " ") != want {
		t.Fatalf("compacted read %v, want %s", got, want)
	}
	runAdmin(t, p, false, "namespaces", "set-compaction-threshold", "public/default", "10M")
	if out := runAdmin(t, p, false, "namespaces", "get-compaction-threshold", "public/default"); strings.TrimSpace(out) != "10485760" {
		t.Fatalf("threshold: %q", out)
	}
}
