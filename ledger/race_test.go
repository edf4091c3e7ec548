package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/ledger"
)

// TestNetTwoWritersRacing: writer A keeps adding (pipelined) while client B
// opens the ledger with recovery. Exactly one survives: A ends with
// ErrFenced; the closed lastEntryId is the same for two independent
// readers; every entry acked to A is at or below it and readable, and so
// is every entry up to it (written by A, recovered by B).
func TestNetTwoWritersRacing(t *testing.T) {
	nc := newNetCluster(t, 4)
	a, _ := nc.client(ledger.Options{})
	b, _ := nc.client(ledger.Options{})
	ctx := ctxT(t)
	h, err := a.Create(ctx, e3)
	if err != nil {
		t.Fatal(err)
	}
	w := &asyncWriter{cond: make(chan struct{}, 1)}
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() { // writer A: at most 32 adds in flight until an add fails
		defer close(writerDone)
		for e := int64(0); ; e++ {
			for {
				w.mu.Lock()
				inflight, failed := e-int64(len(w.acked)), w.err != nil
				w.mu.Unlock()
				if failed {
					return
				}
				if inflight < 32 {
					break
				}
				select {
				case <-w.cond:
				case <-stop:
					return
				}
			}
			w.add(h, e)
		}
	}()
	w.waitAcked(t, 200)
	r, err := b.Open(ctx, h.ID()) // races with A's adds
	if err != nil {
		close(stop)
		<-writerDone
		t.Fatal(err)
	}
	select {
	case <-writerDone:
	case <-time.After(20 * time.Second):
		close(stop)
		<-writerDone
		t.Fatal("writer A was not stopped by the takeover")
	}
	if _, err := h.Add(ctx, []byte("after")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("writer A after takeover: %v, want ErrFenced", err)
	}
	w.mu.Lock()
	acked, aerr := append([]int64(nil), w.acked...), w.err
	w.mu.Unlock()
	if !errors.Is(aerr, ledger.ErrFenced) {
		t.Fatalf("writer A's first failure: %v, want ErrFenced", aerr)
	}
	for i, id := range acked {
		if id != int64(i) {
			t.Fatalf("ack %d is entry %d", i, id)
		}
	}
	last := r.LastAddConfirmed()
	if !r.Closed() || last < int64(len(acked))-1 {
		t.Fatalf("recovered: closed %v at %d; %d entries were acked to A", r.Closed(), last, len(acked))
	}
	t.Logf("%d entries acked to A, ledger closed at %d", len(acked), last)
	// Two independent readers agree on the end and the content.
	for i := range 2 {
		c, _ := nc.client(ledger.Options{})
		rr, err := c.Open(ctx, h.ID())
		if err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
		if rr.LastAddConfirmed() != last || !rr.Closed() {
			t.Fatalf("reader %d sees closed %v at %d, want %d", i, rr.Closed(), rr.LastAddConfirmed(), last)
		}
		checkEntries(t, rr, h.ID(), 0, last)
		if _, err := rr.Read(ctx, last+1, last+1); err == nil {
			t.Fatalf("reader %d read past the closed end", i)
		}
	}
	if err := h.Close(ctx); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("writer A Close: %v, want ErrFenced", err)
	}
}
