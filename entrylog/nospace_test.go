package entrylog

import (
	"bytes"
	"errors"
	"log/slog"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

func checkReads(t *testing.T, l *Log, recs []added) {
	t.Helper()
	for _, r := range recs {
		got, err := l.Read(r.loc, r.ledger, r.entry)
		if err != nil || !bytes.Equal(got, r.payload) {
			t.Fatalf("Read(%d, %d) = %d bytes, %v; want %d bytes", r.ledger, r.entry, len(got), err, len(r.payload))
		}
	}
}

// TestNoSpaceNotSticky: an ENOSPC from a write, a preallocation or the
// creation of the next log fails only that call; once space is back the
// same Log flushes, syncs, rolls and seals, and every record added before,
// during and after reads back, also after a reopen.
func TestNoSpaceNotSticky(t *testing.T) {
	mem := vfs.NewMem()
	full := vfs.NewToggle(vfs.DiskFull())
	fs := vfs.NewErrorFS(mem, full)
	l := mustOpen(t, fs, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	next := map[int64]int64{}
	recs := addMany(t, l, rng, 40, 3, next)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	full.Enable()
	// Buffered adds succeed until the buffer must be written; then every
	// write, roll and sync reports no space, not a broken log.
	var failures int
	for i := 0; i < 200 && failures < 20; i++ {
		ledger := int64(rng.IntN(3))
		p := payloadFor(ledger, next[ledger], rng.IntN(3000))
		loc, err := l.Add(ledger, next[ledger], p)
		if err != nil {
			if !IsNoSpace(err) || !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("Add on a full disk = %v, want ENOSPC", err)
			}
			failures++
			continue
		}
		recs = append(recs, added{ledger, next[ledger], p, loc})
		next[ledger]++
	}
	if failures == 0 {
		t.Fatal("no Add failed on a full disk")
	}
	if err := l.Sync(); !IsNoSpace(err) {
		t.Fatalf("Sync on a full disk = %v, want no space", err)
	}
	checkReads(t, l, recs) // still readable from the buffer or the file
	full.Disable()
	recs = append(recs, addMany(t, l, rng, 100, 3, next)...) // rolls several logs
	if err := l.Sync(); err != nil {
		t.Fatalf("Sync after space came back = %v", err)
	}
	checkReads(t, l, recs)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, mem, nil)
	defer l.Close()
	checkReads(t, l, recs)
	for _, li := range l.Logs() {
		if _, err := l.LedgerBytes(li.ID); err != nil {
			t.Fatalf("log %d: %v", li.ID, err)
		}
	}
}

// TestNoSpaceFsyncSticky: a failed fsync stays fatal even with ENOSPC:
// the kernel may have dropped the pages, so nothing may claim them
// durable later.
func TestNoSpaceFsyncSticky(t *testing.T) {
	mem := vfs.NewMem()
	tog := vfs.NewToggle(vfs.Error(unix.ENOSPC, vfs.OpSync))
	l := mustOpen(t, vfs.NewErrorFS(mem, tog), nil)
	defer l.Close()
	if _, err := l.Add(1, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	tog.Enable()
	if err := l.Sync(); err == nil || IsNoSpace(err) {
		t.Fatalf("Sync with an fsync ENOSPC = %v, want a sticky failure", err)
	}
	tog.Disable()
	if err := l.Sync(); err == nil {
		t.Fatal("Sync succeeded after a failed fsync")
	}
	if _, err := l.Add(1, 1, []byte("y")); err == nil {
		t.Fatal("Add succeeded after a failed fsync")
	}
}

// TestNoSpaceCloseUnsealed: Close with no room for the ledgers map leaves
// the log unsealed without failing; the next open scans it.
func TestNoSpaceCloseUnsealed(t *testing.T) {
	mem := vfs.NewMem()
	full := vfs.NewToggle(vfs.DiskFull())
	l := mustOpen(t, vfs.NewErrorFS(mem, full), nil)
	rng := rand.New(rand.NewPCG(3, 4))
	recs := addMany(t, l, rng, 5, 2, map[int64]int64{})
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	full.Enable()
	if err := l.Close(); err != nil {
		t.Fatalf("Close on a full disk = %v", err)
	}
	l = mustOpen(t, mem, nil)
	defer l.Close()
	checkReads(t, l, recs)
}

// TestRecoveredLogSealedOnceScanned: a log left unsealed by a crash is
// scanned and sealed by the next open (which says so); the open after
// finds its ledgers map, says nothing, and every record still reads back.
func TestRecoveredLogSealedOnceScanned(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, mem, func(o *Options) { o.LogSizeLimit = 1 << 20 })
	rng := rand.New(rand.NewPCG(5, 6))
	recs := addMany(t, l, rng, 30, 3, map[int64]int64{})
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone() // the active log was never sealed
	l.Close()
	var logs syncLog
	open := func() *Log {
		return mustOpen(t, crashed, func(o *Options) { o.LogSizeLimit = 1 << 20; o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	}
	l = open()
	if !strings.Contains(logs.String(), "left unsealed by a crash") {
		t.Fatalf("open of a crashed log did not report it:\n%s", logs.String())
	}
	want := map[uint32]map[int64]uint64{}
	for _, li := range l.Logs() {
		m, err := l.LedgerBytes(li.ID)
		if err != nil {
			t.Fatal(err)
		}
		want[li.ID] = pairsMap(t, m)
	}
	checkReads(t, l, recs)
	l.Close()
	logs.Reset()
	l = open()
	defer l.Close()
	if strings.Contains(logs.String(), "unsealed") {
		t.Fatalf("second open still reports unsealed logs:\n%s", logs.String())
	}
	for _, li := range l.Logs() {
		m, err := l.LedgerBytes(li.ID)
		if err != nil || !maps.Equal(pairsMap(t, m), want[li.ID]) {
			t.Fatalf("log %d: ledgers map after sealing = %v, %v; want %v", li.ID, m, err, want[li.ID])
		}
	}
	checkReads(t, l, recs)
}

// syncLog is a log sink safe for concurrent writes.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncLog) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}
