package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// Rows of TestPulsarAdminTable for Functions: a Go function (testdata/
// fnprog in "exclaim" mode: input + userConfig "suffix") created,
// triggered, stopped, started, updated, downloaded and deleted through
// pulsaradmin's /admin/v3 client.

func functionRows(e *adminEnv) []adminRow {
	fn := e.v3.Functions()
	const tenant, ns, name = "tbl", "ns", "fn"
	in := "persistent://tbl/ns/fn-in"
	bin := e.fnBin
	cfg := func(suffix string) *utils.FunctionConfig {
		// Earliest: an instance that reports running before its
		// subscription exists still reads the trigger's message.
		return &utils.FunctionConfig{Tenant: tenant, Namespace: ns, Name: name, Runtime: "GO", Parallelism: 1,
			Inputs: []string{in}, Output: "persistent://tbl/ns/fn-out", SubscriptionPosition: "Earliest",
			UserConfig: map[string]any{"mode": "exclaim", "suffix": suffix}}
	}
	r := func(m string, run func(t rowT)) adminRow { return row("Functions", m, run) }
	// running waits until the function's status shows n instances
	// running.
	running := func(t rowT, n int) utils.FunctionStatus {
		deadline := time.Now().Add(60 * time.Second)
		for {
			st, err := fn.GetFunctionStatus(tenant, ns, name)
			if err == nil && st.NumRunning == n {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("function never had %d instances running: %+v %v", n, st, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// processed waits until the function's stats count n messages
	// processed.
	processed := func(t rowT, n int64) utils.FunctionStats {
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := fn.GetFunctionStats(tenant, ns, name)
			ok(t, err)
			if st.ProcessedSuccessfullyTotal >= n {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("stats never counted %d processed: %+v", n, st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return []adminRow{
		r("CreateFunc", func(t rowT) {
			ok(t, fn.CreateFunc(cfg("!"), bin))
			running(t, 1)
		}),
		r("GetFunctions", func(t rowT) {
			got, err := fn.GetFunctions(tenant, ns)
			ok(t, err)
			same(t, "functions", got, []string{name})
		}),
		r("GetFunction", func(t rowT) {
			got, err := fn.GetFunction(tenant, ns, name)
			ok(t, err)
			same(t, "inputs", got.Inputs, []string{in})
			same(t, "runtime", got.Runtime, "GO")
		}),
		r("GetFunctionStatus", func(t rowT) {
			st := running(t, 1)
			same(t, "instances", st.NumInstances, 1)
		}),
		r("GetFunctionStatusWithInstanceID", func(t rowT) {
			st, err := fn.GetFunctionStatusWithInstanceID(tenant, ns, name, 0)
			ok(t, err)
			same(t, "instance 0 running", st.Running, true)
		}),
		// pulsaradmin v0.19.0 never reads the trigger's answer (it
		// returns ""), so the row checks that the message was processed.
		r("TriggerFunction", func(t rowT) {
			_, err := fn.TriggerFunction(tenant, ns, name, in, "hi", "")
			ok(t, err)
			processed(t, 1)
		}),
		r("GetFunctionStats", func(t rowT) {
			st := processed(t, 1)
			same(t, "received", st.ReceivedTotal, int64(1))
		}),
		r("GetFunctionStatsWithInstanceID", func(t rowT) {
			st, err := fn.GetFunctionStatsWithInstanceID(tenant, ns, name, 0)
			ok(t, err)
			if st.ReceivedTotal < 1 {
				t.Fatalf("instance stats after a trigger: %+v", st)
			}
		}),
		r("PutFunctionState", func(t rowT) {
			ok(t, fn.PutFunctionState(tenant, ns, name, utils.FunctionState{Key: "k", StringValue: "v"}))
		}),
		r("GetFunctionState", func(t rowT) {
			got, err := fn.GetFunctionState(tenant, ns, name, "k")
			ok(t, err)
			same(t, "state value", got.StringValue, "v")
		}),
		r("StopFunction", func(t rowT) {
			ok(t, fn.StopFunction(tenant, ns, name))
			running(t, 0)
		}),
		r("StartFunction", func(t rowT) {
			ok(t, fn.StartFunction(tenant, ns, name))
			running(t, 1)
		}),
		r("StopFunctionWithID", func(t rowT) {
			ok(t, fn.StopFunctionWithID(tenant, ns, name, 0))
			running(t, 0)
		}),
		r("StartFunctionWithID", func(t rowT) {
			ok(t, fn.StartFunctionWithID(tenant, ns, name, 0))
			running(t, 1)
		}),
		r("RestartFunction", func(t rowT) {
			ok(t, fn.RestartFunction(tenant, ns, name))
			running(t, 1)
		}),
		r("RestartFunctionWithID", func(t rowT) {
			ok(t, fn.RestartFunctionWithID(tenant, ns, name, 0))
			running(t, 1)
		}),
		r("UpdateFunction", func(t rowT) {
			ok(t, fn.UpdateFunction(cfg("?"), "", nil))
			got, err := fn.GetFunction(tenant, ns, name)
			ok(t, err)
			same(t, "updated suffix", got.UserConfig["suffix"], "?")
			running(t, 1)
		}),
		// The function moves to a package of package management: its
		// download answers the package's bytes (the executable with a
		// trailer, which the loader ignores), and it runs.
		r("UpdateFunctionWithURL", func(t rowT) {
			pkgBytes := fnPackage(t, e, bin)
			err := fn.UpdateFunctionWithURL(cfg("+"), "function://tbl/ns/no-such-pkg@v1", nil)
			wantStatus(t, err, http.StatusBadRequest)
			ok(t, fn.UpdateFunctionWithURL(cfg("+"), fnPkgURL, nil))
			got, err := fn.GetFunction(tenant, ns, name)
			ok(t, err)
			same(t, "updated suffix", got.UserConfig["suffix"], "+")
			running(t, 1)
			dst := filepath.Join(t.TempDir(), "fn")
			ok(t, fn.DownloadFunctionByNs(dst, tenant, ns, name))
			dl, err := os.ReadFile(dst)
			ok(t, err)
			if !bytes.Equal(dl, pkgBytes) {
				t.Fatalf("after the update the function's package is %d bytes, the package %d", len(dl), len(pkgBytes))
			}
		}),
		r("DownloadFunctionByNs", func(t rowT) {
			dst := filepath.Join(t.TempDir(), "fn")
			ok(t, fn.DownloadFunctionByNs(dst, tenant, ns, name))
			got, err := os.ReadFile(dst)
			ok(t, err)
			if want := fnPackage(t, e, bin); !bytes.Equal(got, want) {
				t.Fatalf("downloaded %d bytes, the function's package has %d", len(got), len(want))
			}
			err = fn.DownloadFunctionByNs(filepath.Join(t.TempDir(), "none"), tenant, ns, "no-such-fn")
			wantStatus(t, err, http.StatusNotFound)
		}),
		r("Upload", func(t rowT) {
			ok(t, fn.Upload(bin, "tbl/fn-upload"))
		}),
		// A path is a key of the worker's store, never a file name.
		r("DownloadFunction", func(t rowT) {
			dst := filepath.Join(t.TempDir(), "fn")
			ok(t, fn.DownloadFunction("tbl/fn-upload", dst))
			got, err := os.ReadFile(dst)
			ok(t, err)
			want, err := os.ReadFile(bin)
			ok(t, err)
			if !bytes.Equal(got, want) {
				t.Fatalf("downloaded %d bytes, uploaded %d", len(got), len(want))
			}
			for _, p := range []string{"tbl/never-uploaded", "/etc/passwd", "../../../../etc/passwd", bin} {
				err := fn.DownloadFunction(p, filepath.Join(t.TempDir(), "x"))
				wantStatus(t, err, http.StatusNotFound)
			}
		}),
		r("CreateFuncWithURL", func(t rowT) {
			fnPackage(t, e, bin)
			c := cfg("!")
			c.Name = "fn-url"
			bad := *c
			err := fn.CreateFuncWithURL(&bad, "sink://tbl/ns/fn-pkg@v1")
			wantStatus(t, err, http.StatusBadRequest)
			ok(t, fn.CreateFuncWithURL(c, fnPkgURL))
			deadline := time.Now().Add(60 * time.Second)
			for {
				st, err := fn.GetFunctionStatus(tenant, ns, "fn-url")
				if err == nil && st.NumRunning == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("fn-url never ran: %+v %v", st, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			ok(t, fn.DeleteFunction(tenant, ns, "fn-url"))
		}),
		r("DeleteFunction", func(t rowT) {
			ok(t, fn.DeleteFunction(tenant, ns, name))
			got, err := fn.GetFunctions(tenant, ns)
			ok(t, err)
			if slices.Contains(got, name) {
				t.Fatalf("deleted function listed: %v", got)
			}
		}),
	}
}

// fnPkgURL is the package the Functions rows deploy from.
const fnPkgURL = "function://tbl/ns/fn-pkg@v1"

// fnPackage uploads fnPkgURL (the executable bin with a trailer, so its
// bytes differ from bin's) unless it exists, and returns its bytes.
func fnPackage(t rowT, e *adminEnv, bin string) []byte {
	t.Helper()
	exe, err := os.ReadFile(bin)
	ok(t, err)
	content := append(exe, "\nmagnetar package trailer\n"...)
	pk := e.v3.Packages()
	if _, err := pk.GetMetadata(fnPkgURL); err == nil {
		return content
	}
	f := filepath.Join(t.TempDir(), "fn-pkg")
	ok(t, os.WriteFile(f, content, 0o755))
	ok(t, pk.Upload(fnPkgURL, f, "the table's function", "", nil))
	return content
}
