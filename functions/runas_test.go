package functions

import (
	"encoding/json"
	"os"
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
