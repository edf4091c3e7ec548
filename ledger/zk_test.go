package ledger_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/zktest"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/zookeeper"
)

// TestZooKeeperCluster runs four registered bookies on a real ZooKeeper:
// placement from /ledgers/available, a bookie killed (server and session)
// while adds run, its registration gone, the writer's ensemble change,
// then a takeover by another client with recovery.
func TestZooKeeperCluster(t *testing.T) {
	addr := zktest.Start(t)
	url := "zk://" + addr + "/magnetar-ledger-test"
	open := func() metadata.Store {
		s, err := zookeeper.Open(url, zookeeper.Options{SessionTimeout: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := ctxT(t)
	type node struct {
		srv     *server.Server
		session metadata.Store
		reg     *server.Registration
	}
	var nodes []node
	for range 4 {
		b := memBookie(t)
		srv, err := server.New(b, server.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		session := open()
		reg, err := server.Register(ctx, session, srv.Addr(), b, server.RegisterOptions{CheckInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, node{srv, session, reg})
	}
	store := open()
	res := ledger.NewNetResolver(ledger.NetOptions{})
	t.Cleanup(func() { res.Close() })
	c, err := ledger.NewClient(store, res, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	avail, err := c.WritableBookies(ctx)
	if err != nil || len(avail) != 4 {
		t.Fatalf("WritableBookies = %v, %v; want 4", avail, err)
	}
	h, err := c.Create(ctx, e3)
	if err != nil {
		t.Fatal(err)
	}
	ens := h.Metadata().Ensembles[0].Bookies
	w := &asyncWriter{cond: make(chan struct{}, 1)}
	const n = 300
	for e := range int64(n) {
		w.add(h, e)
		if e == 150 {
			w.waitAcked(t, 100)
			i := slices.IndexFunc(nodes, func(x node) bool { return x.srv.Addr() == ens[2] })
			nodes[i].srv.Close()
			nodes[i].session.Close() // the bookie's process is gone
			if ok, _ := store.Exists(ctx, server.AvailablePath+"/"+ens[2]); ok {
				t.Fatal("registration of the dead bookie still there")
			}
		}
	}
	w.waitAcked(t, n)
	w.check(t, n)
	if last := h.Metadata().Last().Bookies; slices.Contains(last, ens[2]) {
		t.Fatalf("ensemble %v still holds the dead bookie %s", last, ens[2])
	}
	c2, err := ledger.NewClient(open(), res, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r, err := c2.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.LastAddConfirmed() != n-1 {
		t.Fatalf("recovered LAC %d, want %d", r.LastAddConfirmed(), n-1)
	}
	checkEntries(t, r, h.ID(), 0, n-1)
	if _, err := h.Add(ctx, []byte("late")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("writer add after takeover: %v, want ErrFenced", err)
	}
	m, _, _ := c2.Metadata(ctx, h.ID())
	if m.State != ledger.StateClosed || m.LastEntryID != n-1 {
		t.Fatalf("metadata %s at %d", m.State, m.LastEntryID)
	}
}
