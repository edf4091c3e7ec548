package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// buildPfGo builds testdata/pfgo (a function following Pulsar's Go
// runtime contract, see its doc comment) into dir.
func buildPfGo(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "pfgo")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/pfgo")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build pfgo: %v\n%s", err, b)
	}
	return out
}

// procField reads one "Name:\tvalue" line of /proc/pid/status.
func procField(t testing.TB, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestFunctionsPulsarGoRuntime: a Go function written against Pulsar's
// Go SDK contract (testdata/pfgo) runs unmodified on the standalone's
// worker: it reads its configuration from -instance-conf-path (a pipe), consumes and
// produces with its user config, and its status and stats come from the
// gRPC control service the SDK serves. The root worker runs it as
// nobody, with none of the worker's environment. A crashing one shows
// its restarts and last error. Package URLs: file:// only inside the
// functions directory, http:// only matching a pattern (a refused one is
// never contacted), and nothing is stored for a refused upload.
func TestFunctionsPulsarGoRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	if os.Geteuid() != 0 {
		t.Skip("checks the account of instances of a root worker")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	// Secrets in the worker's environment must not reach instances.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "worker-secret-aws")
	t.Setenv("PULSAR_PREFIX_tokenSecretKey", "worker-secret-token")
	t.Setenv("MAGNETAR_brokerClientAuthenticationParameters", "token:worker-secret-client")

	pkgDir := t.TempDir()
	bin := buildPfGo(t, pkgDir)
	outside := buildPfGo(t, t.TempDir())
	if err := os.Symlink(outside, filepath.Join(pkgDir, "escape")); err != nil {
		t.Fatal(err)
	}
	var hits, allowedHits atomic.Int64
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer refused.Close()
	binBytes, _ := os.ReadFile(bin)
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		allowedHits.Add(1)
		w.Write(binBytes)
	}))
	defer allowed.Close()

	dir := t.TempDir()
	p := startStandalone(t, dir, "--functions-directory", pkgDir,
		"--functions-url-patterns", strings.ReplaceAll(allowed.URL, ".", `\.`)+"/pkg/.*")
	cfg := func(name string, user map[string]any) map[string]any {
		return map[string]any{"runtime": "GO", "inputs": []string{name + "-in"}, "output": name + "-out",
			"processingGuarantees": "ATLEAST_ONCE", "userConfig": user}
	}

	// Refused package URLs: 400, nothing stored, nothing contacted.
	for _, u := range []string{"file:///etc/passwd", "file://" + outside, "file://" + filepath.Join(pkgDir, "escape"),
		"file://" + pkgDir + "/../" + filepath.Base(filepath.Dir(outside)) + "/pfgo", refused.URL + "/pkg/x", allowed.URL + "/other/x"} {
		code, body := fnUpload(t, p, http.MethodPost, "functions", "refused", cfg("refused", nil), "", u)
		if code != http.StatusBadRequest || !strings.Contains(body, "not allowed") {
			t.Errorf("url %s: %d %s", u, code, body)
		}
	}
	if code, _ := p.get(t, "/admin/v3/functions/public/default/refused"); code != http.StatusNotFound {
		t.Errorf("a refused upload was stored: GET answered %d", code)
	}
	if hits.Load() != 0 || allowedHits.Load() != 0 {
		t.Fatalf("refused URLs were contacted: %d, %d", hits.Load(), allowedHits.Load())
	}

	// Allowed: a file inside the functions directory, a matching http URL.
	if code, body := fnUpload(t, p, http.MethodPost, "functions", "pf", cfg("pf", map[string]any{"suffix": "?"}), "", "file://"+bin); code != http.StatusNoContent {
		t.Fatalf("create from file: %d %s", code, body)
	}
	if code, body := fnUpload(t, p, http.MethodPost, "functions", "pfhttp", cfg("pfhttp", map[string]any{"suffix": "#"}), "", allowed.URL+"/pkg/pfgo"); code != http.StatusNoContent || allowedHits.Load() != 1 {
		t.Fatalf("create from http: %d %s (%d downloads)", code, body, allowedHits.Load())
	}
	waitRunning(t, p, "functions", "pf", 1)
	waitRunning(t, p, "functions", "pfhttp", 1)

	c := p.client(t)
	out := subscribeOut(t, c, "persistent://public/default/pf-out")
	// Pulsar's SDK subscribes at the latest position: produce once it has
	// (on a loaded machine that comes well after the process started).
	waitConsumer(t, p.http+"/admin/v2/persistent/public/default/pf-in/stats", "", "public/default/pf")
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/pf-in"})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 20
	for i := range n {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("fail")}); err != nil {
		t.Fatal(err)
	}
	got := receiveUntil(t, out, 60*time.Second, func(s map[string]int) bool { return len(s) >= n })
	for i := range n {
		if got[fmt.Sprintf("m%02d?", i)] == 0 {
			t.Fatalf("output lacks m%02d?: %v", i, got)
		}
	}
	// Status and stats come from the instance's control service.
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := getStatus(t, p, "functions", "pf")
		st := s.Instances[0].Status
		if st.Running && st.NumReceived == n+1 && st.NumOK == n && st.NumUserExc == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed %d received, %d processed, 1 user exception: %+v", n+1, n, s)
		}
		time.Sleep(200 * time.Millisecond) // the worker polls the instance every second
	}
	if code, body := p.get(t, "/admin/v3/functions/public/default/pf/0/stats"); code != http.StatusOK || !strings.Contains(string(body), `"len":3`) {
		t.Errorf("instance stats (user metric len = 3): %d %s", code, body)
	}

	// The instance runs as nobody, with none of the worker's secrets.
	pids := instancePids(t, fnPackagePath(t, dir, bin))
	if len(pids) != 2 { // pf and pfhttp run the same package
		t.Fatalf("instance processes of %s: %v", bin, pids)
	}
	for _, pid := range pids {
		if uid := strings.Fields(procField(t, pid, "Uid")); len(uid) == 0 || uid[0] != nobody.Uid || uid[1] != nobody.Uid {
			t.Errorf("instance %d runs with uids %v, want nobody (%s)", pid, uid, nobody.Uid)
		}
		if g := procField(t, pid, "Groups"); g != "" {
			t.Errorf("instance %d keeps supplementary groups %q", pid, g)
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(env), "worker-secret") || strings.Contains(string(env), binEnv+"=") {
			t.Errorf("instance %d environment carries the worker's: %q", pid, env)
		}
	}

	// A function that crashes at start: restarts and its last error show.
	if code, body := fnUpload(t, p, http.MethodPost, "functions", "pfcrash", cfg("pfcrash", map[string]any{"crash": "boom-at-start"}), "", "file://"+bin); code != http.StatusNoContent {
		t.Fatalf("create crashing: %d %s", code, body)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		st := getStatus(t, p, "functions", "pfcrash").Instances[0].Status
		if st.NumRestarts >= 2 && strings.Contains(st.Error, "boom-at-start") {
			break
		}
		if st.Running && st.Error == "" && st.NumRestarts > 0 {
			t.Fatalf("a crash-looping instance shows running with no error: %+v", st)
		}
		if time.Now().After(deadline) {
			t.Fatalf("crash loop not in status: %+v", st)
		}
		time.Sleep(100 * time.Millisecond) // REST polling
	}
}
