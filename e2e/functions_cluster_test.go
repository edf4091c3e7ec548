package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFunctionsClusterWorkers runs two `magnetar functions-worker`
// processes sharing a ZooKeeper metadata store: a function created on one
// runs its instances on both, and when the worker holding instance 0 is
// killed its instances move to the survivor, which then processes input.
func TestFunctionsClusterWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := buildFnProg(t, "1")
	c := newTestCluster(t)
	c.startBookie(t.TempDir())
	b := c.startBroker("--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1")
	dirs := map[string]string{}
	t.Cleanup(func() {
		if t.Failed() {
			for name, d := range dirs {
				logs, _ := filepath.Glob(filepath.Join(d, "logs", "*"))
				for _, l := range logs {
					b, _ := os.ReadFile(l)
					if len(b) > 2000 {
						b = b[len(b)-2000:]
					}
					t.Logf("worker %s instance log %s:\n%s", name, filepath.Base(l), b)
				}
			}
		}
	})
	worker := func(name string) *proc {
		dirs[name] = t.TempDir()
		instancesMayReach(t, dirs[name], 0o711)
		p, _ := startMagnetar(t, name, "magnetar functions-worker ready", "functions-worker", "--metadata-url", c.url,
			"--zk-session-timeout", "4s", "--http", "127.0.0.1:0", "--advertised-host", "127.0.0.1",
			"--worker-id", name, "--broker-service-url", b.service, "--data-dir", dirs[name])
		return p
	}
	workers := map[string]*proc{"wa": worker("wa"), "wb": worker("wb")}
	const n = 6
	cfg := fnConfig("spread", map[string]any{"parallelism": n})
	if code, body := fnUpload(t, workers["wa"], http.MethodPost, "functions", "spread", cfg, bin, ""); code != http.StatusNoContent {
		t.Fatalf("create: %d %s", code, body)
	}
	s := waitRunning(t, workers["wb"], "functions", "spread", n)
	victim := s.Instances[0].Status.WorkerID
	survivor := map[string]string{"wa": "wb", "wb": "wa"}[victim]
	if workers[victim] == nil {
		t.Fatalf("instance 0 on unknown worker %q: %+v", victim, s)
	}
	workers[victim].kill()
	p := workers[survivor]
	deadline := time.Now().Add(90 * time.Second)
	for {
		s := getStatus(t, p, "functions", "spread")
		all := s.NumRunning == n
		for _, in := range s.Instances {
			all = all && in.Status.WorkerID == survivor && in.Status.Running
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instances did not move to %s within 90s: %+v", survivor, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cl := b.client(t)
	out := subscribeOut(t, cl, "persistent://public/default/spread-out")
	produceAll(t, cl, "persistent://public/default/spread-in", []string{"after-failover"})
	receiveUntil(t, out, 60*time.Second, func(s map[string]int) bool { return s["after-failover!"] == 1 })
}
