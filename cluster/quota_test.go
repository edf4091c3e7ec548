package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/internal/zktest"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

// TestQuotasStore: Pulsar's initial default until one is set; a
// bundle's own quota at Pulsar's path, else the default; reset goes back
// to the default; bad values are refused.
func TestQuotasStore(t *testing.T) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "metadata.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := NewQuotas(st)
	ctx := context.Background()
	full, _ := bundle.ParseRange("0x00000000_0xffffffff")
	if got, err := q.DefaultQuota(ctx); err != nil || got != InitialQuota {
		t.Fatalf("default before any set: %+v %v", got, err)
	}
	def := ResourceQuota{MsgRateIn: 1, MsgRateOut: 2, BandwidthIn: 3, BandwidthOut: 4, Memory: 5}
	if err := q.SetDefaultQuota(ctx, def); err != nil {
		t.Fatal(err)
	}
	own := ResourceQuota{MsgRateIn: 10, MsgRateOut: 20, Dynamic: true}
	if err := q.SetBundleQuota(ctx, "t/ns", full, own); err != nil {
		t.Fatal(err)
	}
	data, _, err := st.Get(ctx, "/loadbalance/resource-quota/namespace/t/ns/0x00000000_0xffffffff")
	if err != nil {
		t.Fatalf("bundle quota not at Pulsar's path: %v", err)
	}
	var stored ResourceQuota
	if err := json.Unmarshal(data, &stored); err != nil || stored != own {
		t.Fatalf("stored %s: %+v %v", data, stored, err)
	}
	if got, _ := q.BundleQuota(ctx, "t/ns", full); got != own {
		t.Fatalf("bundle quota %+v, want %+v", got, own)
	}
	if got, _ := q.BundleQuota(ctx, "t/other", full); got != def {
		t.Fatalf("quota of a bundle without one %+v, want the default %+v", got, def)
	}
	if err := q.ResetBundleQuota(ctx, "t/ns", full); err != nil {
		t.Fatal(err)
	}
	if got, _ := q.BundleQuota(ctx, "t/ns", full); got != def {
		t.Fatalf("after reset %+v, want the default", got)
	}
	if err := q.ResetBundleQuota(ctx, "t/ns", full); err != nil {
		t.Fatalf("second reset: %v", err)
	}
	if err := q.SetDefaultQuota(ctx, ResourceQuota{Memory: -1}); err == nil {
		t.Fatal("negative memory accepted")
	}
}

// TestQuotaWeighsPlacement: a bundle placed on a broker with a large
// resource quota of its own makes the leader place the next bundles on
// the other broker (without the quota, placements alternate on ties).
func TestQuotaWeighsPlacement(t *testing.T) {
	srv := zktest.StartServer(t)
	a, b := startNode(t, srv, 1), startNode(t, srv, 2)
	waitFor(t, "a leader", func() bool { return a.svc.IsLeader() != b.svc.IsLeader() })
	waitFor(t, "both reporting", func() bool {
		ids, _ := a.svc.Brokers(context.Background())
		if len(ids) != 2 {
			return false
		}
		for _, id := range ids {
			if _, err := a.svc.report(context.Background(), id); err != nil {
				return false
			}
		}
		return true
	})
	leader := a
	if b.svc.IsLeader() {
		leader = b
	}
	ctx := context.Background()
	full, _ := bundle.ParseRange("0x00000000_0xffffffff")
	if err := leader.svc.quotas.SetBundleQuota(ctx, "t/heavy", full, ResourceQuota{MsgRateIn: 5000, MsgRateOut: 5000}); err != nil {
		t.Fatal(err)
	}
	heavy, err := leader.svc.place(ctx, BundleKey("t/heavy", full))
	if err != nil {
		t.Fatal(err)
	}
	for k := range 6 {
		got, err := leader.svc.place(ctx, BundleKey(fmt.Sprintf("t/light%d", k), full))
		if err != nil {
			t.Fatal(err)
		}
		if got == heavy {
			t.Fatalf("bundle %d placed beside the bundle with a 10000 msg/s quota (%s)", k, heavy)
		}
	}
}
