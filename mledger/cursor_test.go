package mledger_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
)

func TestCursorAckOperations(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/acks", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 4})
	c, _ := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
	var pos []mledger.Position
	for i := range 12 {
		pos = append(pos, add(t, ml, fmt.Sprint(i), 3)) // 3 messages per entry
	}
	backlog := func(we, wm int64) {
		t.Helper()
		if ge, gm := c.Backlog(); ge != we || gm != wm {
			t.Fatalf("Backlog() = %d entries %d msgs, want %d %d", ge, gm, we, wm)
		}
	}
	backlog(12, 36)
	// Holes.
	if err := c.Delete(pos[1], pos[2], pos[5]); err != nil {
		t.Fatal(err)
	}
	backlog(9, 27)
	if md := c.MarkDeletePosition(); md.EntryID != -1 {
		t.Fatalf("mark-delete moved over a hole: %v", md)
	}
	// Filling the first hole advances over the contiguous run.
	_ = c.Delete(pos[0])
	if md := c.MarkDeletePosition(); md != pos[2] {
		t.Fatalf("mark-delete = %v, want %v", md, pos[2])
	}
	// Batch-index ack: 3-message batch, ack index 0 then 2 (AND).
	_ = c.AckBatchIndexes(pos[3], []uint64{0b110})
	_ = c.AckBatchIndexes(pos[3], []uint64{0b011})
	if got := c.GetBatchAckSet(pos[3]); !slices.Equal(got, []uint64{0b010}) {
		t.Fatalf("GetBatchAckSet = %b, want [10]", got)
	}
	backlog(8, 22) // 8 entries; 24 messages minus 2 acked indexes
	_ = c.AckBatchIndexes(pos[3], []uint64{0b101})
	if got := c.GetBatchAckSet(pos[3]); got != nil {
		t.Fatalf("fully acked batch still has ack set %b", got)
	}
	if md := c.MarkDeletePosition(); md != pos[3] {
		t.Fatalf("mark-delete after batch = %v, want %v", md, pos[3])
	}
	_ = c.Delete(pos[4]) // crosses into ledger 2 and over the acked pos[5]
	if md := c.MarkDeletePosition(); md != pos[5] {
		t.Fatalf("mark-delete = %v, want %v (crossing ledgers)", md, pos[5])
	}
	// Read skips acked entries; rewind re-reads only the unacked.
	_ = c.Delete(pos[7])
	got := datas(readAll(t, c))
	if want := []string{"6", "8", "9", "10", "11"}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	c.Rewind()
	if got2 := datas(readAll(t, c)); !slices.Equal(got2, got) {
		t.Fatalf("after Rewind read %v, want %v", got2, got)
	}
	// Skip 2 unacked entries: 6 and 8 (7 is acked).
	_ = c.SkipEntries(2)
	if md := c.MarkDeletePosition(); md != pos[8] {
		t.Fatalf("after SkipEntries(2) mark-delete = %v, want %v", md, pos[8])
	}
	backlog(3, 9)
	// Cumulative ack.
	_ = c.MarkDelete(pos[9])
	backlog(2, 6)
	_ = c.MarkDelete(pos[0]) // backwards: no-op
	if md := c.MarkDeletePosition(); md != pos[9] {
		t.Fatalf("backward MarkDelete moved to %v", md)
	}
	if err := c.MarkDelete(mledger.Position{LedgerID: pos[11].LedgerID + 5, EntryID: 0}); err == nil {
		t.Fatal("MarkDelete beyond the last entry succeeded")
	}
	_ = c.ClearBacklog()
	backlog(0, 0)
	// Reset forgets acks after the target.
	_ = c.Reset(pos[4])
	backlog(8, 24)
	if got := len(readAll(t, c)); got != 8 {
		t.Fatalf("after Reset read %d, want 8", got)
	}
	_ = c.Reset(mledger.Earliest)
	backlog(12, 36)
	_ = c.Reset(mledger.Latest)
	backlog(0, 0)
	st := c.Stats()
	if st.Name != "s" || !st.Durable || st.BacklogEntries != 0 {
		t.Fatalf("Stats = %+v", st)
	}
}

// cursorSnapshot captures what a restart must reproduce.
type cursorSnapshot struct {
	md     mledger.Position
	acked  []bool
	sets   map[mledger.Position][]uint64
	unread []string
}

func captureCursor(t *testing.T, c *mledger.Cursor, pos []mledger.Position) cursorSnapshot {
	t.Helper()
	s := cursorSnapshot{md: c.MarkDeletePosition(), sets: map[mledger.Position][]uint64{}}
	for _, p := range pos {
		s.acked = append(s.acked, c.IsAcked(p))
		if set := c.GetBatchAckSet(p); set != nil {
			s.sets[p] = set
		}
	}
	c.Rewind()
	s.unread = datas(readAll(t, c))
	return s
}

func compareSnapshots(t *testing.T, got, want cursorSnapshot) {
	t.Helper()
	if got.md != want.md {
		t.Fatalf("mark-delete = %v, want %v", got.md, want.md)
	}
	if !slices.Equal(got.acked, want.acked) {
		t.Fatalf("acked set differs:\n got %v\nwant %v", got.acked, want.acked)
	}
	if len(got.sets) != len(want.sets) {
		t.Fatalf("batch sets = %v, want %v", got.sets, want.sets)
	}
	for p, w := range want.sets {
		if !slices.Equal(got.sets[p], w) {
			t.Fatalf("batch set %v = %v, want %v", p, got.sets[p], w)
		}
	}
	if !slices.Equal(got.unread, want.unread) {
		t.Fatalf("redelivered %v, want %v", got.unread, want.unread)
	}
}

// randomAcks applies a mix of individual, batch and cumulative acks.
func randomAcks(rng *rand.Rand, c *mledger.Cursor, pos []mledger.Position, n int) {
	for range n {
		p := pos[rng.IntN(len(pos))]
		switch r := rng.IntN(10); {
		case r < 6:
			_ = c.Delete(p)
		case r < 9:
			_ = c.AckBatchIndexes(p, []uint64{rng.Uint64() | rng.Uint64()})
		default:
			// Cumulative ack near the current mark-delete.
			md := c.MarkDeletePosition()
			for i, q := range pos {
				if md.Less(q) {
					_ = c.MarkDelete(pos[min(i+rng.IntN(3), len(pos)-1)])
					break
				}
			}
		}
	}
}

func TestCursorRestartRecoversExactly(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mledger.Config
	}{
		{"deltas", mledger.Config{CursorSnapshotMinBytes: 1 << 20}},
		{"snapshot-every-time", mledger.Config{CursorSnapshotMinBytes: 1}},
		{"chunked-snapshots", mledger.Config{CursorSnapshotMinBytes: 1, CursorChunkSize: 64}},
		{"cursor-ledger-rolls", mledger.Config{CursorMaxEntriesPerLedger: 2}},
	} {
		for _, backend := range []string{"memmeta", "embedded"} {
			t.Run(tc.name+"/"+backend, func(t *testing.T) {
				testCursorRestart(t, tc.cfg, newMeta(t, backend))
			})
		}
	}
}

func testCursorRestart(t *testing.T, cfg mledger.Config, meta metadata.Store) {
	cfg.MinLedgerRolloverTime = -1
	cfg.MaxEntriesPerLedger = 50
	e := newEnvWith(t, meta)
	ml := e.open("t/restart", cfg)
	ctx := ctxT(t)
	a, _ := ml.OpenCursor(ctx, "a", mledger.InitialEarliest)
	b, _ := ml.OpenCursor(ctx, "b", mledger.InitialEarliest)
	pos := addMany(t, ml, "m", 400)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		randomAcks(rng, a, pos, 60)
		randomAcks(rng, b, pos, 10)
		if err := ml.PersistAllForTest(ctx); err != nil {
			t.Fatal(err)
		}
	}
	randomAcks(rng, a, pos, 30) // flushed by Close
	wantA, wantB := captureCursor(t, a, pos), captureCursor(t, b, pos)
	e.restart()
	ml = e.open("t/restart", cfg)
	compareSnapshots(t, captureCursor(t, ml.Cursor("a"), pos), wantA)
	compareSnapshots(t, captureCursor(t, ml.Cursor("b"), pos), wantB)
	// And once more, after the recovered cursors re-persist.
	randomAcks(rng, ml.Cursor("a"), pos, 20)
	wantA = captureCursor(t, ml.Cursor("a"), pos)
	e.restart()
	ml = e.open("t/restart", cfg)
	compareSnapshots(t, captureCursor(t, ml.Cursor("a"), pos), wantA)
	// Old cursor ledgers are deleted: at most one per cursor
	// remains, besides the managed ledger's own.
	if n, m := len(e.store.Ledgers()), len(ml.Stats().Ledgers); n > m+2 {
		t.Fatalf("%d ledgers in store, %d data ledgers: cursor ledgers leak", n, m)
	}
}

func newMeta(t *testing.T, backend string) metadata.Store {
	if backend == "memmeta" {
		return memmeta.New()
	}
	m, err := embedded.Open(filepath.Join(t.TempDir(), "meta.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func TestCrashRecoversLastPersist(t *testing.T) {
	for _, backend := range []string{"memmeta", "embedded"} {
		t.Run(backend, func(t *testing.T) { testCrashRecoversLastPersist(t, newMeta(t, backend)) })
	}
}

func testCrashRecoversLastPersist(t *testing.T, meta metadata.Store) {
	e := newEnvWith(t, meta)
	cfg := testConfig()
	ml := e.open("t/crash", cfg)
	ctx := ctxT(t)
	c, _ := ml.OpenCursor(ctx, "s", mledger.InitialEarliest)
	pos := addMany(t, ml, "m", 100)
	rng := rand.New(rand.NewPCG(3, 4))
	randomAcks(rng, c, pos, 40)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	persisted := captureCursor(t, c, pos)
	// Acks after the last persist are lost by a crash: those entries are
	// redelivered (the documented bound: acks within one persist interval).
	_ = c.MarkDelete(pos[60])
	more := addMany(t, ml, "late", 5) // added but the ledger is not closed
	e.crash(ml)
	ml = e.open("t/crash", cfg)
	got := captureCursor(t, ml.Cursor("s"), pos)
	persisted.unread = append(persisted.unread, "late-0", "late-1", "late-2", "late-3", "late-4")
	compareSnapshots(t, got, persisted)
	if last := ml.GetLastPosition(); last != more[4] {
		t.Fatalf("after crash last position %v, want %v (acked adds survive)", last, more[4])
	}
}

func TestCursorStateInlineWhenNoCursorLedger(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/inline", testConfig())
	ctx := ctxT(t)
	c, _ := ml.OpenCursor(ctx, "s", mledger.InitialEarliest)
	pos := addMany(t, ml, "m", 30)
	_ = c.Delete(pos[3], pos[7], pos[8])
	_ = c.MarkDelete(pos[1])
	e.store.FailNextCreates(1)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := captureCursor(t, c, pos)
	e.crash(ml)
	ml = e.open("t/inline", testConfig())
	compareSnapshots(t, captureCursor(t, ml.Cursor("s"), pos), want)
}

func TestDeleteCursor(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/del", testConfig())
	ctx := ctxT(t)
	c, _ := ml.OpenCursor(ctx, "s/with/slash", mledger.InitialEarliest)
	pos := addMany(t, ml, "m", 5)
	_ = c.Delete(pos[2])
	_ = c.Flush(ctx)
	if err := ml.DeleteCursor(ctx, "s/with/slash"); err != nil {
		t.Fatal(err)
	}
	e.restart()
	ml = e.open("t/del", testConfig())
	if ml.Cursor("s/with/slash") != nil {
		t.Fatal("deleted cursor came back after restart")
	}
	if n, m := len(e.store.Ledgers()), len(ml.Stats().Ledgers); n != m {
		t.Fatalf("store has %d ledgers, managed ledger %d: cursor ledger not deleted", n, m)
	}
}

type logCapture struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Level >= slog.LevelError {
		l.msgs = append(l.msgs, r.Message)
	}
	return nil
}
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCapture) WithGroup(string) slog.Handler      { return l }
func (l *logCapture) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}

// TestCursorStateCapLogsAndBoundsRedelivery: over CursorMaxStateBytes the
// acks furthest from mark-delete are not persisted (logged at error level)
// and are redelivered after a restart; the rest are recovered.
func TestCursorStateCapLogsAndBoundsRedelivery(t *testing.T) {
	e := newEnv(t)
	logs := &logCapture{}
	e.opts.Logger = slog.New(logs)
	_ = e.f.Close()
	e.f = e.newFactory()
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 100, CursorMaxStateBytes: 300}
	ml := e.open("t/cap", cfg)
	ctx := ctxT(t)
	c, _ := ml.OpenCursor(ctx, "s", mledger.InitialEarliest)
	pos := addMany(t, ml, "m", 1000) // 10 ledgers
	var acked []mledger.Position
	for i := 1; i < len(pos); i += 2 {
		acked = append(acked, pos[i])
	}
	_ = c.Delete(acked...)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if errs := logs.errors(); len(errs) == 0 || !strings.Contains(errs[0], "exceeds CursorMaxStateBytes") {
		t.Fatalf("no error log for the cap: %q", errs)
	}
	e.restart()
	ml = e.open("t/cap", cfg)
	c = ml.Cursor("s")
	if !c.IsAcked(acked[0]) {
		t.Fatal("ack nearest mark-delete lost")
	}
	if c.IsAcked(acked[len(acked)-1]) {
		t.Fatal("ack beyond the cap survived: the cap did not apply")
	}
	// Every entry not acked before the restart is still unacked.
	for i := 0; i < len(pos); i += 2 {
		if c.IsAcked(pos[i]) {
			t.Fatalf("never-acked %v is acked after restart", pos[i])
		}
	}
}
