package coordinator

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/txn"
)

func open(t *testing.T, id uint64, l *memLog, p txn.Participant) *Coordinator {
	t.Helper()
	c, err := Open(context.Background(), Config{ID: id, Log: l, Participant: p, TrimInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCommitAbortRoundTrip(t *testing.T) {
	ctx := context.Background()
	p := &fakeParticipant{}
	c := open(t, 7, newMemLog(nil), p)
	defer c.Close()
	a, err := c.NewTxn(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.NewTxn(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if a != (txn.ID{Most: 7, Least: 1}) || b != (txn.ID{Most: 7, Least: 2}) {
		t.Fatalf("ids %s %s, want (7,1) (7,2)", a, b)
	}
	if err := c.AddPartitions(ctx, a, []string{"t1", "t2", "t1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddSubscriptions(ctx, a, []SubRef{{"in", "s"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions(ctx, b, []string{"t3"}); err != nil {
		t.Fatal(err)
	}
	info, err := c.Txn(a)
	if err != nil || info.Status != StatusOpen || !slices.Equal(info.Partitions, []string{"t1", "t2"}) || len(info.Subscriptions) != 1 {
		t.Fatalf("info %+v err %v", info, err)
	}
	if err := c.End(ctx, a, txn.Commit); err != nil {
		t.Fatal(err)
	}
	if err := c.End(ctx, b, txn.Abort); err != nil {
		t.Fatal(err)
	}
	got := p.calls0()
	want := map[call]bool{
		{topic: "t1", id: a, a: txn.Commit}: true, {topic: "t2", id: a, a: txn.Commit}: true,
		{topic: "in", sub: "s", id: a, a: txn.Commit}: true, {topic: "t3", id: b, a: txn.Abort}: true,
	}
	if len(got) != len(want) {
		t.Fatalf("participant calls %+v", got)
	}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("unexpected participant call %+v", g)
		}
	}
	// An ended transaction is gone, as in Pulsar: ending it again either
	// way is TransactionNotFound, and the message names the outcome.
	if err := c.End(ctx, a, txn.Commit); !errors.Is(err, ErrTxnNotFound) || !strings.Contains(err.Error(), "COMMITTED") {
		t.Fatalf("second commit: %v, want ErrTxnNotFound naming COMMITTED", err)
	}
	if err := c.End(ctx, a, txn.Abort); !errors.Is(err, ErrTxnNotFound) {
		t.Fatalf("abort after commit: %v", err)
	}
	if err := c.End(ctx, b, txn.Abort); !errors.Is(err, ErrTxnNotFound) {
		t.Fatalf("second abort: %v", err)
	}
	if err := c.AddPartitions(ctx, a, []string{"t9"}); !errors.Is(err, ErrInvalidStatus) {
		t.Fatalf("add after commit: %v", err)
	}
	if err := c.End(ctx, txn.ID{Most: 7, Least: 99}, txn.Commit); !errors.Is(err, ErrTxnNotFound) {
		t.Fatalf("unknown txn: %v", err)
	}
	if err := c.End(ctx, txn.ID{Most: 8, Least: 1}, txn.Commit); !errors.Is(err, ErrWrongCoordinator) {
		t.Fatalf("other coordinator: %v", err)
	}
	if err := c.End(ctx, a, txn.Action(5)); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("bad action: %v", err)
	}
	if err := c.AddPartitions(ctx, b, []string{""}); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("empty topic: %v", err)
	}
	st := c.Stats()
	if st.CreatedCount != 2 || st.CommittedCount != 1 || st.AbortedCount != 1 || st.OngoingTxnSize != 0 || st.LeastSigBits != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// A crash leaves one transaction open and one committing (its participant
// was down): the restarted coordinator keeps the first open and ends the
// second, and hands out no sequence twice.
func TestRecoveryAfterCrash(t *testing.T) {
	ctx := context.Background()
	p := &fakeParticipant{}
	l := newMemLog(nil)
	c := open(t, 3, l, p)
	open1, _ := c.NewTxn(ctx, time.Hour)
	if err := c.AddPartitions(ctx, open1, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	committing, _ := c.NewTxn(ctx, time.Hour)
	if err := c.AddPartitions(ctx, committing, []string{"b", "c"}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddSubscriptions(ctx, committing, []SubRef{{"in", "sub"}}); err != nil {
		t.Fatal(err)
	}
	for range 5 { // ended transactions, then trimmed
		id, _ := c.NewTxn(ctx, time.Hour)
		if err := c.End(ctx, id, txn.Abort); err != nil {
			t.Fatal(err)
		}
	}
	p.setFailing(true)
	ectx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if err := c.End(ectx, committing, txn.Commit); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit with the participant down: %v", err)
	}
	cancel()
	recs := l.crash() // kill -9: the process is gone, the log stays
	c.Close()

	p2 := &fakeParticipant{calls: make(chan call, 16), hold: make(chan struct{})}
	c2 := open(t, 3, newMemLog(recs), p2)
	defer c2.Close()
	seen := map[string]bool{}
	for range 3 {
		got := <-p2.calls
		if got.id != committing || got.a != txn.Commit {
			t.Fatalf("recovery ended %+v", got)
		}
		seen[got.topic+"/"+got.sub] = true
	}
	if !seen["b/"] || !seen["c/"] || !seen["in/sub"] {
		t.Fatalf("recovery ended %v", seen)
	}
	// The participants hold the recovered commit: the client's retried
	// commit joins it, as Pulsar's does while COMMITTING.
	joinHeldEnd(t, c2, p2, committing, txn.Commit)
	if _, err := c2.Txn(committing); !errors.Is(err, ErrTxnNotFound) || !strings.Contains(err.Error(), "COMMITTED") {
		t.Fatalf("the recovered transaction after its commit: %v, want ended (COMMITTED)", err)
	}
	info, err := c2.Txn(open1)
	if err != nil || info.Status != StatusOpen || !slices.Equal(info.Partitions, []string{"a"}) {
		t.Fatalf("open transaction after recovery: %+v %v", info, err)
	}
	next, err := c2.NewTxn(ctx, time.Hour)
	if err != nil || next.Least != 8 {
		t.Fatalf("next id %s %v, want (3,8)", next, err)
	}
	if err := c2.End(ctx, open1, txn.Commit); err != nil {
		t.Fatal(err)
	}
}

// The sequence survives the log being trimmed to its last record.
func TestSequenceSurvivesTrim(t *testing.T) {
	ctx := context.Background()
	l := newMemLog(nil)
	c := open(t, 0, l, &fakeParticipant{})
	var last txn.ID
	for range 50 {
		id, err := c.NewTxn(ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.End(ctx, id, txn.Commit); err != nil {
			t.Fatal(err)
		}
		last = id
	}
	// Wait for the trimmer to drop all but the last record.
	deadline := time.Now().Add(10 * time.Second)
	for l.len() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("log still holds %d records", l.len())
		}
		time.Sleep(5 * time.Millisecond) // polls the trimmer, which has no signal
	}
	recs := l.crash()
	c.Close()
	c2 := open(t, 0, newMemLog(recs), &fakeParticipant{})
	defer c2.Close()
	id, err := c2.NewTxn(ctx, time.Hour)
	if err != nil || id.Least != last.Least+1 {
		t.Fatalf("after trim and restart: %s %v, want least %d", id, err, last.Least+1)
	}
}

// TestTimeoutAborts: a transaction that outlives its timeout is aborted
// on its participants; as in Pulsar, a commit while that abort is still
// running is InvalidTxnStatus (the transaction is ABORTING) and a commit
// after it ended is TransactionNotFound (an ended transaction is gone).
func TestTimeoutAborts(t *testing.T) {
	ctx := context.Background()
	p := &fakeParticipant{calls: make(chan call, 4), hold: make(chan struct{})}
	c := open(t, 1, newMemLog(nil), p)
	defer c.Close()
	long, _ := c.NewTxn(ctx, time.Hour)
	id, err := c.NewTxn(ctx, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions(ctx, id, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-p.calls:
		if got.id != id || got.a != txn.Abort || got.topic != "x" {
			t.Fatalf("timeout ended %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the timed-out transaction was not aborted")
	}
	// The participant holds the abort: the transaction is ABORTING.
	if info, err := c.Txn(id); err != nil || info.Status != StatusAborting {
		t.Fatalf("while the timeout's abort runs: %+v %v", info, err)
	}
	if err := c.End(ctx, id, txn.Commit); !errors.Is(err, ErrInvalidStatus) {
		t.Fatalf("commit while aborting: %v, want ErrInvalidStatus", err)
	}
	// An abort joins the running one.
	joinHeldEnd(t, c, p, id, txn.Abort)
	if err := c.End(ctx, id, txn.Commit); !errors.Is(err, ErrTxnNotFound) || !strings.Contains(err.Error(), "ABORTED") {
		t.Fatalf("commit after the timeout's abort: %v, want ErrTxnNotFound naming ABORTED", err)
	}
	if c.Stats().TimeoutCount != 1 {
		t.Fatalf("stats %+v", c.Stats())
	}
	if info, err := c.Txn(long); err != nil || info.Status != StatusOpen {
		t.Fatalf("the long transaction: %+v %v", info, err)
	}
}

// A ttl at the uint64 limit saturates instead of wrapping to the past.
func TestTimeoutBoundary(t *testing.T) {
	ctx := context.Background()
	c := open(t, 1, newMemLog(nil), &fakeParticipant{})
	defer c.Close()
	id, err := c.NewTxn(ctx, time.Duration(math.MaxInt64))
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	d := c.mu.txns[id.Least].deadlineMs
	c.mu.Unlock()
	if d <= time.Now().UnixMilli() {
		t.Fatalf("deadline %d is in the past", d)
	}
	if got := satAdd(math.MaxInt64-5, math.MaxUint64); got != math.MaxInt64 {
		t.Fatalf("satAdd = %d", got)
	}
	if got := satAdd(1000, 5); got != 1005 {
		t.Fatalf("satAdd = %d", got)
	}
}

func TestSequenceExhausted(t *testing.T) {
	ctx := context.Background()
	r := Record{Op: OpAborted, Seq: math.MaxUint64 - 1, MaxSeq: math.MaxUint64 - 1}
	l := newMemLog([]memRec{{Pos{1, 0}, r.Encode()}})
	c := open(t, math.MaxUint64, l, &fakeParticipant{})
	defer c.Close()
	id, err := c.NewTxn(ctx, time.Minute)
	if err != nil || id != (txn.ID{Most: math.MaxUint64, Least: math.MaxUint64}) {
		t.Fatalf("last id %s %v", id, err)
	}
	if _, err := c.NewTxn(ctx, time.Minute); !errors.Is(err, ErrSequenceExhausted) {
		t.Fatalf("past the last id: %v", err)
	}
	if err := c.End(ctx, id, txn.Commit); err != nil {
		t.Fatal(err)
	}
}

func TestMaxActive(t *testing.T) {
	ctx := context.Background()
	c, err := Open(ctx, Config{ID: 2, Log: newMemLog(nil), Participant: &fakeParticipant{}, MaxActive: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, _ := c.NewTxn(ctx, time.Minute)
	c.NewTxn(ctx, time.Minute)
	if _, err := c.NewTxn(ctx, time.Minute); !errors.Is(err, ErrTooManyActive) {
		t.Fatalf("third: %v", err)
	}
	c.End(ctx, a, txn.Abort)
	if _, err := c.NewTxn(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentTransactions(t *testing.T) {
	ctx := context.Background()
	l := newMemLog(nil)
	p := &fakeParticipant{}
	c := open(t, 4, l, p)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[txn.ID]bool{}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				id, err := c.NewTxn(ctx, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				dup := ids[id]
				ids[id] = true
				mu.Unlock()
				if dup {
					t.Errorf("id %s handed out twice", id)
				}
				if err := c.AddPartitions(ctx, id, []string{"t", "u"}); err != nil {
					t.Error(err)
				}
				a := txn.Commit
				if (g+i)%2 == 1 {
					a = txn.Abort
				}
				if err := c.End(ctx, id, a); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if n := len(p.calls0()); n != 400 {
		t.Fatalf("%d participant calls, want 400", n)
	}
	recs := l.crash()
	c.Close()
	c2 := open(t, 4, newMemLog(recs), p)
	defer c2.Close()
	if st := c2.Stats(); st.OngoingTxnSize != 0 || st.LeastSigBits != 200 {
		t.Fatalf("after restart %+v", st)
	}
}

func TestRecordRoundTripAndBadInput(t *testing.T) {
	for _, r := range []Record{
		{Op: OpOpen, Seq: 1, MaxSeq: 3, TimeMillis: 12345, Timeout: math.MaxUint64},
		{Op: OpAddPartitions, Seq: math.MaxUint64, MaxSeq: math.MaxUint64, Partitions: []string{"persistent://a/b/c", "ü"}},
		{Op: OpAddSubscriptions, Seq: 2, Subs: []SubRef{{"t", "s"}, {"t2", "s2"}}},
		{Op: OpCommitting, Seq: 2}, {Op: OpAborting, Seq: 2}, {Op: OpCommitted, Seq: 2}, {Op: OpAborted, Seq: 2, TimeMillis: math.MaxInt64},
	} {
		got, err := DecodeRecord(r.Encode())
		if err != nil {
			t.Fatalf("%s: %v", r.Op, err)
		}
		if got.Op != r.Op || got.Seq != r.Seq || got.MaxSeq != r.MaxSeq || got.TimeMillis != r.TimeMillis || got.Timeout != r.Timeout ||
			!slices.Equal(got.Partitions, r.Partitions) || !slices.Equal(got.Subs, r.Subs) {
			t.Fatalf("round trip %+v -> %+v", r, got)
		}
		b := r.Encode()
		for n := range len(b) {
			if _, err := DecodeRecord(b[:n]); !errors.Is(err, ErrBadRecord) {
				t.Fatalf("%s truncated to %d: %v", r.Op, n, err)
			}
		}
		if _, err := DecodeRecord(append(b, 0)); !errors.Is(err, ErrBadRecord) {
			t.Fatalf("%s with a trailing byte: %v", r.Op, err)
		}
	}
	for _, b := range [][]byte{nil, {2, 1, 0, 0, 0, 0}, {1, 99, 0, 0, 0}, {1, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f}} {
		if _, err := DecodeRecord(b); !errors.Is(err, ErrBadRecord) {
			t.Fatalf("%x: %v", b, err)
		}
	}
	// A corrupt record stops recovery with an error instead of a silent loss.
	l := newMemLog([]memRec{{Pos{1, 0}, []byte{1, 42}}})
	if _, err := Open(context.Background(), Config{Log: l, Participant: &fakeParticipant{}}); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("open over a corrupt log: %v", err)
	}
}

func TestSlowAndTxn(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c, err := Open(ctx, Config{ID: 5, Log: newMemLog(nil), Participant: &fakeParticipant{}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	old, _ := c.NewTxn(ctx, time.Hour)
	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	young, _ := c.NewTxn(ctx, time.Hour)
	slow := c.Slow(5 * time.Second)
	if len(slow) != 1 || slow[0].ID != old {
		t.Fatalf("slow %+v", slow)
	}
	if all := c.Slow(0); len(all) != 2 || all[1].ID != young {
		t.Fatalf("slow(0) %+v", all)
	}
	if _, err := c.Txn(txn.ID{Most: 5, Least: 77}); !errors.Is(err, ErrTxnNotFound) {
		t.Fatal(err)
	}
}
