package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

func entryPayload(id, e int64) []byte { return fmt.Appendf(nil, "ledger %d entry %d", id, e) }

// writer adds entries to h with up to 32 in flight and records the acked
// ids in completion order.
type writer struct {
	h    *ledger.WriteHandle
	mu   sync.Mutex
	acks []int64
	err  error
	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func startWriter(h *ledger.WriteHandle) *writer {
	w := &writer{h: h, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *writer) run() {
	defer close(w.done)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	defer wg.Wait()
	for e := int64(0); ; e++ {
		select {
		case <-w.stop:
			return
		case sem <- struct{}{}:
		}
		w.mu.Lock()
		failed := w.err != nil
		w.mu.Unlock()
		if failed {
			return
		}
		wg.Add(1)
		w.h.AddAsync(entryPayload(w.h.ID(), e), func(id int64, err error) {
			defer wg.Done()
			<-sem
			w.mu.Lock()
			if err != nil && w.err == nil {
				w.err = fmt.Errorf("add %d: %w", e, err)
			}
			if err == nil {
				w.acks = append(w.acks, id)
			}
			w.mu.Unlock()
			select {
			case w.wake <- struct{}{}:
			default:
			}
		})
	}
}

// waitAcks waits until n entries are acked (fatal on a failed add or after
// 30 s).
func (w *writer) waitAcks(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		got, err := len(w.acks), w.err
		w.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		select {
		case <-w.wake:
		case <-deadline:
			t.Fatalf("only %d of %d adds acked after 30s", got, n)
		}
	}
}

func (w *writer) finish(t *testing.T) []int64 {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatal(w.err)
	}
	return w.acks
}

// SIGKILL one bookie of four while a writer adds at E=3, Qw=2, Qa=2:
// adds go on through an ensemble change, the acked ids are 0..n-1 in
// order, every acked entry reads back, and the broker process's
// autorecovery re-replicates the first segment so that every entry again
// has Qw intact copies on live bookies.
func TestClusterBookieKilledDuringAdds(t *testing.T) {
	c := newTestCluster(t)
	bookies := map[string]*bookieProc{}
	for range 4 {
		b := c.startBookie("")
		bookies[b.id] = b
	}
	c.startBroker() // runs the auditor and a replication worker
	n := c.clusterClient()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	h, err := n.lc.Create(ctx, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	w := startWriter(h)
	w.waitAcks(t, 300)
	victim := h.Metadata().Ensembles[0].Bookies[0]
	bookies[victim].kill()
	w.mu.Lock()
	atKill := len(w.acks)
	w.mu.Unlock()
	w.waitAcks(t, atKill+500)
	acks := w.finish(t)
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range acks {
		if id != int64(i) {
			t.Fatalf("ack %d has id %d: acks lost or reordered", i, id)
		}
	}
	last := int64(len(acks) - 1)
	m := h.Metadata()
	if len(m.Ensembles) < 2 || slices.Contains(m.Last().Bookies, victim) || m.LastEntryID != last {
		t.Fatalf("metadata after the kill: %+v (victim %s, last acked %d)", m, victim, last)
	}
	t.Logf("killed %s after %d acks; %d acked in all; ensembles %+v", victim, atKill, len(acks), m.Ensembles)

	// Re-replication: the victim leaves every segment, nothing stays marked.
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, _, err = n.lc.Metadata(ctx, h.ID())
		if err != nil {
			t.Fatal(err)
		}
		marks, err := autorecovery.UnderReplicated(ctx, n.store)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(m.Ensembles, func(s ledger.Segment) bool { return slices.Contains(s.Bookies, victim) }) && len(marks) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not re-replicated after 30s: ensembles %+v, marks %v", m.Ensembles, marks)
		}
		time.Sleep(50 * time.Millisecond) // polling the metadata store
	}
	checkReplicas(t, n, h.ID(), &m, last)
	r, err := n.lc.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Read(ctx, 0, last)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got {
		if string(p) != string(entryPayload(h.ID(), int64(i))) {
			t.Fatalf("entry %d = %q", i, p)
		}
	}
}

// checkReplicas reads every entry 0..last from every bookie of its write
// set directly and checks the copy.
func checkReplicas(t *testing.T, n *clusterNode, id int64, m *ledger.Metadata, last int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for e := int64(0); e <= last; e++ {
		seg := m.EnsembleAt(e)
		for k := range m.WriteQuorum {
			b := seg.Bookies[(e+int64(k))%int64(m.EnsembleSize)]
			bc, err := n.resolver.Client(b)
			if err != nil {
				t.Fatal(err)
			}
			frame, err := bc.ReadEntry(ctx, id, e, false, nil)
			if err != nil {
				t.Fatalf("entry %d on %s: %v", e, b, err)
			}
			hd, p, err := bkproto.DecodeEntry(frame)
			if err != nil || hd.LedgerID != id || hd.EntryID != e || string(p) != string(entryPayload(id, e)) {
				t.Fatalf("entry %d on %s: header %+v, err %v, payload %q", e, b, hd, err, p)
			}
		}
	}
}
