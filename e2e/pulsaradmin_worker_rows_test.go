package e2e

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
	// A namespace of their own: the Functions rows put fn-pkg in e.ns.
	const pns = "tbl/pkgs"
	url := "function://" + pns + "/tbl-pkg@v1"
	content := []byte("package bytes\x00\x01")
	// big spans several ledger entries (1 MiB each) and ends mid-entry.
	big := make([]byte, 3<<20+12345)
	for i := range big {
		big[i] = byte(i*7 + i>>11)
	}
	bigURL := "function://" + pns + "/tbl-pkg@v2"
	props := map[string]string{"k": "v"}
	upload := func(t rowT, url string, b []byte, desc string) error {
		f := filepath.Join(t.TempDir(), "pkg")
		ok(t, os.WriteFile(f, b, 0o644))
		return pk.Upload(url, f, desc, "ops@example", props)
	}
	download := func(t rowT, url string) []byte {
		f := filepath.Join(t.TempDir(), "got")
		ok(t, pk.Download(url, f))
		b, err := os.ReadFile(f)
		ok(t, err)
		return b
	}
	return []adminRow{
		row("Packages", "Upload", func(t rowT) {
			ok(t, upload(t, url, content, "a package"))
			ok(t, upload(t, bigURL, big, "a big package"))
			// Versions are immutable: Pulsar answers 404 "already exists".
			wantStatus(t, upload(t, url, []byte("other"), "again"), http.StatusNotFound)
			same(t, "the first upload's bytes", download(t, url), content)
		}),
		row("Packages", "List", func(t rowT) {
			got, err := pk.List("function", pns)
			ok(t, err)
			same(t, "packages", got, []string{"tbl-pkg"})
			got, err = pk.List("sink", pns)
			ok(t, err)
			same(t, "sink packages", got, []string{})
			_, err = pk.List("jar", pns)
			wantStatus(t, err, http.StatusPreconditionFailed)
		}),
		row("Packages", "ListVersions", func(t rowT) {
			got, err := pk.ListVersions("function://" + pns + "/tbl-pkg")
			ok(t, err)
			same(t, "versions", got, []string{"v1", "v2"})
			_, err = pk.ListVersions("function://" + pns + "/no-such-pkg")
			wantStatus(t, err, http.StatusNotFound)
		}),
		row("Packages", "GetMetadata", func(t rowT) {
			got, err := pk.GetMetadata(url)
			ok(t, err)
			same(t, "description", got.Description, "a package")
			same(t, "contact", got.Contact, "ops@example")
			same(t, "properties", got.Properties, props)
			if got.CreateTime == 0 || got.ModificationTime != got.CreateTime {
				t.Errorf("times of a new package: created %d, modified %d", got.CreateTime, got.ModificationTime)
			}
			_, err = pk.GetMetadata("function://" + pns + "/tbl-pkg@v9")
			wantStatus(t, err, http.StatusNotFound)
		}),
		row("Packages", "UpdateMetadata", func(t rowT) {
			before, err := pk.GetMetadata(url)
			ok(t, err)
			ok(t, pk.UpdateMetadata(url, "changed", "dev@example", map[string]string{"k2": "v2"}))
			got, err := pk.GetMetadata(url)
			ok(t, err)
			same(t, "description", got.Description, "changed")
			same(t, "contact", got.Contact, "dev@example")
			same(t, "properties", got.Properties, map[string]string{"k2": "v2"})
			same(t, "create time", got.CreateTime, before.CreateTime)
			if got.ModificationTime < before.ModificationTime {
				t.Errorf("modification time went back: %d < %d", got.ModificationTime, before.ModificationTime)
			}
			wantStatus(t, pk.UpdateMetadata("function://"+pns+"/tbl-pkg@v9", "x", "", nil), http.StatusNotFound)
		}),
		row("Packages", "Download", func(t rowT) {
			same(t, "small package", download(t, url), content)
			if got := download(t, bigURL); !bytes.Equal(got, big) {
				t.Fatalf("downloaded %d bytes, uploaded %d (or they differ)", len(got), len(big))
			}
			err := pk.Download("function://"+pns+"/tbl-pkg@v9", filepath.Join(t.TempDir(), "none"))
			wantStatus(t, err, http.StatusNotFound)
		}),
		row("Packages", "Delete", func(t rowT) {
			ok(t, pk.Delete(url))
			_, err := pk.GetMetadata(url)
			wantStatus(t, err, http.StatusNotFound)
			got, err := pk.ListVersions("function://" + pns + "/tbl-pkg")
			ok(t, err)
			same(t, "versions left", got, []string{"v2"})
			wantStatus(t, pk.Delete(url), http.StatusNotFound)
			ok(t, pk.Delete(bigURL))
			names, err := pk.List("function", pns)
			ok(t, err)
			same(t, "packages left", names, []string{})
		}),
	}
}
