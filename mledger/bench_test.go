package mledger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/mledger"
)

// BenchmarkAddEntry measures AddEntry through the in-memory ledger store:
// b.N asynchronous adds, waiting for all callbacks.
func BenchmarkAddEntry(b *testing.B) {
	for _, size := range []int{200, 4096} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			e := newEnv(b)
			ml := e.open("b/add", mledger.Config{MinLedgerRolloverTime: -1})
			data := make([]byte, size)
			var wg sync.WaitGroup
			cb := func(_ mledger.Position, err error) {
				if err != nil {
					b.Error(err)
				}
				wg.Done()
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			wg.Add(b.N)
			for range b.N {
				ml.AddEntry(data, 1, cb)
			}
			wg.Wait()
		})
	}
}

// BenchmarkAddEntryBounded is AddEntry with at most 1000 adds in flight,
// as a producer with a bounded pending queue would do.
func BenchmarkAddEntryBounded(b *testing.B) {
	e := newEnv(b)
	ml := e.open("b/addb", mledger.Config{MinLedgerRolloverTime: -1})
	data := make([]byte, 200)
	sem := make(chan struct{}, 1000)
	var wg sync.WaitGroup
	cb := func(_ mledger.Position, err error) {
		if err != nil {
			b.Error(err)
		}
		<-sem
		wg.Done()
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	wg.Add(b.N)
	for range b.N {
		sem <- struct{}{}
		ml.AddEntry(data, 1, cb)
	}
	wg.Wait()
}

// benchCursor returns a cursor over n entries.
func benchCursor(b *testing.B, n int) (*mledger.ManagedLedger, *mledger.Cursor, []mledger.Position) {
	e := newEnv(b)
	ml := e.open("b/ack", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 50000})
	c, _ := ml.OpenCursor(context.Background(), "s", mledger.InitialEarliest)
	addN(b, ml, n)
	var pos []mledger.Position
	for _, l := range ml.Stats().Ledgers {
		for i := range l.Entries {
			pos = append(pos, mledger.Position{LedgerID: l.LedgerID, EntryID: i})
		}
	}
	return ml, c, pos
}

// BenchmarkAck measures individual acks: in order (mark-delete advances
// every time) and scattered (every other entry: holes accumulate).
func BenchmarkAck(b *testing.B) {
	const n = 200_000
	b.Run("in-order", func(b *testing.B) {
		_, c, pos := benchCursor(b, n)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if i%n == 0 && i > 0 {
				b.StopTimer()
				_ = c.Reset(mledger.Earliest)
				b.StartTimer()
			}
			_ = c.Delete(pos[i%n])
		}
	})
	b.Run("scattered", func(b *testing.B) {
		_, c, pos := benchCursor(b, n)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			k := (2 * i) % n
			if k == 0 && i > 0 {
				b.StopTimer()
				_ = c.Reset(mledger.Earliest)
				b.StartTimer()
			}
			_ = c.Delete(pos[k])
		}
	})
	b.Run("mark-delete", func(b *testing.B) {
		_, c, pos := benchCursor(b, n)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if i%n == 0 && i > 0 {
				b.StopTimer()
				_ = c.Reset(mledger.Earliest)
				b.StartTimer()
			}
			_ = c.MarkDelete(pos[i%n])
		}
	})
	b.Run("batch-index", func(b *testing.B) {
		_, c, pos := benchCursor(b, n)
		set := []uint64{0xfffffffffffffffe}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if i%n == 0 && i > 0 {
				b.StopTimer()
				_ = c.Reset(mledger.Earliest)
				b.StartTimer()
			}
			_ = c.AckBatchIndexes(pos[i%n], set)
		}
	})
}

// BenchmarkReadTail measures a tailing cursor reading from the entry cache.
func BenchmarkReadTail(b *testing.B) {
	e := newEnv(b)
	ml := e.open("b/read", mledger.Config{MinLedgerRolloverTime: -1})
	c, _ := ml.OpenCursor(context.Background(), "s", mledger.InitialLatest)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		k := min(1000, b.N-done)
		b.StopTimer()
		addN(b, ml, k)
		b.StartTimer()
		for got := 0; got < k; {
			es, err := c.ReadEntries(ctx, 100)
			if err != nil {
				b.Fatal(err)
			}
			got += len(es)
		}
		done += k
	}
}
