package functions

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

// TestWorkerRoutes: the worker endpoints are superuser-only, as Pulsar's
// worker allows them, and answer the membership list in Pulsar's
// WorkerInfo shape, the leader being its first worker by id.
func TestWorkerRoutes(t *testing.T) {
	md, err := embedded.Open(filepath.Join(t.TempDir(), "md.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { md.Close() })
	var ws []*Worker
	for _, w := range []struct{ id, url string }{{"w-b", "http://b.example:8123"}, {"w-a", "https://a.example"}} {
		wk, err := NewWorker(Options{Metadata: md, ID: w.id, DataDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := wk.Start(context.Background(), "pulsar://127.0.0.1:1", w.url); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { wk.Close() })
		ws = append(ws, wk)
	}
	rt := httpapi.NewTable()
	ws[0].Register(rt)
	n := 0
	for _, r := range rt.Routes() {
		if strings.HasPrefix(r.Pattern, "/admin/v2/worker") {
			n++
			if r.Access != auth.AccessSuperUser {
				t.Errorf("%s %s: access %s, want superuser", r.Method, r.Pattern, r.Access)
			}
		}
	}
	if n != 5 {
		t.Fatalf("%d worker routes, want 5", n)
	}
	got, err := ws[0].clusterInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []workerInfoJSON{{"w-a", "a.example", 443}, {"w-b", "b.example", 8123}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("cluster %+v, want %+v", got, want)
	}
	a, err := ws[1].assignments(context.Background())
	if err != nil || len(a) != 0 {
		t.Fatalf("assignments with no functions: %v %v", a, err)
	}
}
