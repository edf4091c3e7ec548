package main

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// Rows of TestPulsarAdminTable for FunctionsWorker and Packages.

func functionsWorkerRows(e *adminEnv) []adminRow {
	fw := e.c.FunctionsWorker()
	fn := e.v3.Functions()
	const tenant, ns, name = "tbl", "ns", "wfn"
	instances := []string{"tbl/ns/wfn:0", "tbl/ns/wfn:1"}
	// deployed creates a function of two instances (once) and waits
	// until both run and one message was processed.
	var deployedOK bool
	deployed := func(t rowT) {
		if deployedOK {
			return
		}
		deployedOK = true
		cfg := &utils.FunctionConfig{Tenant: tenant, Namespace: ns, Name: name, Runtime: "GO", Parallelism: 2,
			Inputs: []string{"persistent://tbl/ns/wfn-in"}, Output: "persistent://tbl/ns/wfn-out", SubscriptionPosition: "Earliest",
			UserConfig: map[string]any{"mode": "exclaim", "suffix": "?"}}
		ok(t, fn.CreateFunc(cfg, e.fnBin))
		deadline := time.Now().Add(60 * time.Second)
		for {
			st, err := fn.GetFunctionStatus(tenant, ns, name)
			if err == nil && st.NumRunning == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("function never had 2 instances running: %+v %v", st, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// pulsaradmin v0.19.0 never reads the trigger's answer; the
		// stats rows check that the message was processed.
		_, err := fn.TriggerFunction(tenant, ns, name, "persistent://tbl/ns/wfn-in", "hey", "")
		ok(t, err)
	}
	port := func(t rowT) int {
		u, err := url.Parse(e.p.http)
		ok(t, err)
		n, err := strconv.Atoi(u.Port())
		ok(t, err)
		return n
	}
	return []adminRow{
		row("FunctionsWorker", "GetCluster", func(t rowT) {
			got, err := fw.GetCluster()
			ok(t, err)
			if len(got) != 1 || got[0].WorkerID == "" || got[0].WorkerHostname == "" || got[0].Port != port(t) {
				t.Fatalf("workers: %+v, want the standalone's on port %d", got, port(t))
			}
		}),
		row("FunctionsWorker", "GetClusterLeader", func(t rowT) {
			got, err := fw.GetClusterLeader()
			ok(t, err)
			all, err := fw.GetCluster()
			ok(t, err)
			if got == nil || len(all) != 1 || *got != *all[0] {
				t.Fatalf("leader %+v of %+v", got, all)
			}
		}),
		row("FunctionsWorker", "GetAssignments", func(t rowT) {
			deployed(t)
			got, err := fw.GetAssignments()
			ok(t, err)
			all, err := fw.GetCluster()
			ok(t, err)
			same(t, "assignments", got, map[string][]string{all[0].WorkerID: instances})
		}),
		row("FunctionsWorker", "GetFunctionsStats", func(t rowT) {
			deployed(t)
			var names []string
			var received, processed int64
			deadline := time.Now().Add(30 * time.Second)
			for {
				got, err := fw.GetFunctionsStats()
				ok(t, err)
				names, received, processed = nil, 0, 0
				for _, s := range got {
					names = append(names, s.Name)
					received += s.Metrics.ReceivedTotal
					processed += s.Metrics.ProcessedSuccessfullyTotal
				}
				if processed >= 1 || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			same(t, "instances", names, instances)
			if received != 1 || processed != 1 {
				t.Fatalf("received %d, processed %d over the instances; want the trigger's one", received, processed)
			}
		}),
		row("FunctionsWorker", "GetMetrics", func(t rowT) {
			deployed(t)
			got, err := fw.GetMetrics()
			ok(t, err)
			if len(got) != 1 || got[0].Dimensions["system"] != "go" {
				t.Fatalf("worker metrics %+v", got)
			}
			m := got[0].Metrics
			if n, _ := m["worker_instances"].(float64); n != 2 {
				t.Fatalf("worker_instances %v, want 2: %+v", m["worker_instances"], m)
			}
			if h, _ := m["go_heap_used"].(float64); h <= 0 {
				t.Fatalf("go_heap_used %v", m["go_heap_used"])
			}
			ok(t, fn.DeleteFunction(tenant, ns, name))
			// Deleted: nothing assigned, no instance stats.
			deadline := time.Now().Add(30 * time.Second)
			for {
				a, err := fw.GetAssignments()
				ok(t, err)
				st, err := fw.GetFunctionsStats()
				ok(t, err)
				if len(a) == 0 && len(st) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the delete: assignments %v, stats of %d instances", a, len(st))
				}
				time.Sleep(50 * time.Millisecond)
			}
		}),
	}
}

func packageRows(e *adminEnv) []adminRow {
	pk := e.v3.Packages()
	url := "function://" + e.ns + "/tbl-pkg@v1"
	content := []byte("package bytes\x00\x01")
	props := map[string]string{"k": "v"}
	return []adminRow{
		row("Packages", "Upload", func(t rowT) {
			f := filepath.Join(t.TempDir(), "pkg")
			ok(t, os.WriteFile(f, content, 0o644))
			ok(t, pk.Upload(url, f, "a package", "ops@example", props))
		}),
		row("Packages", "List", func(t rowT) {
			got, err := pk.List("function", e.ns)
			ok(t, err)
			same(t, "packages", got, []string{"function://" + e.ns + "/tbl-pkg"})
		}),
		row("Packages", "ListVersions", func(t rowT) {
			got, err := pk.ListVersions("function://" + e.ns + "/tbl-pkg")
			ok(t, err)
			same(t, "versions", got, []string{"v1"})
		}),
		row("Packages", "GetMetadata", func(t rowT) {
			got, err := pk.GetMetadata(url)
			ok(t, err)
			same(t, "description", got.Description, "a package")
			same(t, "contact", got.Contact, "ops@example")
			same(t, "properties", got.Properties, props)
			if got.CreateTime == 0 {
				t.Errorf("no create time")
			}
		}),
		row("Packages", "UpdateMetadata", func(t rowT) {
			ok(t, pk.UpdateMetadata(url, "changed", "dev@example", nil))
			got, err := pk.GetMetadata(url)
			ok(t, err)
			same(t, "description", got.Description, "changed")
		}),
		row("Packages", "Download", func(t rowT) {
			f := filepath.Join(t.TempDir(), "got")
			ok(t, pk.Download(url, f))
			b, err := os.ReadFile(f)
			ok(t, err)
			if !bytes.Equal(b, content) {
				t.Fatalf("downloaded %q, uploaded %q", b, content)
			}
		}),
		row("Packages", "Delete", func(t rowT) {
			ok(t, pk.Delete(url))
			_, err := pk.GetMetadata(url)
			wantStatus(t, err, http.StatusNotFound)
		}),
	}
}
