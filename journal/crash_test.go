package journal

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// crashPayload is the deterministic payload of writer w's entry i.
func crashPayload(w, i int) []byte {
	n := 4 + (w*7919+i*104729)%700
	p := make([]byte, n)
	binary.LittleEndian.PutUint32(p, uint32(w<<20|i))
	for k := 4; k < n; k++ {
		p[k] = byte(w + i + k)
	}
	return p
}

// TestCrashRecovery appends from several goroutines, takes crash clones
// (synced data plus a random prefix of unsynced writes, possibly torn) at
// random points, and checks that each clone opens without corruption and
// replays every record acknowledged before the clone, byte for byte, in
// per-writer order, with no gaps.
func TestCrashRecovery(t *testing.T) { crashRecovery(t, func(*Options) {}) }

// crashRecovery is TestCrashRecovery with every journal's options passed
// through mod (TestDirectCrashRecovery sets DirectIO).
func crashRecovery(t *testing.T, mod func(*Options)) {
	const (
		iterations = 12
		writers    = 4
	)
	rng := rand.New(rand.NewPCG(7, 11))
	var logBuf bytes.Buffer
	defer func() { t.Logf("torn tails truncated: %d", bytes.Count(logBuf.Bytes(), []byte("torn tail"))) }()
	for it := range iterations {
		mem := vfs.NewMem()
		var (
			mu      sync.Mutex
			cond    = sync.NewCond(&mu)
			acked   = make([]int, writers) // per writer: count acknowledged (in order)
			total   int
			stop    bool
			clones  []*vfs.MemFS
			ackedAt [][]int
		)
		// clone takes a crash clone and the acknowledgements that must
		// survive it; mu is held.
		clone := func() {
			ackedAt = append(ackedAt, append([]int(nil), acked...))
			clones = append(clones, mem.CrashCloneRandom(rand.New(rand.NewPCG(uint64(it), uint64(len(clones))))))
		}
		// Also crash right before some journal syncs: the group is
		// written but not durable, the case that leaves torn tails.
		syncN := 0
		fs := vfs.NewErrorFS(mem, vfs.PathMatch("*.txn", vfs.InjectorFunc(func(op vfs.Op, _ string) error {
			if op == vfs.OpSync {
				mu.Lock()
				if syncN++; syncN%17 == 5 && len(clones) < 6 {
					clone()
				}
				mu.Unlock()
			}
			return nil
		})))
		o := testOptions(fs)
		o.MaxFileSize = 16 << 10 // roll often
		o.MaxGroupWait = 0
		o.MaxQueuedBytes = 64 << 10 // keep appenders close to the disk
		if it%3 == 1 {
			o.MaxGroupEntries = 4
		}
		mod(&o)
		j := mustOpen(t, o)

		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := 0; ; i++ {
					mu.Lock()
					s := stop
					mu.Unlock()
					if s {
						return
					}
					j.AppendFunc(Record{Type: Entry, LedgerID: int64(w), EntryID: int64(i), Payload: crashPayload(w, i)},
						func(_ Position, err error) {
							if err != nil {
								return
							}
							mu.Lock()
							if acked[w] != i {
								t.Errorf("writer %d: entry %d acked after %d", w, i, acked[w])
							}
							acked[w] = i + 1
							total++
							cond.Broadcast()
							mu.Unlock()
						})
				}
			})
		}
		for range 3 {
			mu.Lock()
			target := total + 20 + rng.IntN(300)
			for total < target {
				cond.Wait()
			}
			clone()
			mu.Unlock()
		}
		mu.Lock()
		stop = true
		mu.Unlock()
		wg.Wait()
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}

		for c, clone := range clones {
			co := testOptions(clone)
			mod(&co)
			co.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
			j, err := Open(co)
			if err != nil {
				t.Fatalf("iteration %d clone %d: Open = %v", it, c, err)
			}
			next := make([]int, writers)
			err = j.Replay(Position{}, func(r Record, _ Position) error {
				w := int(r.LedgerID)
				if r.EntryID != int64(next[w]) {
					t.Fatalf("iteration %d clone %d: writer %d entry %d, want %d", it, c, w, r.EntryID, next[w])
				}
				if !bytes.Equal(r.Payload, crashPayload(w, next[w])) {
					t.Fatalf("iteration %d clone %d: writer %d entry %d payload differs", it, c, w, r.EntryID)
				}
				next[w]++
				return nil
			})
			if err != nil {
				t.Fatalf("iteration %d clone %d: Replay = %v", it, c, err)
			}
			for w := range writers {
				if next[w] < ackedAt[c][w] {
					t.Fatalf("iteration %d clone %d: writer %d replayed %d entries, %d were acknowledged",
						it, c, w, next[w], ackedAt[c][w])
				}
			}
			// The recovered journal keeps working across another reopen.
			appendAll(t, j, makeRecords(3, 20, 1))
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			co = testOptions(clone)
			mod(&co)
			j = mustOpen(t, co)
			j.Close()
		}
	}
}
