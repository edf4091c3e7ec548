package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
)

// Rows of TestPulsarAdminTable for FunctionsWorker and Packages.

func functionsWorkerRows(e *adminEnv) []adminRow {
	fw := e.c.FunctionsWorker()
	return []adminRow{
		row("FunctionsWorker", "GetCluster", func(t rowT) {
			got, err := fw.GetCluster()
			ok(t, err)
			if len(got) != 1 || got[0].WorkerID == "" || got[0].Port == 0 {
				t.Fatalf("workers: %+v", got)
			}
		}),
		row("FunctionsWorker", "GetClusterLeader", func(t rowT) {
			got, err := fw.GetClusterLeader()
			ok(t, err)
			all, err := fw.GetCluster()
			ok(t, err)
			if got == nil || len(all) != 1 || got.WorkerID != all[0].WorkerID {
				t.Fatalf("leader %+v of %+v", got, all)
			}
		}),
		row("FunctionsWorker", "GetAssignments", func(t rowT) {
			got, err := fw.GetAssignments()
			ok(t, err)
			if got == nil {
				t.Fatal("no assignment map")
			}
		}),
		row("FunctionsWorker", "GetFunctionsStats", func(t rowT) {
			got, err := fw.GetFunctionsStats()
			ok(t, err)
			if got == nil {
				t.Fatal("no stats list")
			}
		}),
		row("FunctionsWorker", "GetMetrics", func(t rowT) {
			got, err := fw.GetMetrics()
			ok(t, err)
			if len(got) == 0 {
				t.Fatal("no worker metrics")
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
