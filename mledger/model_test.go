package mledger_test

import (
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/mledger"
)

// cursorModel is the reference semantics of a cursor's ack state: a
// boolean per entry plus the AND-ed batch sets.
type cursorModel struct {
	acked map[mledger.Position]bool
	batch map[mledger.Position]uint64
}

func (m *cursorModel) clone() *cursorModel {
	return &cursorModel{acked: maps.Clone(m.acked), batch: maps.Clone(m.batch)}
}

const msgsPerEntry = 4

// TestRandomOpsAgainstModel runs random sequences of adds, individual,
// batch and cumulative acks, skips, resets, trims, flushes, clean restarts
// and crashes, and after every step compares each durable cursor with a
// model: which entries are acked, the partial batch sets, the backlog in
// entries and messages, and what a rewound cursor reads. A crash reverts
// the model to the state of the last flush (the documented bound).
func TestRandomOpsAgainstModel(t *testing.T) {
	seeds := 6
	if raceEnabled {
		seeds = 3
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runModel(t, uint64(seed)) })
	}
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	e := newEnv(t)
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: int64(3 + rng.IntN(8)),
		CursorSnapshotMinBytes: int64(1 + rng.IntN(200))}
	ml := e.open("t/model", cfg)
	ctx := ctxT(t)
	names := []string{"a", "b"}
	var entries []mledger.Position // live (not trimmed), in order
	live := map[string]*cursorModel{}
	persisted := map[string]*cursorModel{}
	for _, n := range names {
		if _, err := ml.OpenCursor(ctx, n, mledger.InitialEarliest); err != nil {
			t.Fatal(err)
		}
		live[n] = &cursorModel{acked: map[mledger.Position]bool{}, batch: map[mledger.Position]uint64{}}
		persisted[n] = live[n].clone()
	}
	crashed := false
	var log []string
	check := func() {
		t.Helper()
		for _, n := range names {
			c, m := ml.Cursor(n), live[n]
			var unacked []string
			var wantMsgs int64
			for _, p := range entries {
				if got := c.IsAcked(p); got != m.acked[p] {
					t.Fatalf("cursor %s IsAcked(%v) = %v, model %v; ops:\n%v", n, p, got, m.acked[p], log)
				}
				wantSet, partial := m.batch[p]
				gotSet := c.GetBatchAckSet(p)
				if partial != (gotSet != nil) || (partial && gotSet[0] != wantSet) {
					t.Fatalf("cursor %s batch set %v = %x, model %x (%v); ops:\n%v", n, p, gotSet, wantSet, partial, log)
				}
				if !m.acked[p] {
					unacked = append(unacked, fmt.Sprint(p))
					if partial {
						wantMsgs += int64(bits.OnesCount64(wantSet))
					} else {
						wantMsgs += msgsPerEntry
					}
				}
			}
			be, bm := c.Backlog()
			if be != int64(len(unacked)) || (!crashed && bm != wantMsgs) {
				t.Fatalf("cursor %s backlog %d/%d, model %d/%d; ops:\n%v", n, be, bm, len(unacked), wantMsgs, log)
			}
			c.Rewind()
			var read []string
			for _, en := range readAll(t, c) {
				read = append(read, fmt.Sprint(en.Pos))
			}
			if !slices.Equal(read, unacked) {
				t.Fatalf("cursor %s reads %v, model %v; ops:\n%v", n, read, unacked, log)
			}
		}
	}
	ackAll := func(m *cursorModel, upTo mledger.Position) {
		for _, p := range entries {
			if !upTo.Less(p) {
				m.acked[p] = true
				delete(m.batch, p)
			}
		}
	}
	pick := func() mledger.Position { return entries[rng.IntN(len(entries))] }
	for step := range 120 {
		n := names[rng.IntN(len(names))]
		c, m := ml.Cursor(n), live[n]
		r := rng.IntN(100)
		switch {
		case r < 20 || len(entries) == 0:
			k := 1 + rng.IntN(6)
			for i := range k {
				entries = append(entries, add(t, ml, fmt.Sprint(step, "-", i), msgsPerEntry))
			}
			log = append(log, fmt.Sprintf("add %d", k))
		case r < 45:
			p := pick()
			_ = c.Delete(p)
			m.acked[p] = true
			delete(m.batch, p)
			log = append(log, fmt.Sprintf("%s delete %v", n, p))
		case r < 60:
			p := pick()
			set := rng.Uint64() & 0xf
			_ = c.AckBatchIndexes(p, []uint64{set})
			if !m.acked[p] {
				cur, ok := m.batch[p]
				if !ok {
					cur = 0xf
				}
				cur &= set
				if cur == 0 {
					m.acked[p] = true
					delete(m.batch, p)
				} else {
					m.batch[p] = cur
				}
			}
			log = append(log, fmt.Sprintf("%s batch %v %x", n, p, set))
		case r < 68:
			p := pick()
			_ = c.MarkDelete(p)
			ackAll(m, p)
			log = append(log, fmt.Sprintf("%s mark-delete %v", n, p))
		case r < 72:
			k := int64(rng.IntN(5))
			_ = c.SkipEntries(k)
			for _, p := range entries {
				if k == 0 {
					break
				}
				if !m.acked[p] {
					k--
					ackAll(m, p)
				}
			}
			log = append(log, fmt.Sprintf("%s skip", n))
		case r < 75:
			p := pick()
			_ = c.Reset(p)
			for _, q := range entries {
				m.acked[q] = q.Less(p)
			}
			clear(m.batch)
			log = append(log, fmt.Sprintf("%s reset %v", n, p))
		case r < 82:
			if err := c.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			persisted[n] = m.clone()
			log = append(log, fmt.Sprintf("%s flush", n))
		case r < 88:
			st := ml.Stats()
			current := st.Ledgers[len(st.Ledgers)-1].LedgerID
			if err := ml.Trim(ctx); err != nil {
				t.Fatal(err)
			}
			// Drop whole ledgers, oldest first, while every cursor's
			// persisted state acks them and everything before (trimming
			// follows the persisted mark-delete).
			for len(entries) > 0 && entries[0].LedgerID != current {
				l := entries[0].LedgerID
				all := true
				for _, p := range entries {
					if p.LedgerID != l {
						break
					}
					for _, cm := range persisted {
						all = all && cm.acked[p]
					}
				}
				if !all {
					break
				}
				for len(entries) > 0 && entries[0].LedgerID == l {
					entries = entries[1:]
				}
			}
			log = append(log, "trim")
		case r < 94:
			e.restart()
			ml = e.open("t/model", cfg)
			for _, cn := range names {
				persisted[cn] = live[cn].clone()
			}
			log = append(log, "restart")
		default:
			e.crash(ml)
			ml = e.open("t/model", cfg)
			for _, cn := range names {
				live[cn] = persisted[cn].clone()
			}
			crashed = true
			log = append(log, "crash")
		}
		check()
	}
}
