package mledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

func TestAddReadTailFromCache(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/add", testConfig())
	c, err := ml.OpenCursor(ctxT(t), "sub", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	if got := ml.GetLastPosition(); got.EntryID != -1 {
		t.Fatalf("GetLastPosition on empty = %v, want entry -1", got)
	}
	pos := addMany(t, ml, "m", 50)
	es := readAll(t, c)
	if len(es) != 50 {
		t.Fatalf("read %d entries, want 50", len(es))
	}
	for i, en := range es {
		if en.Pos != pos[i] || string(en.Data) != fmt.Sprintf("m-%d", i) {
			t.Fatalf("entry %d = %v %q, want %v m-%d", i, en.Pos, en.Data, pos[i], i)
		}
	}
	if n := e.store.EntriesRead(); n != 0 {
		t.Fatalf("tailing read hit the ledger store for %d entries, want 0 (cache)", n)
	}
	if got := ml.GetLastPosition(); got != pos[49] {
		t.Fatalf("GetLastPosition = %v, want %v", got, pos[49])
	}
	if st := ml.Stats(); st.EntriesAddedCounter != 50 || st.NumberOfEntries != 50 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestCursorInitialPositions(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/init", testConfig())
	addMany(t, ml, "a", 3)
	ctx := ctxT(t)
	latest, _ := ml.OpenCursor(ctx, "latest", mledger.InitialLatest)
	earliest, _ := ml.OpenCursor(ctx, "earliest", mledger.InitialEarliest)
	p3 := add(t, ml, "b", 1)
	if got := datas(readAll(t, latest)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("latest cursor read %v, want [b]", got)
	}
	if got := readAll(t, earliest); len(got) != 4 {
		t.Fatalf("earliest cursor read %d, want 4", len(got))
	}
	// An existing cursor ignores the initial position.
	again, _ := ml.OpenCursor(ctx, "latest", mledger.InitialEarliest)
	if again != latest {
		t.Fatal("OpenCursor of an existing cursor returned a new one")
	}
	// Non-durable, inclusive start.
	nd, err := ml.NewNonDurableCursor("reader", p3)
	if err != nil {
		t.Fatal(err)
	}
	if got := datas(readAll(t, nd)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("non-durable from %v read %v, want [b]", p3, got)
	}
	nd2, _ := ml.NewNonDurableCursor("reader2", mledger.Earliest)
	if got := readAll(t, nd2); len(got) != 4 {
		t.Fatalf("non-durable earliest read %d, want 4", len(got))
	}
	nd3, _ := ml.NewNonDurableCursor("reader3", mledger.Latest)
	if got := readAll(t, nd3); len(got) != 0 {
		t.Fatalf("non-durable latest read %d, want 0", len(got))
	}
	if _, err := ml.NewNonDurableCursor("reader", p3); !errors.Is(err, mledger.ErrCursorExists) {
		t.Fatalf("duplicate non-durable cursor: err = %v", err)
	}
}

func TestRollover(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     mledger.Config
		adds    int
		advance time.Duration
		minLeds int
	}{
		{"entries", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 10}, 35, 0, 4},
		{"size", mledger.Config{MinLedgerRolloverTime: -1, MaxSizePerLedger: 40}, 30, 0, 3},
		{"min-time-blocks", mledger.Config{MinLedgerRolloverTime: time.Hour, MaxEntriesPerLedger: 10}, 35, 0, 1},
		{"age", mledger.Config{MinLedgerRolloverTime: -1, MaxLedgerRolloverTime: time.Minute}, 5, 2 * time.Minute, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ml := e.open("t/roll", tc.cfg)
			c, _ := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
			addMany(t, ml, "x", tc.adds)
			if tc.advance > 0 {
				e.clock.Advance(tc.advance)
				e.f.Tick(ctxT(t))
				add(t, ml, "after", 1)
				tc.adds++
			}
			st := ml.Stats()
			if len(st.Ledgers) < tc.minLeds {
				t.Fatalf("%d ledgers (%+v), want >= %d", len(st.Ledgers), st.Ledgers, tc.minLeds)
			}
			if tc.name == "min-time-blocks" && len(st.Ledgers) != 1 {
				t.Fatalf("rolled before MinLedgerRolloverTime: %+v", st.Ledgers)
			}
			if got := len(readAll(t, c)); got != tc.adds {
				t.Fatalf("read %d entries across ledgers, want %d", got, tc.adds)
			}
			// The info lists the same ledgers after a restart.
			e.restart()
			ml = e.open("t/roll", tc.cfg)
			st2 := ml.Stats()
			if st2.NumberOfEntries != int64(tc.adds) {
				t.Fatalf("after restart %d entries, want %d", st2.NumberOfEntries, tc.adds)
			}
		})
	}
}

func TestAddsDuringRolloverAreQueued(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/q", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 5})
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	e.store.SetCreateHook(func() error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return nil
	})
	var mu sync.Mutex
	var got []mledger.Position
	var wg sync.WaitGroup
	wg.Add(20)
	for i := range 20 {
		ml.AddEntry([]byte(fmt.Sprint(i)), 1, func(p mledger.Position, err error) {
			if err != nil {
				t.Errorf("add %d: %v", i, err)
			}
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
			wg.Done()
		})
	}
	<-entered // rollover is blocked in Create; later adds are queued
	e.store.SetCreateHook(nil)
	close(release)
	wg.Wait()
	for i := 1; i < len(got); i++ {
		if !got[i-1].Less(got[i]) {
			t.Fatalf("callbacks out of order: %v", got)
		}
	}
	if n := len(ml.Stats().Ledgers); n < 4 {
		t.Fatalf("%d ledgers, want >= 4", n)
	}
}

func TestAddFailureRollsToNewLedger(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/fail", testConfig())
	c, _ := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
	first := addMany(t, ml, "a", 10)
	e.store.FailNextAdds(1)
	second := addMany(t, ml, "b", 10)
	if second[0].LedgerID == first[0].LedgerID {
		t.Fatalf("failed add did not move to a new ledger: %v", second[0])
	}
	es := readAll(t, c)
	want := append(slices.Clone(first), second...)
	if len(es) != len(want) {
		t.Fatalf("read %d, want %d", len(es), len(want))
	}
	for i := range es {
		if es[i].Pos != want[i] {
			t.Fatalf("entry %d at %v, want %v", i, es[i].Pos, want[i])
		}
	}
	// Everything acked survives a restart.
	e.restart()
	ml = e.open("t/fail", testConfig())
	c = ml.Cursor("s")
	if got := len(readAll(t, c)); got != 20 {
		t.Fatalf("after restart read %d, want 20", got)
	}
}

func TestCreateFailureFailsAddsThenRecovers(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/cf", testConfig())
	add(t, ml, "a", 1)
	e.store.FailNextAdds(1)
	e.store.FailNextCreates(1)
	ch := make(chan error, 1)
	ml.AddEntry([]byte("b"), 1, func(_ mledger.Position, err error) { ch <- err })
	if err := <-ch; !errors.Is(err, mledger.ErrWriteFailed) {
		t.Fatalf("add with failing create: err = %v, want ErrWriteFailed", err)
	}
	p := add(t, ml, "c", 1)
	c, _ := ml.NewNonDurableCursor("r", mledger.Earliest)
	if got := datas(readAll(t, c)); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("read %v, want [a c] (c at %v)", got, p)
	}
}

func TestTerminate(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/term", testConfig())
	pos := addMany(t, ml, "a", 3)
	last, err := ml.Terminate(ctxT(t))
	if err != nil || last != pos[2] {
		t.Fatalf("Terminate = %v, %v; want %v", last, err, pos[2])
	}
	ch := make(chan error, 1)
	ml.AddEntry([]byte("x"), 1, func(_ mledger.Position, err error) { ch <- err })
	if err := <-ch; !errors.Is(err, mledger.ErrTerminated) {
		t.Fatalf("add after terminate: %v", err)
	}
	e.restart()
	ml = e.open("t/term", testConfig())
	if !ml.IsTerminated() || ml.GetLastPosition() != pos[2] {
		t.Fatalf("after restart terminated=%v last=%v", ml.IsTerminated(), ml.GetLastPosition())
	}
	ml.AddEntry([]byte("x"), 1, func(_ mledger.Position, err error) { ch <- err })
	if err := <-ch; !errors.Is(err, mledger.ErrTerminated) {
		t.Fatalf("add after restart of terminated: %v", err)
	}
}

func TestFencedByNewOwner(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/fence", testConfig())
	add(t, ml, "a", 1)
	// A second broker (factory) opens the same managed ledger.
	f2 := e.newFactory()
	defer f2.Close()
	ml2, err := f2.Open(ctxT(t), "t/fence", testConfig())
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	ml.AddEntry([]byte("old"), 1, func(_ mledger.Position, err error) { ch <- err })
	if err := <-ch; err == nil {
		t.Fatal("old owner's add succeeded after fencing")
	}
	p := add(t, ml2, "new", 1)
	c, _ := ml2.NewNonDurableCursor("r", mledger.Earliest)
	if got := datas(readAll(t, c)); !slices.Equal(got, []string{"a", "new"}) {
		t.Fatalf("new owner reads %v, want [a new] (new at %v)", got, p)
	}
}

func TestReadEntriesOrWaitWakesOnAdd(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/wait", testConfig())
	c, _ := ml.OpenCursor(ctxT(t), "s", mledger.InitialLatest)
	ch := c.WaitForEntries()
	select {
	case <-ch:
		t.Fatal("WaitForEntries closed with nothing to read")
	default:
	}
	done := make(chan []mledger.Entry)
	go func() {
		es, err := c.ReadEntriesOrWait(ctxT(t), 10)
		if err != nil {
			t.Error(err)
		}
		done <- es
	}()
	add(t, ml, "hello", 1)
	if es := <-done; len(es) != 1 || string(es[0].Data) != "hello" {
		t.Fatalf("ReadEntriesOrWait = %v", datas(es))
	}
	<-ch // the earlier channel fired too
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.ReadEntriesOrWait(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadEntriesOrWait with cancelled ctx: %v", err)
	}
}

func TestFindByPublishTimeAndReset(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/time", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 7})
	var pos []mledger.Position
	for i := range 30 {
		pos = append(pos, add(t, ml, fmt.Sprintf("%04d", i*10), 1)) // publish time = i*10
	}
	pt := func(b []byte) (int64, error) {
		var v int64
		_, err := fmt.Sscanf(string(b), "%d", &v)
		return v, err
	}
	c, _ := ml.OpenCursor(ctxT(t), "s", mledger.InitialLatest)
	for _, tc := range []struct {
		t     int64
		want  int
		found bool
	}{{0, 0, true}, {5, 1, true}, {10, 1, true}, {155, 16, true}, {290, 29, true}, {291, 30, false}} {
		got, found, err := ml.FindByPublishTime(ctxT(t), tc.t, pt)
		if err != nil {
			t.Fatal(err)
		}
		if found != tc.found || (found && got != pos[tc.want]) {
			t.Fatalf("FindByPublishTime(%d) = %v,%v; want %v,%v", tc.t, got, found, tc.want, tc.found)
		}
	}
	p, err := c.ResetByPublishTime(ctxT(t), 155, pt)
	if err != nil || p != pos[16] {
		t.Fatalf("ResetByPublishTime = %v, %v", p, err)
	}
	if got := len(readAll(t, c)); got != 14 {
		t.Fatalf("after reset read %d, want 14", got)
	}
	if b := c.NumberOfEntriesInBacklog(); b != 14 {
		t.Fatalf("backlog after reset = %d, want 14", b)
	}
}

func TestTerminateEmptyAndBacklogAfterRestart(t *testing.T) {
	e := newEnv(t)
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 4}
	empty := e.open("t/empty", cfg)
	if _, err := empty.Terminate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	ml := e.open("t/msgs", cfg)
	c, _ := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
	for i := range 10 {
		add(t, ml, fmt.Sprint(i), 5)
	}
	pos := ml.GetLastPosition()
	_ = c.Delete(pos)
	be, bm := c.Backlog()
	if be != 9 || bm != 45 {
		t.Fatalf("backlog %d/%d, want 9/45", be, bm)
	}
	e.restart()
	empty = e.open("t/empty", cfg)
	if p := empty.GetLastPosition(); p.EntryID != -1 || !empty.IsTerminated() {
		t.Fatalf("empty terminated ledger after restart: last %v terminated %v", p, empty.IsTerminated())
	}
	ml = e.open("t/msgs", cfg)
	// Per-ledger message totals survive a clean restart, so the message
	// backlog is still exact when each ledger's entries are uniform.
	if be2, bm2 := ml.Cursor("s").Backlog(); be2 != be || bm2 != bm {
		t.Fatalf("after restart backlog %d/%d, want %d/%d", be2, bm2, be, bm)
	}
}

func TestDeleteManagedLedgerAndList(t *testing.T) {
	e := newEnv(t)
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 3}
	ctx := ctxT(t)
	keep := e.open("a/keep", cfg)
	add(t, keep, "k", 1)
	ml := e.open("a/gone", cfg)
	c, _ := ml.OpenCursor(ctx, "s", mledger.InitialEarliest)
	pos := addMany(t, ml, "m", 10)
	_ = c.Delete(pos[4])
	_ = c.Flush(ctx)
	if names, err := e.f.List(ctx); err != nil || !slices.Equal(names, []string{"a/gone", "a/keep"}) {
		t.Fatalf("List = %v, %v", names, err)
	}
	before := len(e.store.Ledgers())
	if err := ml.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if names, _ := e.f.List(ctx); !slices.Equal(names, []string{"a/keep"}) {
		t.Fatalf("List after Delete = %v", names)
	}
	if n := len(e.store.Ledgers()); n != len(keep.Stats().Ledgers) {
		t.Fatalf("%d ledgers left (of %d), want only a/keep's", n, before)
	}
	// Opening the name again starts empty.
	ml = e.open("a/gone", cfg)
	if ml.Cursor("s") != nil || ml.Stats().NumberOfEntries != 0 {
		t.Fatalf("recreated managed ledger is not empty: %+v", ml.Stats())
	}
}

func TestWaitForEntriesWakesOnRewind(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/rewind", testConfig())
	c, _ := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
	addMany(t, ml, "m", 3)
	if got := len(readAll(t, c)); got != 3 {
		t.Fatalf("read %d", got)
	}
	ch := c.WaitForEntries()
	select {
	case <-ch:
		t.Fatal("closed with nothing to read")
	default:
	}
	c.Rewind() // the 3 unacked entries are readable again
	<-ch
	if got := len(readAll(t, c)); got != 3 {
		t.Fatalf("after Rewind read %d, want 3", got)
	}
}
