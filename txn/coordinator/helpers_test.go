package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/txn"
)

// memLog is an in-memory Log. Callbacks run on a goroutine of their own,
// in Append order, as a managed ledger's do. crash() freezes it: appends
// fail from then on, and clone() gives what a restarted process reads.
type memLog struct {
	mu      sync.Mutex
	recs    []memRec
	next    int64
	trimmed Pos
	crashed bool
	queue   chan func()
	closed  bool
}

type memRec struct {
	p Pos
	b []byte
}

func newMemLog(recs []memRec) *memLog {
	l := &memLog{recs: recs, queue: make(chan func(), 1024)}
	if len(recs) > 0 {
		l.next = recs[len(recs)-1].p.Entry + 1
	}
	go func() {
		for f := range l.queue {
			f()
		}
	}()
	return l
}

func (l *memLog) Append(rec []byte, cb func(Pos, error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.crashed || l.closed {
		l.queue <- func() { cb(Pos{}, errors.New("memlog: crashed or closed")) }
		return
	}
	p := Pos{Ledger: 1, Entry: l.next}
	l.next++
	l.recs = append(l.recs, memRec{p, slices.Clone(rec)})
	l.queue <- func() { cb(p, nil) }
}

func (l *memLog) Replay(_ context.Context, fn func(Pos, []byte) error) error {
	l.mu.Lock()
	recs := slices.Clone(l.recs)
	l.mu.Unlock()
	for _, r := range recs {
		if err := fn(r.p, r.b); err != nil {
			return err
		}
	}
	return nil
}

func (l *memLog) TrimBefore(_ context.Context, p Pos) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.crashed {
		return errors.New("memlog: crashed")
	}
	i := 0
	for i < len(l.recs) && l.recs[i].p.Less(p) {
		i++
	}
	l.recs = l.recs[i:]
	l.trimmed = p
	return nil
}

func (l *memLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return nil
}

// crash freezes the log and returns the records a restart reads.
func (l *memLog) crash() []memRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.crashed = true
	return slices.Clone(l.recs)
}

func (l *memLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs)
}

// call is one participant invocation.
type call struct {
	topic, sub string
	id         txn.ID
	a          txn.Action
}

// fakeParticipant records calls; while failing is set it returns an
// error, and every call is also sent to calls (if not nil).
type fakeParticipant struct {
	mu      sync.Mutex
	log     []call
	failing bool
	calls   chan call
	// hold, when set, keeps every end from returning (after it was sent
	// on calls) until hold is closed: the transaction stays ending.
	hold chan struct{}
}

func (f *fakeParticipant) do(c call) error {
	f.mu.Lock()
	failing := f.failing
	if !failing {
		f.log = append(f.log, c)
	}
	f.mu.Unlock()
	if failing {
		return fmt.Errorf("participant down")
	}
	if f.calls != nil {
		f.calls <- c
	}
	if f.hold != nil {
		<-f.hold
	}
	return nil
}

func (f *fakeParticipant) EndOnPartition(_ context.Context, topic string, id txn.ID, a txn.Action) error {
	return f.do(call{topic: topic, id: id, a: a})
}

func (f *fakeParticipant) EndOnSubscription(_ context.Context, topic, sub string, id txn.ID, a txn.Action) error {
	return f.do(call{topic: topic, sub: sub, id: id, a: a})
}

func (f *fakeParticipant) setFailing(v bool) {
	f.mu.Lock()
	f.failing = v
	f.mu.Unlock()
}

func (f *fakeParticipant) calls0() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// joinHeldEnd: while p holds the end of id, an End the same way joins it
// (it is still waiting at a short deadline); once p lets go, End returns
// when the transaction has ended (nil), or, if that end was logged
// first, TransactionNotFound.
func joinHeldEnd(t *testing.T, c *Coordinator, p *fakeParticipant, id txn.ID, a txn.Action) {
	t.Helper()
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err := c.End(short, id, a)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("END %v while the held end runs returned %v, want it to wait", a, err)
	}
	close(p.hold)
	if err := c.End(context.Background(), id, a); err != nil && !errors.Is(err, ErrTxnNotFound) {
		t.Fatalf("END %v once the end was let go: %v", a, err)
	}
}
