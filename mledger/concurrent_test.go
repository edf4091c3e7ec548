package mledger_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/mledger"
)

// TestConcurrentAddsReadsAcks runs producers, two consuming cursors that
// ack out of order, stats readers and the background loop at once (run it
// with -race). Every entry is delivered to each cursor, in order, and both
// end with no backlog.
func TestConcurrentAddsReadsAcks(t *testing.T) {
	e := newEnv(t)
	e.opts.TickInterval = 0 // default: the real background loop runs
	_ = e.f.Close()
	e.f = e.newFactory()
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 97, CursorPersistInterval: 1}
	ml := e.open("t/conc", cfg)
	ctx := ctxT(t)
	const producers, perProducer = 4, 300
	total := producers * perProducer
	var cursors []*mledger.Cursor
	for _, n := range []string{"c1", "c2"} {
		c, err := ml.OpenCursor(ctx, n, mledger.InitialEarliest)
		if err != nil {
			t.Fatal(err)
		}
		cursors = append(cursors, c)
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inner sync.WaitGroup
			inner.Add(perProducer)
			for i := range perProducer {
				ml.AddEntry([]byte(fmt.Sprintf("p%d-%d", p, i)), 2, func(_ mledger.Position, err error) {
					if err != nil {
						t.Errorf("add: %v", err)
					}
					inner.Done()
				})
			}
			inner.Wait()
		}()
	}
	for ci, c := range cursors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(ci), 9))
			seen := 0
			var last mledger.Position
			for seen < total {
				es, err := c.ReadEntriesOrWait(ctx, 50)
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				ps := make([]mledger.Position, len(es))
				for i, en := range es {
					if !last.Less(en.Pos) {
						t.Errorf("cursor %s: %v after %v", c.Name(), en.Pos, last)
					}
					last = en.Pos
					ps[i] = en.Pos
				}
				seen += len(es)
				rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
				for _, p := range ps {
					if rng.IntN(4) == 0 {
						_ = c.AckBatchIndexes(p, []uint64{1}) // ack index 1 of 2
						_ = c.AckBatchIndexes(p, []uint64{0})
					} else {
						_ = c.Delete(p)
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	var statsWG sync.WaitGroup
	statsWG.Add(1)
	go func() {
		defer statsWG.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = ml.Stats()
			_, _ = ml.Size()
			_ = e.f.Cache().Stats()
		}
	}()
	wg.Wait()
	close(stop)
	statsWG.Wait()
	last := ml.GetLastPosition()
	for _, c := range cursors {
		if be, bm := c.Backlog(); be != 0 || bm != 0 {
			t.Fatalf("cursor %s backlog %d/%d, want 0", c.Name(), be, bm)
		}
		if md := c.MarkDeletePosition(); md != last {
			t.Fatalf("cursor %s mark-delete %v, want %v", c.Name(), md, last)
		}
	}
	st := ml.Stats()
	if st.NumberOfEntries != int64(total) {
		t.Fatalf("%d entries, want %d", st.NumberOfEntries, total)
	}
	if e, b := ml.Size(); e != st.NumberOfEntries || b != st.TotalSize || len(st.Ledgers) < 2 {
		t.Fatalf("Size %d entries %d bytes, Stats %d / %d over %d ledgers (want equal, over rollovers)", e, b, st.NumberOfEntries, st.TotalSize, len(st.Ledgers))
	}
	e.restart()
	ml = e.open("t/conc", cfg)
	for _, n := range []string{"c1", "c2"} {
		if md := ml.Cursor(n).MarkDeletePosition(); md != last {
			t.Fatalf("after restart %s mark-delete %v, want %v", n, md, last)
		}
	}
}

// TestRestartWithEmbeddedMetadata runs a restart against the bbolt-backed
// metadata store, closing and reopening its file.
func TestRestartWithEmbeddedMetadata(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	meta, err := embedded.Open(path, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, meta)
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 10}
	ml := e.open("public/default/persistent/t", cfg)
	ctx := ctxT(t)
	c, _ := ml.OpenCursor(ctx, "sub", mledger.InitialEarliest)
	pos := addMany(t, ml, "m", 35)
	randomAcks(rand.New(rand.NewPCG(5, 6)), c, pos, 30)
	want := captureCursor(t, c, pos)
	if err := e.f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := meta.Close(); err != nil {
		t.Fatal(err)
	}
	meta, err = embedded.Open(path, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	e.opts.Metadata = meta
	e.f = e.newFactory()
	ml = e.open("public/default/persistent/t", cfg)
	compareSnapshots(t, captureCursor(t, ml.Cursor("sub"), pos), want)
	if st := ml.Stats(); st.NumberOfEntries != 35 {
		t.Fatalf("after restart %d entries, want 35", st.NumberOfEntries)
	}
}
