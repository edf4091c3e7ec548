package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// Rows of TestPulsarAdminTable for Sources and Sinks: the builtin http
// source (a webhook on a loopback port) and the builtin log sink,
// created, listed, controlled per instance and in all, updated and
// deleted through pulsaradmin's /admin/v3 client; each row reads back
// what it changed.

// waitRunning polls status until n instances run.
func waitNRunning(t rowT, what string, status func() (int, error), n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := status()
		if err == nil && got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never had %d instances running: %d %v", what, n, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dropConnector puts a connector into the standalone's connectors
// directory: a descriptor naming kind (sourceClass or sinkClass) and
// the Functions rows' program as its executable.
func dropConnector(t rowT, e *adminEnv, name, kind string) {
	t.Helper()
	dir := filepath.Join(e.connDir, name)
	ok(t, os.MkdirAll(dir, 0o755))
	exe, err := os.ReadFile(e.fnBin)
	ok(t, err)
	ok(t, os.WriteFile(filepath.Join(dir, "prog"), exe, 0o755))
	desc := fmt.Sprintf("name: %s\ndescription: %s connector\n%s: org.example.Dropped\nexecutable: prog\n", name, name, kind)
	ok(t, os.WriteFile(filepath.Join(dir, "pulsar-io.yaml"), []byte(desc), 0o644))
}

func sourceRows(e *adminEnv) []adminRow {
	src := e.v3.Sources()
	const tenant, ns, name = "tbl", "ns", "src"
	cfg := func(topic string) *utils.SourceConfig {
		return &utils.SourceConfig{Tenant: tenant, Namespace: ns, Name: name, TopicName: topic, Archive: "builtin://http", Parallelism: 1}
	}
	running := func(t rowT, name string, n int) {
		t.Helper()
		waitNRunning(t, "source "+name, func() (int, error) {
			st, err := src.GetSourceStatus(tenant, ns, name)
			return st.NumRunning, err
		}, n)
	}
	r := func(m string, run func(t rowT)) adminRow { return row("Sources", m, run) }
	return []adminRow{
		r("CreateSource", func(t rowT) {
			ok(t, src.CreateSource(cfg("persistent://tbl/ns/src-out"), "builtin://http"))
			running(t, name, 1)
		}),
		r("ListSources", func(t rowT) {
			got, err := src.ListSources(tenant, ns)
			ok(t, err)
			same(t, "sources", got, []string{name})
		}),
		r("GetSource", func(t rowT) {
			got, err := src.GetSource(tenant, ns, name)
			ok(t, err)
			same(t, "topic", got.TopicName, "persistent://tbl/ns/src-out")
			same(t, "archive", got.Archive, "builtin://http")
			_, err = src.GetSource(tenant, ns, "no-such-source")
			wantStatus(t, err, http.StatusNotFound)
		}),
		r("GetSourceStatus", func(t rowT) {
			st, err := src.GetSourceStatus(tenant, ns, name)
			ok(t, err)
			same(t, "instances", st.NumInstances, 1)
			if len(st.Instances) != 1 || !st.Instances[0].Status.Running {
				t.Fatalf("status: %+v", st)
			}
		}),
		r("GetSourceStatusWithID", func(t rowT) {
			st, err := src.GetSourceStatusWithID(tenant, ns, name, 0)
			ok(t, err)
			same(t, "instance 0 running", st.Running, true)
		}),
		r("StopSource", func(t rowT) {
			ok(t, src.StopSource(tenant, ns, name))
			running(t, name, 0)
		}),
		r("StartSource", func(t rowT) {
			ok(t, src.StartSource(tenant, ns, name))
			running(t, name, 1)
		}),
		r("StopSourceWithID", func(t rowT) {
			ok(t, src.StopSourceWithID(tenant, ns, name, 0))
			running(t, name, 0)
		}),
		r("StartSourceWithID", func(t rowT) {
			ok(t, src.StartSourceWithID(tenant, ns, name, 0))
			running(t, name, 1)
		}),
		// Status does not count requested restarts (numRestarts counts
		// crashes, as in Pulsar): the row checks that the instance runs
		// again after the call (eventually: the restart is asynchronous).
		r("RestartSource", func(t rowT) {
			ok(t, src.RestartSource(tenant, ns, name))
			// The restart is asynchronous: poll instance 0 until it
			// runs again.
			waitNRunning(t, "instance 0", func() (int, error) {
				st, err := src.GetSourceStatusWithID(tenant, ns, name, 0)
				if err != nil || !st.Running {
					return 0, err
				}
				return 1, nil
			}, 1)
			running(t, name, 1)
		}),
		// Status does not count requested restarts (numRestarts counts
		// crashes, as in Pulsar): the row checks that the instance runs
		// again after the call (eventually: the restart is asynchronous).
		r("RestartSourceWithID", func(t rowT) {
			ok(t, src.RestartSourceWithID(tenant, ns, name, 0))
			// The restart is asynchronous: poll instance 0 until it
			// runs again.
			waitNRunning(t, "instance 0", func() (int, error) {
				st, err := src.GetSourceStatusWithID(tenant, ns, name, 0)
				if err != nil || !st.Running {
					return 0, err
				}
				return 1, nil
			}, 1)
			running(t, name, 1)
		}),
		r("UpdateSource", func(t rowT) {
			ok(t, src.UpdateSource(cfg("persistent://tbl/ns/src-out2"), "", nil))
			got, err := src.GetSource(tenant, ns, name)
			ok(t, err)
			same(t, "updated topic", got.TopicName, "persistent://tbl/ns/src-out2")
			running(t, name, 1)
		}),
		r("UpdateSourceWithURL", func(t rowT) {
			ok(t, src.UpdateSourceWithURL(cfg("persistent://tbl/ns/src-out3"), "builtin://http", nil))
			got, err := src.GetSource(tenant, ns, name)
			ok(t, err)
			same(t, "updated topic", got.TopicName, "persistent://tbl/ns/src-out3")
			err = src.UpdateSourceWithURL(cfg("persistent://tbl/ns/src-out3"), "file:///etc/passwd", nil)
			wantStatus(t, err, http.StatusBadRequest)
			running(t, name, 1)
		}),
		r("CreateSourceWithURL", func(t rowT) {
			c := cfg("persistent://tbl/ns/src-url-out")
			c.Name = "src-url"
			bad := *c
			wantStatus(t, src.CreateSourceWithURL(&bad, "file:///etc/passwd"), http.StatusBadRequest)
			ok(t, src.CreateSourceWithURL(c, "builtin://http"))
			running(t, "src-url", 1)
			ok(t, src.DeleteSource(tenant, ns, "src-url"))
		}),
		r("GetBuiltInSources", func(t rowT) {
			got, err := src.GetBuiltInSources()
			ok(t, err)
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			if !slices.Contains(names, "http") || !slices.Contains(names, "file") || slices.Contains(names, "log") {
				t.Fatalf("builtin sources: %v", names)
			}
		}),
		r("ReloadBuiltInSources", func(t rowT) {
			names := func() []string {
				got, err := src.GetBuiltInSources()
				ok(t, err)
				var out []string
				for _, c := range got {
					out = append(out, c.Name+": "+c.Description)
				}
				return out
			}
			dropConnector(t, e, "dropped-src", "sourceClass")
			if n := names(); slices.Contains(n, "dropped-src: dropped-src connector") {
				t.Fatalf("a dropped connector is listed before the reload: %v", n)
			}
			ok(t, src.ReloadBuiltInSources())
			if n := names(); !slices.Contains(n, "dropped-src: dropped-src connector") || !slices.ContainsFunc(n, func(s string) bool { return strings.HasPrefix(s, "http: ") }) {
				t.Fatalf("builtin sources after the reload: %v", n)
			}
			// The tenant names the connector, never a path; a source
			// of it stores the connector's executable as its package.
			c := cfg("persistent://tbl/ns/src-dir-out")
			c.Name = "src-dir"
			wantStatus(t, src.CreateSourceWithURL(c, "builtin://../dropped-src"), http.StatusBadRequest)
			ok(t, src.CreateSourceWithURL(c, "builtin://dropped-src"))
			ok(t, src.DeleteSource(tenant, ns, "src-dir"))
		}),
		r("DeleteSource", func(t rowT) {
			ok(t, src.DeleteSource(tenant, ns, name))
			got, err := src.ListSources(tenant, ns)
			ok(t, err)
			same(t, "sources after delete", got, []string{})
		}),
	}
}

func sinkRows(e *adminEnv) []adminRow {
	snk := e.v3.Sinks()
	const tenant, ns, name = "tbl", "ns", "snk"
	cfg := func(inputs ...string) *utils.SinkConfig {
		return &utils.SinkConfig{Tenant: tenant, Namespace: ns, Name: name, Inputs: inputs, Archive: "builtin://log", Parallelism: 1}
	}
	running := func(t rowT, name string, n int) {
		t.Helper()
		waitNRunning(t, "sink "+name, func() (int, error) {
			st, err := snk.GetSinkStatus(tenant, ns, name)
			return st.NumRunning, err
		}, n)
	}
	r := func(m string, run func(t rowT)) adminRow { return row("Sinks", m, run) }
	return []adminRow{
		r("CreateSink", func(t rowT) {
			ok(t, snk.CreateSink(cfg("persistent://tbl/ns/snk-in"), "builtin://log"))
			running(t, name, 1)
		}),
		r("ListSinks", func(t rowT) {
			got, err := snk.ListSinks(tenant, ns)
			ok(t, err)
			same(t, "sinks", got, []string{name})
		}),
		r("GetSink", func(t rowT) {
			got, err := snk.GetSink(tenant, ns, name)
			ok(t, err)
			same(t, "inputs", got.Inputs, []string{"persistent://tbl/ns/snk-in"})
			same(t, "archive", got.Archive, "builtin://log")
			_, err = snk.GetSink(tenant, ns, "no-such-sink")
			wantStatus(t, err, http.StatusNotFound)
		}),
		r("GetSinkStatus", func(t rowT) {
			st, err := snk.GetSinkStatus(tenant, ns, name)
			ok(t, err)
			same(t, "instances", st.NumInstances, 1)
			if len(st.Instances) != 1 || !st.Instances[0].Status.Running {
				t.Fatalf("status: %+v", st)
			}
		}),
		r("GetSinkStatusWithID", func(t rowT) {
			st, err := snk.GetSinkStatusWithID(tenant, ns, name, 0)
			ok(t, err)
			same(t, "instance 0 running", st.Running, true)
		}),
		r("StopSink", func(t rowT) {
			ok(t, snk.StopSink(tenant, ns, name))
			running(t, name, 0)
		}),
		r("StartSink", func(t rowT) {
			ok(t, snk.StartSink(tenant, ns, name))
			running(t, name, 1)
		}),
		r("StopSinkWithID", func(t rowT) {
			ok(t, snk.StopSinkWithID(tenant, ns, name, 0))
			running(t, name, 0)
		}),
		r("StartSinkWithID", func(t rowT) {
			ok(t, snk.StartSinkWithID(tenant, ns, name, 0))
			running(t, name, 1)
		}),
		// Status does not count requested restarts (numRestarts counts
		// crashes, as in Pulsar): the row checks that the instance runs
		// again after the call (eventually: the restart is asynchronous).
		r("RestartSink", func(t rowT) {
			ok(t, snk.RestartSink(tenant, ns, name))
			// The restart is asynchronous: poll instance 0 until it
			// runs again.
			waitNRunning(t, "instance 0", func() (int, error) {
				st, err := snk.GetSinkStatusWithID(tenant, ns, name, 0)
				if err != nil || !st.Running {
					return 0, err
				}
				return 1, nil
			}, 1)
			running(t, name, 1)
		}),
		// Status does not count requested restarts (numRestarts counts
		// crashes, as in Pulsar): the row checks that the instance runs
		// again after the call (eventually: the restart is asynchronous).
		r("RestartSinkWithID", func(t rowT) {
			ok(t, snk.RestartSinkWithID(tenant, ns, name, 0))
			// The restart is asynchronous: poll instance 0 until it
			// runs again.
			waitNRunning(t, "instance 0", func() (int, error) {
				st, err := snk.GetSinkStatusWithID(tenant, ns, name, 0)
				if err != nil || !st.Running {
					return 0, err
				}
				return 1, nil
			}, 1)
			running(t, name, 1)
		}),
		r("UpdateSink", func(t rowT) {
			ok(t, snk.UpdateSink(cfg("persistent://tbl/ns/snk-in", "persistent://tbl/ns/snk-in2"), "", nil))
			got, err := snk.GetSink(tenant, ns, name)
			ok(t, err)
			same(t, "updated inputs", got.Inputs, []string{"persistent://tbl/ns/snk-in", "persistent://tbl/ns/snk-in2"})
			running(t, name, 1)
		}),
		r("UpdateSinkWithURL", func(t rowT) {
			ok(t, snk.UpdateSinkWithURL(cfg("persistent://tbl/ns/snk-in3"), "builtin://log", nil))
			got, err := snk.GetSink(tenant, ns, name)
			ok(t, err)
			same(t, "updated inputs", got.Inputs, []string{"persistent://tbl/ns/snk-in3"})
			err = snk.UpdateSinkWithURL(cfg("persistent://tbl/ns/snk-in3"), "http://example.com/x.nar", nil)
			wantStatus(t, err, http.StatusBadRequest)
			running(t, name, 1)
		}),
		r("CreateSinkWithURL", func(t rowT) {
			c := cfg("persistent://tbl/ns/snk-url-in")
			c.Name = "snk-url"
			bad := *c
			wantStatus(t, snk.CreateSinkWithURL(&bad, "file:///etc/passwd"), http.StatusBadRequest)
			ok(t, snk.CreateSinkWithURL(c, "builtin://log"))
			running(t, "snk-url", 1)
			ok(t, snk.DeleteSink(tenant, ns, "snk-url"))
		}),
		r("GetBuiltInSinks", func(t rowT) {
			got, err := snk.GetBuiltInSinks()
			ok(t, err)
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			if !slices.Contains(names, "log") || !slices.Contains(names, "file") || slices.Contains(names, "http") {
				t.Fatalf("builtin sinks: %v", names)
			}
		}),
		r("ReloadBuiltInSinks", func(t rowT) {
			names := func() []string {
				got, err := snk.GetBuiltInSinks()
				ok(t, err)
				var out []string
				for _, c := range got {
					out = append(out, c.Name)
				}
				return out
			}
			dropConnector(t, e, "dropped-sink", "sinkClass")
			if n := names(); slices.Contains(n, "dropped-sink") {
				t.Fatalf("a dropped connector is listed before the reload: %v", n)
			}
			ok(t, snk.ReloadBuiltInSinks())
			n := names()
			if !slices.Contains(n, "dropped-sink") || !slices.Contains(n, "log") || slices.Contains(n, "dropped-src") {
				t.Fatalf("builtin sinks after the reload: %v", n)
			}
			// A source connector is no sink.
			c := cfg("persistent://tbl/ns/snk-in")
			c.Name = "snk-dir"
			wantStatus(t, snk.CreateSinkWithURL(c, "builtin://dropped-src"), http.StatusBadRequest)
		}),
		r("DeleteSink", func(t rowT) {
			ok(t, snk.DeleteSink(tenant, ns, name))
			got, err := snk.ListSinks(tenant, ns)
			ok(t, err)
			same(t, "sinks after delete", got, []string{})
		}),
	}
}
