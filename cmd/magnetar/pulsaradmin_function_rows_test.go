package main

import (
	"bytes"
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
		r("UpdateFunctionWithURL", func(t rowT) {
			ok(t, fn.UpdateFunctionWithURL(cfg("?"), "function://tbl/ns/fn-pkg@v1", nil))
		}),
		r("DownloadFunctionByNs", func(t rowT) {
			dst := filepath.Join(t.TempDir(), "fn")
			ok(t, fn.DownloadFunctionByNs(dst, tenant, ns, name))
			got, err := os.ReadFile(dst)
			ok(t, err)
			want, err := os.ReadFile(bin)
			ok(t, err)
			if !bytes.Equal(got, want) {
				t.Fatalf("downloaded %d bytes, uploaded %d", len(got), len(want))
			}
		}),
		r("Upload", func(t rowT) {
			ok(t, fn.Upload(bin, "tbl/fn-upload"))
		}),
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
		}),
		r("CreateFuncWithURL", func(t rowT) {
			c := cfg("!")
			c.Name = "fn-url"
			ok(t, fn.CreateFuncWithURL(c, "function://tbl/ns/fn-pkg@v1"))
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
