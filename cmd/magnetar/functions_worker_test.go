package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/conf"
	"github.com/magnetar-mq/magnetar/internal/stack"
)

// TestFunctionsWorkerListensOnLoopback: the worker's default --http is
// a loopback address (the process-level refusal of an open remote
// listener is e2e's TestFunctionsWorkerRefusesOpenRemote).
func TestFunctionsWorkerListensOnLoopback(t *testing.T) {
	if def := newFunctionsWorkerCmd().Flags().Lookup("http").DefValue; !stack.IsLoopback(def) {
		t.Fatalf("default --http %s is not loopback", def)
	}
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true,
		":1": false, "0.0.0.0:1": false, "10.0.0.1:1": false, "example.com:1": false, "bad": false} {
		if stack.IsLoopback(addr) != want {
			t.Errorf("isLoopback(%s) = %v", addr, !want)
		}
	}
}

// TestWorkerYAMLConfig: functions_worker.yml's security keys (scalars,
// block and flow lists, the properties map) reach the worker's flags.
func TestWorkerYAMLConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "functions_worker.yml")
	os.WriteFile(path, []byte(`# worker
workerId: w9
workerPort: 7750
authenticationEnabled: true
authorizationEnabled: true
authenticationProviders:
  - org.apache.pulsar.broker.authentication.AuthenticationProviderToken
superUserRoles: [root, "ops"]
functionRuntimeFactoryConfigs:
    logDirectory: logs/
properties:
  tokenSecretKey: file:///keys/secret.key
brokerClientAuthenticationPlugin: null
`), 0o600)
	f, err := conf.ReadYAMLFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"workerId": "w9", "workerPort": "7750", "authenticationEnabled": "true",
		"authenticationProviders": "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
		"superUserRoles":          "root,ops", "tokenSecretKey": "file:///keys/secret.key", "brokerClientAuthenticationPlugin": ""} {
		if got, _ := f.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if _, ok := f.Get("functionRuntimeFactoryConfigs"); ok {
		if v, _ := f.Get("functionRuntimeFactoryConfigs"); v != "" {
			t.Errorf("nested map read as %q", v)
		}
	}
	cmd := newFunctionsWorkerCmd()
	cmd.Flags().Set("config", path)
	if err := applyConfig(cmd, "functions-worker"); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"worker-id": "w9", "http": "127.0.0.1:7750", "superUserRoles": "root,ops",
		"tokenSecretKey": "file:///keys/secret.key", "authenticationEnabled": "true"} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
}
