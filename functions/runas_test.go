package functions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstanceUserMissing: a root worker whose instance account does not
// exist refuses to start, naming the account and the setting.
func TestInstanceUserMissing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the instance account applies to root workers")
	}
	_, err := NewWorker(Options{Metadata: openStore(t).md, ID: "w", DataDir: t.TempDir(), InstanceUser: "no-such-account-xyz"})
	if err == nil || !strings.Contains(err.Error(), "no-such-account-xyz") || !strings.Contains(err.Error(), "functionsInstanceUser") {
		t.Fatalf("NewWorker with a missing account: %v", err)
	}
	if _, err := NewWorker(Options{Metadata: openStore(t).md, ID: "w", DataDir: t.TempDir(), InstanceUser: "root"}); err == nil {
		t.Fatal("a root instance account was accepted")
	}
}

// TestInstanceConfJSON: the configuration on the instance's pipe carries
// Pulsar's GoInstanceConfig names and enum numbers, and the function's
// credentials.
func TestInstanceConfJSON(t *testing.T) {
	w := &Worker{serviceURL: "pulsar://h:6650", opts: Options{Cluster: "c1"}}
	spec := &Spec{Tenant: "t", Namespace: "ns", Name: "f", Inputs: []string{"persistent://t/ns/a", "persistent://t/ns/b"},
		TopicsPattern: "persistent://t/ns/p.*", Output: "persistent://t/ns/o", ProcessingGuarantees: EffectivelyOnce,
		SubscriptionType: "Failover", SubName: "sub", AutoAck: true, Parallelism: 2, UserConfig: map[string]any{"k": "v"},
		SubscriptionPosition: "Earliest", MaxMessageRetries: 3, DeadLetterTopic: "persistent://t/ns/dlq"}
	raw, err := w.instanceConf(spec, 1, pfPorts{control: 4001, metrics: 4002},
		instanceCredentials{Plugin: tokenPlugin, Params: "token:abc", TrustCertsFile: "/etc/ca.pem"})
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"pulsarServiceURL": "pulsar://h:6650", "instanceID": 1.0, "port": 4001.0, "metricsPort": 4002.0,
		"tenant": "t", "nameSpace": "ns", "name": "f", "processingGuarantees": 2.0, "subscriptionType": 1.0, "subscriptionName": "sub",
		"subscriptionPosition": 1.0, "sinkSpecsTopic": "persistent://t/ns/o", "userConfig": `{"k":"v"}`, "autoAck": true,
		"clusterName": "c1", "runtime": 3.0, "maxMessageRetries": 3.0, "deadLetterTopic": "persistent://t/ns/dlq",
		"clientAuthenticationPlugin": tokenPlugin, "clientAuthenticationParameters": "token:abc", "tlsTrustCertsFilePath": "/etc/ca.pem"} {
		if c[k] != want {
			t.Errorf("%s = %v, want %v", k, c[k], want)
		}
	}
	specs, _ := c["sourceInputSpecs"].(map[string]any)
	if len(specs) != 3 || specs["persistent://t/ns/p.*"] != `{"isRegexPattern":true}` || specs["persistent://t/ns/a"] != `{}` {
		t.Errorf("sourceInputSpecs %v", specs)
	}
	var fd map[string]any
	if err := json.Unmarshal([]byte(c["functionDetails"].(string)), &fd); err != nil || fd["processingGuarantees"] != EffectivelyOnce || fd["runtime"] != "GO" {
		t.Errorf("functionDetails %v %v", fd, err)
	}
}

// TestPlaceProgram: the program lands under dst whole and executable,
// replacing an older copy, with no temporary file left beside it.
func TestPlaceProgram(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "prog"), filepath.Join(dir, "copies", "prog-1")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho new\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(dst), 0o755)
	if err := os.WriteFile(dst, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := placeProgram(src, dst); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	st, _ := os.Stat(dst)
	if err != nil || string(b) != "#!/bin/sh\necho new\n" || st.Mode().Perm() != 0o755 {
		t.Fatalf("dst %q mode %v: %v", b, st.Mode().Perm(), err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 1 {
		t.Fatalf("left beside it: %v", ents)
	}
}
