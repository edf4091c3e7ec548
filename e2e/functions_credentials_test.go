package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/auth"
)

// TestFunctionsE2EInstanceCredentials: on a standalone with token
// authentication and authorization, a tenant admin's function runs with
// that admin's token (issue 31: instances connected without credentials
// and could not run at all): it consumes its input, produces its output
// and keeps state through the worker, all in its tenant, and the broker
// refuses its produce to another tenant's topic; a function built with
// Pulsar's SDK and a builtin connector (the webhook, which keeps state)
// get the same credentials. The worker's own
// (superuser) token is in no instance's environment, arguments or files;
// the function's token is neither in its environment nor its arguments
// (it arrives on a pipe), nor returned by the API nor logged. After a
// restart the stored token runs the function again.
func TestFunctionsE2EInstanceCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := buildFnProg(t, "1")
	pfBin := buildPfGo(t, t.TempDir())
	keyDir := t.TempDir()
	key, tok := tokenKey(t, keyDir)
	admin, alice, bob := tok("admin"), tok("alice"), tok("bob")
	dir := t.TempDir()
	args := []string{"--authenticationEnabled", "--authenticationProviders", "token", "--tokenSecretKey", "file://" + key,
		"--authorizationEnabled", "--superUserRoles", "admin",
		// The worker's own identity: a superuser. It must reach no instance.
		"--brokerClientAuthenticationPlugin", "token", "--brokerClientAuthenticationParameters", "token:" + admin}
	p := startStandalone(t, dir, args...)
	for _, call := range []struct{ method, path, body string }{
		{"PUT", "/admin/v2/tenants/acme", `{"adminRoles":["alice"],"allowedClusters":["standalone"]}`},
		{"PUT", "/admin/v2/namespaces/acme/ns", ""},
		{"PUT", "/admin/v2/tenants/other", `{"adminRoles":["bob"],"allowedClusters":["standalone"]}`},
		{"PUT", "/admin/v2/namespaces/other/ns", ""},
	} {
		if code, body := authHTTP(t, call.method, p.http+call.path, admin, call.body, nil); code != 204 {
			t.Fatalf("%s %s: %d %s", call.method, call.path, code, body)
		}
	}
	client := func(token string) pulsar.Client {
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: p.service, OperationTimeout: 30 * time.Second,
			ConnectionTimeout: 10 * time.Second, Authentication: pulsar.NewAuthenticationToken(token), Logger: plog.DefaultNopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cfg := map[string]any{"runtime": "GO", "inputs": []string{"persistent://acme/ns/in"}, "output": "persistent://acme/ns/out",
		"subscriptionPosition": "Earliest", "userConfig": map[string]any{"mode": "reach", "target": "persistent://other/ns/stolen"}}
	if code, body := fnUploadAs(t, p.http, alice, "functions", "acme/ns", "reach", cfg, bin); code != 204 {
		t.Fatalf("upload by the tenant admin: %d %s", code, body)
	}
	// A function built against Pulsar's Go SDK contract gets the same
	// credentials in its configuration (clientAuthenticationPlugin).
	pfCfg := map[string]any{"runtime": "GO", "inputs": []string{"persistent://acme/ns/pf-in"}, "output": "persistent://acme/ns/pf-out",
		"subscriptionPosition": "Earliest", "userConfig": map[string]any{"suffix": "?"}}
	if code, body := fnUploadAs(t, p.http, alice, "functions", "acme/ns", "pf", pfCfg, pfBin); code != 204 {
		t.Fatalf("upload of the Pulsar SDK function: %d %s", code, body)
	}
	ac := client(alice)
	pfOut := subscribeOut(t, ac, "persistent://acme/ns/pf-out")
	// Pulsar's SDK subscribes at the latest position: produce once it has.
	waitConsumer(t, p.http+"/admin/v2/persistent/acme/ns/pf-in/stats", admin, "acme/ns/pf")
	produceAll(t, ac, "persistent://acme/ns/pf-in", []string{"x"})
	pfLog := filepath.Join(dir, "functions", "logs", "acme_ns_pf-functions-0.log")
	t.Cleanup(func() {
		if t.Failed() {
			l, _ := os.ReadFile(pfLog)
			t.Logf("Pulsar SDK function's log:\n%s", l)
		}
	})
	receiveUntil(t, pfOut, 90*time.Second, func(s map[string]int) bool { return s["x?"] == 1 })
	out := subscribeOut(t, ac, "persistent://acme/ns/out")
	produceAll(t, ac, "persistent://acme/ns/in", []string{"m1"})
	var got string
	receiveUntil(t, out, 90*time.Second, func(s map[string]int) bool {
		for k := range s {
			got = k
		}
		return len(s) > 0
	})
	if !strings.HasPrefix(got, "m1 refused: ") {
		t.Fatalf("the function's produce to another tenant: %q, want refused", got)
	}
	code, b := authHTTP(t, "GET", p.http+"/admin/v3/functions/acme/ns/reach/state/reached", alice, "", nil)
	var st struct {
		NumberValue int64 `json:"numberValue"`
	}
	if code != 200 || json.Unmarshal(b, &st) != nil || st.NumberValue != 1 {
		t.Fatalf("state the function kept through the worker: %d %s", code, b)
	}
	if code, b := authHTTP(t, "GET", p.http+"/admin/v2/persistent/other/ns/stolen/stats", admin, "", nil); code == 200 &&
		!bytes.Contains(b, []byte(`"msgInCounter":0`)) {
		t.Fatalf("the other tenant's topic got messages: %s", b)
	}

	// A builtin connector gets the same: the webhook source keeps its
	// address in state through the worker and produces as alice.
	hook := `{"topicName":"persistent://acme/ns/hook-out","archive":"builtin://http","configs":{"path":"/e"}}`
	if code, b := authHTTP(t, "POST", p.http+"/admin/v3/sources/acme/ns/hook", alice, hook, nil); code != 204 {
		t.Fatalf("webhook source by the tenant admin: %d %s", code, b)
	}
	var addr string
	deadline := time.Now().Add(60 * time.Second)
	for addr == "" {
		code, b := authHTTP(t, "GET", p.http+"/admin/v3/functions/acme/ns/hook/state/http-address%2F0", alice, "", nil)
		var st struct {
			ByteValue []byte `json:"byteValue"`
		}
		if code == 200 && json.Unmarshal(b, &st) == nil {
			addr = string(st.ByteValue)
		} else if time.Now().After(deadline) {
			t.Fatalf("the webhook never stored its address: %d %s", code, b)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	hookOut := subscribeOut(t, ac, "persistent://acme/ns/hook-out")
	if code, b := fnHTTP(t, "POST", "http://"+addr+"/e", "text/plain", []byte("hooked")); code != 200 {
		t.Fatalf("POST to the webhook: %d %s", code, b)
	}
	receiveUntil(t, hookOut, 60*time.Second, func(s map[string]int) bool { return s["hooked"] == 1 })

	// Where the tokens are not.
	pids := append(instancePids(t, fnPackagePath(t, dir, bin)), instancePids(t, fnPackagePath(t, dir, pfBin))...)
	if hook := builtinPids(t, "hook"); len(hook) == 1 {
		pids = append(pids, hook...)
	}
	if len(pids) != 3 {
		t.Fatalf("instance processes %v", pids)
	}
	for _, pid := range pids {
		for _, f := range []string{"environ", "cmdline"} {
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
			if err != nil {
				t.Fatal(err)
			}
			for name, secret := range map[string]string{"worker's": admin, "function's": alice} {
				if bytes.Contains(raw, []byte(secret)) {
					t.Errorf("the %s token is in instance %d's %s", name, pid, f)
				}
			}
		}
	}
	_ = filepath.WalkDir(filepath.Join(dir, "functions"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Dir(path) == filepath.Join(dir, "functions", "packages") {
			return nil
		}
		raw, _ := os.ReadFile(path)
		if bytes.Contains(raw, []byte(admin)) || bytes.Contains(raw, []byte(alice)) {
			t.Errorf("a token is in %s", path)
		}
		return nil
	})
	for _, path := range []string{"/admin/v3/functions/acme/ns/reach", "/admin/v3/functions/acme/ns", "/admin/v3/functions/acme/ns/reach/status"} {
		if code, b := authHTTP(t, "GET", p.http+path, alice, "", nil); code != 200 || bytes.Contains(b, []byte(alice)) {
			t.Errorf("GET %s: %d, returns the token: %v", path, code, bytes.Contains(b, []byte(alice)))
		}
	}
	// bob administers another tenant: he cannot touch alice's function.
	if code, _ := authHTTP(t, "GET", p.http+"/admin/v3/functions/acme/ns/reach", bob, "", nil); code != 403 {
		t.Errorf("bob reads alice's function: %d", code)
	}
	ac.Close()
	p.stop()
	if logged, _ := os.ReadFile(p.logPath); bytes.Contains(logged, []byte(alice)) {
		t.Error("the function's token is in the standalone's log")
	}

	// After a restart the stored token runs the function again.
	p = startStandalone(t, dir, args...)
	ac = client(alice)
	out = subscribeOut(t, ac, "persistent://acme/ns/out")
	produceAll(t, ac, "persistent://acme/ns/in", []string{"m2"})
	receiveUntil(t, out, 90*time.Second, func(s map[string]int) bool {
		for k := range s {
			if strings.HasPrefix(k, "m2 refused: ") {
				return true
			}
		}
		return false
	})
	ac.Close()
	p.stop()
}

// waitConsumer waits until subscription sub of the topic whose stats
// URL is given has a consumer.
func waitConsumer(t testing.TB, statsURL, token, sub string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, b := authHTTP(t, "GET", statsURL, token, "", nil)
		var st struct {
			Subscriptions map[string]struct {
				Consumers []json.RawMessage `json:"consumers"`
			} `json:"subscriptions"`
		}
		if code == 200 && json.Unmarshal(b, &st) == nil && len(st.Subscriptions[sub].Consumers) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no consumer on %s of %s: %d %s", sub, statsURL, code, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tokenKey writes a new HS256 secret key into dir and returns its path
// and a function that signs a token for a role with it.
func tokenKey(t testing.TB, dir string) (string, func(role string) string) {
	t.Helper()
	k, err := auth.NewSecretKey("HS256")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "secret.key")
	if err := os.WriteFile(key, k, 0o600); err != nil {
		t.Fatal(err)
	}
	return key, func(role string) string {
		s, err := auth.CreateToken(k, auth.TokenSpec{Subject: role})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// builtinPids returns the pids of builtin connector instances named name.
func builtinPids(t testing.TB, name string) []int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, []byte("MAGNETAR_BUILTIN=")) && bytes.Contains(env, []byte(`"name":"`+name+`"`)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
