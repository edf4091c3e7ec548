package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pidsOf returns the pids of instances of function name running exe.
func pidsOf(t testing.TB, exe, name string) []int {
	var out []int
	for _, pid := range instancePids(t, exe) {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err == nil && strings.Contains(string(env), `"name":"`+name+`"`) {
			out = append(out, pid)
		}
	}
	return out
}

// TestFunctionsE2EKillInstance SIGKILLs an instance mid-stream: the worker
// restarts it; under ATLEAST_ONCE every input has an output, under
// EFFECTIVELY_ONCE (namespace deduplication on) every input has exactly
// one.
func TestFunctionsE2EKillInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := buildFnProg(t, "1")
	dir := t.TempDir()
	p := startStandalone(t, dir)
	if code, b := fnHTTP(t, http.MethodPost, p.http+"/admin/v2/namespaces/public/default/deduplication", "application/json", []byte("true")); code/100 != 2 {
		t.Fatalf("enable dedup: %d %s", code, b)
	}
	c := p.client(t)
	exe := fnPackagePath(t, dir, bin)
	const n = 3000
	for _, g := range []string{"ATLEAST_ONCE", "EFFECTIVELY_ONCE"} {
		t.Run(g, func(t *testing.T) {
			name := "kill-" + strings.ToLower(strings.ReplaceAll(g, "_", ""))
			if code, b := fnUpload(t, p, http.MethodPost, "functions", name, fnConfig(name, map[string]any{"processingGuarantees": g}), bin, ""); code != http.StatusNoContent {
				t.Fatalf("create: %d %s", code, b)
			}
			waitRunning(t, p, "functions", name, 1)
			out := subscribeOut(t, c, "persistent://public/default/"+name+"-out")
			payloads := make([]string, n)
			for i := range payloads {
				payloads[i] = payload(i)
			}
			prodErr := make(chan error, 1)
			go func() { prodErr <- produceErr(c, "persistent://public/default/"+name+"-in", payloads) }()
			defer func() {
				if err := <-prodErr; err != nil {
					t.Errorf("produce: %v", err)
				}
			}()
			killed := false
			seen := receiveUntil(t, out, 120*time.Second, func(s map[string]int) bool {
				if !killed && len(s) >= n/5 {
					pids := pidsOf(t, exe, name)
					if len(pids) != 1 {
						t.Fatalf("want one instance process, found %v", pids)
					}
					syscall.Kill(pids[0], syscall.SIGKILL)
					killed = true
				}
				return len(s) == n
			})
			// A barrier: outputs are produced in input order (one
			// instance), so a duplicate of an earlier input would arrive
			// before the barrier's output.
			produceAll(t, c, "persistent://public/default/"+name+"-in", []string{"barrier"})
			after := receiveUntil(t, out, 60*time.Second, func(s map[string]int) bool { return s["barrier!"] > 0 })
			for k, v := range after {
				seen[k] += v
			}
			dups := 0
			for i := 0; i < n; i++ {
				switch k := seen[payload(i)+"!"]; {
				case k == 0:
					t.Fatalf("%s: output of input %d lost", g, i)
				case k > 1:
					dups++
				}
			}
			t.Logf("%s: %d inputs, %d duplicated outputs after kill -9", g, n, dups)
			if g == "EFFECTIVELY_ONCE" && dups > 0 {
				t.Fatalf("EFFECTIVELY_ONCE: %d outputs duplicated", dups)
			}
			s := getStatus(t, p, "functions", name)
			if s.Instances[0].Status.NumRestarts < 1 {
				t.Fatalf("status shows no restart: %+v", s)
			}
			if code, _ := fnHTTP(t, http.MethodDelete, p.http+"/admin/v3/functions/public/default/"+name, "", nil); code != http.StatusNoContent {
				t.Fatalf("delete: %d", code)
			}
		})
	}
	p.stop()
}

// TestFunctionsE2EParallelUpdateDeadLetter: parallelism 3 spreads the
// input over three instance processes; stop/start of one instance; an
// update replaces code and config in place; a failing function sends its
// failures to the dead-letter topic after the retries.
func TestFunctionsE2EParallelUpdateDeadLetter(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin1, bin2 := buildFnProg(t, "1"), buildFnProg(t, "2")
	dir := t.TempDir()
	p := startStandalone(t, dir)
	c := p.client(t)

	name := "par"
	cfg := fnConfig(name, map[string]any{"parallelism": 3, "userConfig": map[string]any{"tagInstance": true, "sleepMs": 2}})
	if code, b := fnUpload(t, p, http.MethodPost, "functions", name, cfg, bin1, ""); code != http.StatusNoContent {
		t.Fatalf("create: %d %s", code, b)
	}
	waitRunning(t, p, "functions", name, 3)
	if pids := pidsOf(t, fnPackagePath(t, dir, bin1), name); len(pids) != 3 {
		t.Fatalf("want 3 instance processes, got %v", pids)
	}
	tags := subscribeOut(t, c, "persistent://public/default/par-out-instances")
	out := subscribeOut(t, c, "persistent://public/default/par-out")
	const n = 600
	payloads := make([]string, n)
	for i := range payloads {
		payloads[i] = payload(i)
	}
	produceAll(t, c, "persistent://public/default/par-in", payloads)
	receiveUntil(t, out, 60*time.Second, func(s map[string]int) bool { return len(s) == n })
	per := map[string]int{}
	total := 0
	receiveUntil(t, tags, 60*time.Second, func(s map[string]int) bool {
		total = 0
		for k, v := range s {
			per[k] = v
			total += v
		}
		return total >= n
	})
	if len(per) != 3 {
		_, st := p.get(t, "/admin/v2/persistent/public/default/par-in/stats")
		t.Fatalf("input not spread over 3 instances: %v; input stats %s", per, st)
	}
	t.Logf("parallelism 3: messages per instance %v", per)

	// Stop instance 1 only, then start it again.
	if code, b := fnHTTP(t, http.MethodPost, p.http+"/admin/v3/functions/public/default/par/1/stop", "", nil); code != http.StatusNoContent {
		t.Fatalf("stop 1: %d %s", code, b)
	}
	waitRunning(t, p, "functions", name, 2)
	if code, _ := fnHTTP(t, http.MethodPost, p.http+"/admin/v3/functions/public/default/par/1/start", "", nil); code != http.StatusNoContent {
		t.Fatal("start 1")
	}
	waitRunning(t, p, "functions", name, 3)

	// Update code (version 2) and config (suffix, parallelism 1) in place.
	upd := map[string]any{"parallelism": 1, "userConfig": map[string]any{"suffix": "?"}}
	if code, b := fnUpload(t, p, http.MethodPut, "functions", name, upd, bin2, ""); code != http.StatusNoContent {
		t.Fatalf("update: %d %s", code, b)
	}
	waitRunning(t, p, "functions", name, 1)
	deadline := time.Now().Add(30 * time.Second)
	for len(pidsOf(t, fnPackagePath(t, dir, bin1), name)) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("old version still running 30s after update")
		}
		time.Sleep(100 * time.Millisecond)
	}
	produceAll(t, c, "persistent://public/default/par-in", []string{"after-update"})
	receiveUntil(t, out, 60*time.Second, func(s map[string]int) bool { return s["v2:after-update?"] == 1 })

	// Dead-letter topic after the retries.
	dl := "fail"
	dcfg := fnConfig(dl, map[string]any{"userConfig": map[string]any{"mode": "fail"}, "maxMessageRetries": 2,
		"deadLetterTopic": "persistent://public/default/fail-dlq"})
	if code, b := fnUpload(t, p, http.MethodPost, "functions", dl, dcfg, bin1, ""); code != http.StatusNoContent {
		t.Fatalf("create: %d %s", code, b)
	}
	waitRunning(t, p, "functions", dl, 1)
	dlq := subscribeOut(t, c, "persistent://public/default/fail-dlq")
	fout := subscribeOut(t, c, "persistent://public/default/fail-out")
	produceAll(t, c, "persistent://public/default/fail-in", []string{"good-1", "bad-1", "good-2"})
	receiveUntil(t, fout, 60*time.Second, func(s map[string]int) bool { return s["good-1"] == 1 && s["good-2"] == 1 })
	got := receiveUntil(t, dlq, 60*time.Second, func(s map[string]int) bool { return s["bad-1"] == 1 })
	if len(got) != 1 {
		t.Fatalf("dead-letter topic got %v", got)
	}
	// The instance reports its counters to the worker periodically: poll
	// the status until they arrive.
	deadline = time.Now().Add(30 * time.Second)
	for {
		s := getStatus(t, p, "functions", dl)
		if len(s.Instances) == 1 && s.Instances[0].Status.NumUserExc >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want the failure retried (>= 2 user exceptions), status %+v", s)
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.stop()
}
