package mledger_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

type env struct {
	t     testing.TB
	store *memstore.Store
	meta  metadata.Store
	clock *clock
	opts  mledger.Options
	f     *mledger.Factory
}

func newEnv(t testing.TB) *env {
	return newEnvWith(t, memmeta.New())
}

func newEnvWith(t testing.TB, meta metadata.Store) *env {
	e := &env{t: t, store: memstore.New(), meta: meta, clock: newClock()}
	e.opts = mledger.Options{Ledgers: e.store, Metadata: e.meta, TickInterval: -1, Now: e.clock.Now}
	e.f = e.newFactory()
	t.Cleanup(func() {
		_ = e.f.Close()
		_ = e.store.Close()
	})
	return e
}

func (e *env) newFactory() *mledger.Factory {
	f, err := mledger.NewFactory(e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

// restart closes the factory (clean shutdown) and opens a new one on the
// same stores.
func (e *env) restart() {
	if err := e.f.Close(); err != nil {
		e.t.Fatalf("factory Close: %v", err)
	}
	e.f = e.newFactory()
}

// crash drops ml without any shutdown work and opens a new factory.
func (e *env) crash(ml *mledger.ManagedLedger) {
	ml.CrashForTest()
	e.f = e.newFactory()
}

func testConfig() mledger.Config {
	return mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 1000}
}

func (e *env) open(name string, cfg mledger.Config) *mledger.ManagedLedger {
	e.t.Helper()
	ml, err := e.f.Open(context.Background(), name, cfg)
	if err != nil {
		e.t.Fatalf("Open(%s): %v", name, err)
	}
	return ml
}

func add(t testing.TB, ml *mledger.ManagedLedger, data string, msgs int32) mledger.Position {
	t.Helper()
	type res struct {
		p   mledger.Position
		err error
	}
	ch := make(chan res, 1)
	ml.AddEntry([]byte(data), msgs, func(p mledger.Position, err error) { ch <- res{p, err} })
	r := <-ch
	if r.err != nil {
		t.Fatalf("AddEntry(%s): %v", data, r.err)
	}
	return r.p
}

// addMany adds n entries "prefix-i" asynchronously and waits; it checks the
// callbacks ran in order with increasing positions.
func addMany(t testing.TB, ml *mledger.ManagedLedger, prefix string, n int) []mledger.Position {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	pos := make([]mledger.Position, 0, n)
	var firstErr error
	wg.Add(n)
	for i := range n {
		ml.AddEntry([]byte(fmt.Sprintf("%s-%d", prefix, i)), 1, func(p mledger.Position, err error) {
			mu.Lock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			pos = append(pos, p)
			mu.Unlock()
			wg.Done()
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("addMany: %v", firstErr)
	}
	for i := 1; i < len(pos); i++ {
		if !pos[i-1].Less(pos[i]) {
			t.Fatalf("positions out of order: %v then %v", pos[i-1], pos[i])
		}
	}
	return pos
}

func readAll(t testing.TB, c *mledger.Cursor) []mledger.Entry {
	t.Helper()
	var out []mledger.Entry
	for {
		es, err := c.ReadEntries(context.Background(), 100)
		if err != nil {
			t.Fatalf("ReadEntries: %v", err)
		}
		if len(es) == 0 {
			return out
		}
		out = append(out, es...)
	}
}

func datas(es []mledger.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.Data)
	}
	return out
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
