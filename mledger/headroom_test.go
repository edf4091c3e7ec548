package mledger_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/mledger"
)

// headroomStore wraps a LedgerStore so that its write ledgers are
// HeadroomWriters that, like the bookie-backed ledger, overwrite the room
// in front of the data before storing the data.
type headroomStore struct {
	mledger.LedgerStore
	mu        sync.Mutex
	headroom  int // AddWithHeadroom calls
	plain     int // AddAsync calls
	shortRoom int // AddWithHeadroom calls with less than EntryHeadroom
}

func (s *headroomStore) Create(ctx context.Context) (mledger.WriteLedger, error) {
	w, err := s.LedgerStore.Create(ctx)
	if err != nil {
		return nil, err
	}
	return &headroomLedger{WriteLedger: w, s: s}, nil
}

func (s *headroomStore) counts() (headroom, plain, short int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headroom, s.plain, s.shortRoom
}

type headroomLedger struct {
	mledger.WriteLedger
	s *headroomStore
}

func (l *headroomLedger) AddAsync(data []byte, cb func(int64, error)) {
	l.s.mu.Lock()
	l.s.plain++
	l.s.mu.Unlock()
	l.WriteLedger.AddAsync(data, cb)
}

func (l *headroomLedger) AddWithHeadroom(buf []byte, off int, cb func(int64, error)) {
	l.s.mu.Lock()
	l.s.headroom++
	if off < mledger.EntryHeadroom {
		l.s.shortRoom++
	}
	l.s.mu.Unlock()
	for i := range buf[:off] {
		buf[i] = 0xee
	}
	l.WriteLedger.AddAsync(buf[off:], cb)
}

func addHeadroom(t testing.TB, ml *mledger.ManagedLedger, data string, off int) mledger.Position {
	t.Helper()
	buf := append(bytes.Repeat([]byte{'h'}, off), data...)
	ch := make(chan error, 1)
	var pos mledger.Position
	ml.AddEntryHeadroom(buf, off, 1, func(p mledger.Position, err error) { pos = p; ch <- err })
	if err := <-ch; err != nil {
		t.Fatalf("AddEntryHeadroom(%s): %v", data, err)
	}
	return pos
}

// TestAddEntryHeadroom: entries added with room go to a HeadroomWriter
// with that room on their first attempt, a retry after a failed ledger goes
// through AddAsync (the failed ledger may still read its frame), plain
// AddEntry never uses the room, and the entry cache, cursors and the
// ledger store see only the data.
func TestAddEntryHeadroom(t *testing.T) {
	e := newEnv(t)
	hs := &headroomStore{LedgerStore: e.store}
	if err := e.f.Close(); err != nil {
		t.Fatal(err)
	}
	e.opts.Ledgers = hs
	e.f = e.newFactory()
	ml := e.open("t/headroom", testConfig())
	c, err := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 5 {
		want = append(want, fmt.Sprintf("room-%d", i))
		addHeadroom(t, ml, want[len(want)-1], mledger.EntryHeadroom+i*10)
	}
	want = append(want, "plain")
	add(t, ml, "plain", 1)
	if h, p, _ := hs.counts(); h != 5 || p != 1 {
		t.Fatalf("after 5 adds with room and 1 without: %d AddWithHeadroom, %d AddAsync; want 5, 1", h, p)
	}
	// A failed add is retried on a new ledger through AddAsync.
	e.store.FailNextAdds(1)
	want = append(want, "retried")
	p1 := addHeadroom(t, ml, "retried", mledger.EntryHeadroom)
	if h, p, _ := hs.counts(); h != 6 || p != 2 {
		t.Fatalf("after a retried add: %d AddWithHeadroom, %d AddAsync; want 6, 2", h, p)
	}
	want = append(want, "after")
	p2 := addHeadroom(t, ml, "after", mledger.EntryHeadroom+1)
	if p1.LedgerID != p2.LedgerID || p1.EntryID+1 != p2.EntryID {
		t.Fatalf("positions %v then %v", p1, p2)
	}
	// The room a caller leaves is passed as is, even if short: the
	// writer decides (the ledger copies then).
	want = append(want, "short")
	addHeadroom(t, ml, "short", 3)
	if _, _, short := hs.counts(); short != 1 {
		t.Fatalf("%d AddWithHeadroom calls with a short room, want 1", short)
	}
	check := func(when string, got []string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: read %q, want %q", when, got, want)
		}
	}
	check("from the cache", datas(readAll(t, c)))
	e.restart() // an empty cache: entries come from the ledger store
	ml = e.open("t/headroom", testConfig())
	c2, err := ml.NewNonDurableCursor("r", mledger.Earliest)
	if err != nil {
		t.Fatal(err)
	}
	check("from the store", datas(readAll(t, c2)))
}
