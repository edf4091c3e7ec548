// Package memstore is an in-memory mledger.LedgerStore for tests and
// benchmarks, with fault hooks (failing creates and adds) and counters of
// what was written.
//
// It models the parts of BookKeeper semantics the managed ledger relies on:
// a ledger has one writer; add callbacks run in entry order on a goroutine
// owned by the ledger (never inside AddAsync); after a failed add every later
// add on that ledger fails; Open runs "recovery", which fences the writer
// (its later adds fail with ErrFenced) and closes the ledger at the entries
// stored so far, which may include adds whose callbacks had not run yet
// (maybe-delivered, never lost-after-ack).
package memstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/mledger"
)

// Errors.
var (
	// ErrInjected is returned by hooks installed with FailNextAdds or
	// FailNextCreates.
	ErrInjected = errors.New("memstore: injected fault")
	// ErrFenced: the ledger was opened (recovered) by someone else.
	ErrFenced = errors.New("memstore: ledger fenced")
	// ErrNoLedger: no ledger with that id.
	ErrNoLedger = errors.New("memstore: no such ledger")
	// ErrLedgerClosed: add or close on a closed ledger.
	ErrLedgerClosed = errors.New("memstore: ledger closed")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("memstore: store closed")
	// ErrBadRange: a read outside the ledger's entries.
	ErrBadRange = errors.New("memstore: read out of range")
)

var _ mledger.LedgerStore = (*Store)(nil)

// Store is an in-memory ledger store. Safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	nextID   int64
	ledgers  map[int64]*ledgerData
	writers  map[*writer]struct{}
	closed   bool
	createFn func() error
	addFn    func(ledgerID, entryID int64) error

	failCreates atomic.Int64
	failAdds    atomic.Int64

	wg sync.WaitGroup

	// Counters.
	bytesAdded  atomic.Int64
	entriesAdd  atomic.Int64
	entriesRead atomic.Int64
	creates     atomic.Int64
	deletes     atomic.Int64
}

type ledgerData struct {
	mu      sync.Mutex
	entries [][]byte
	length  int64
	closed  bool
	fenced  bool
	lastID  int64 // final last entry id once closed
}

// New returns an empty store. Ledger ids start at 1.
func New() *Store {
	return &Store{nextID: 1, ledgers: map[int64]*ledgerData{}, writers: map[*writer]struct{}{}}
}

// FailNextCreates makes the next n Create calls fail with ErrInjected.
func (s *Store) FailNextCreates(n int) { s.failCreates.Store(int64(n)) }

// FailNextAdds makes the next n AddAsync calls (on any ledger) fail with
// ErrInjected. As with BookKeeper, a ledger stays failed afterwards.
func (s *Store) FailNextAdds(n int) { s.failAdds.Store(int64(n)) }

// SetAddHook installs fn, called for every add before it is stored; a
// non-nil error fails the add. nil removes the hook.
func (s *Store) SetAddHook(fn func(ledgerID, entryID int64) error) {
	s.mu.Lock()
	s.addFn = fn
	s.mu.Unlock()
}

// SetCreateHook installs fn, called on every Create; a non-nil error fails it.
func (s *Store) SetCreateHook(fn func() error) {
	s.mu.Lock()
	s.createFn = fn
	s.mu.Unlock()
}

// BytesAdded returns the total payload bytes added to all ledgers.
func (s *Store) BytesAdded() int64 { return s.bytesAdded.Load() }

// EntriesAdded returns the number of successful adds.
func (s *Store) EntriesAdded() int64 { return s.entriesAdd.Load() }

// EntriesRead returns the number of entries returned by reads.
func (s *Store) EntriesRead() int64 { return s.entriesRead.Load() }

// Creates returns the number of ledgers created.
func (s *Store) Creates() int64 { return s.creates.Load() }

// Ledgers returns the ids of the existing ledgers, ascending.
func (s *Store) Ledgers() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.ledgers))
	for id := range s.ledgers {
		ids = append(ids, id)
	}
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	return ids
}

// Exists reports whether ledger id exists.
func (s *Store) Exists(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ledgers[id]
	return ok
}

// Create implements mledger.LedgerStore.
func (s *Store) Create(ctx context.Context) (mledger.WriteLedger, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.failCreates.Load() > 0 && s.failCreates.Add(-1) >= 0 {
		return nil, ErrInjected
	}
	s.mu.Lock()
	hook := s.createFn
	s.mu.Unlock()
	if hook != nil {
		if err := hook(); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	id := s.nextID
	s.nextID++
	d := &ledgerData{lastID: -1}
	s.ledgers[id] = d
	w := &writer{s: s, id: id, d: d}
	w.lac.Store(-1)
	s.writers[w] = struct{}{}
	s.creates.Add(1)
	return w, nil
}

// Open implements mledger.LedgerStore: it recovers (fences and closes) an
// open ledger.
func (s *Store) Open(ctx context.Context, id int64) (mledger.ReadLedger, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	d, ok := s.ledgers[id]
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if !ok {
		return nil, fmt.Errorf("ledger %d: %w", id, ErrNoLedger)
	}
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		d.fenced = true
		d.lastID = int64(len(d.entries)) - 1
	}
	d.mu.Unlock()
	return &reader{s: s, id: id, d: d}, nil
}

// Delete implements mledger.LedgerStore.
func (s *Store) Delete(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ok := s.ledgers[id]; ok {
		s.deletes.Add(1)
	}
	delete(s.ledgers, id)
	return nil
}

// Close stops every writer's completion goroutine (pending adds fail with
// ErrClosed) and waits for them.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ws := make([]*writer, 0, len(s.writers))
	for w := range s.writers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
	s.wg.Wait()
	return nil
}

func (s *Store) read(ctx context.Context, d *ledgerData, id, first, last, limit int64) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	_, ok := s.ledgers[id]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("ledger %d: %w", id, ErrNoLedger)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if first < 0 || last < first || last > limit || last >= int64(len(d.entries)) {
		return nil, fmt.Errorf("ledger %d read %d..%d (last %d): %w", id, first, last, limit, ErrBadRange)
	}
	out := make([][]byte, last-first+1)
	copy(out, d.entries[first:last+1])
	s.entriesRead.Add(last - first + 1)
	return out, nil
}

type completion struct {
	id  int64
	err error
	cb  func(int64, error)
}

type writer struct {
	s   *Store
	id  int64
	d   *ledgerData
	lac atomic.Int64

	mu sync.Mutex
	// cond is made by the first Close that waits (an open ledger's
	// writer is most of what a live topic costs this store).
	cond     *sync.Cond
	queue    []completion
	spare    []completion // the other buffer, reused by run while busy
	inflight int
	failed   error
	closing  bool
	stopped  bool
	// running: a run goroutine delivers the queue. It is started by the
	// add that finds none and returns once the queue is empty, so an
	// idle open ledger holds no goroutine (as ledger.WriteHandle).
	running bool
}

func (w *writer) ID() int64               { return w.id }
func (w *writer) LastAddConfirmed() int64 { return w.lac.Load() }

func (w *writer) AddAsync(data []byte, cb func(int64, error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := completion{id: -1, cb: cb}
	switch {
	case w.stopped:
		c.err = ErrClosed
	case w.closing:
		c.err = ErrLedgerClosed
	case w.failed != nil:
		c.err = w.failed
	}
	if c.err == nil && w.s.failAdds.Load() > 0 && w.s.failAdds.Add(-1) >= 0 {
		c.err = ErrInjected
	}
	if c.err == nil {
		w.s.mu.Lock()
		hook := w.s.addFn
		w.s.mu.Unlock()
		w.d.mu.Lock()
		next := int64(len(w.d.entries))
		switch {
		case w.d.fenced:
			c.err = ErrFenced
		case w.d.closed:
			c.err = ErrLedgerClosed
		case hook != nil:
			c.err = hook(w.id, next)
		}
		if c.err == nil {
			w.d.entries = append(w.d.entries, data)
			w.d.length += int64(len(data))
			c.id = next
			w.s.bytesAdded.Add(int64(len(data)))
			w.s.entriesAdd.Add(1)
		}
		w.d.mu.Unlock()
	}
	if c.err != nil {
		w.failed = c.err
	}
	w.queue = append(w.queue, c)
	w.inflight++
	if !w.running {
		w.running = true
		w.s.mu.Lock()
		tracked := !w.s.closed // Close waits for the runs it may see
		if tracked {
			w.s.wg.Add(1)
		}
		w.s.mu.Unlock()
		go w.run(tracked)
	}
}

// run delivers completions in order; it returns once the queue is
// empty (the next add starts another).
func (w *writer) run(tracked bool) {
	if tracked {
		defer w.s.wg.Done()
	}
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.running = false
			w.queue, w.spare = nil, nil // an idle ledger keeps no buffer
			w.broadcast()
			w.mu.Unlock()
			return
		}
		q := w.queue
		w.queue = w.spare[:0]
		w.spare = nil
		stopped := w.stopped
		w.mu.Unlock()
		for _, c := range q {
			if stopped && c.err == nil {
				c.err, c.id = ErrClosed, -1
			}
			if c.err == nil {
				w.lac.Store(c.id)
			}
			c.cb(c.id, c.err)
		}
		clear(q)
		w.mu.Lock()
		w.inflight -= len(q)
		w.spare = q[:0]
		w.broadcast()
		w.mu.Unlock()
	}
}

func (w *writer) stop() {
	w.mu.Lock()
	w.stopped = true
	w.broadcast()
	w.mu.Unlock()
}

// broadcast wakes a waiting Close, if any (w.mu held).
func (w *writer) broadcast() {
	if w.cond != nil {
		w.cond.Broadcast()
	}
}

func (w *writer) Read(ctx context.Context, first, last int64) ([][]byte, error) {
	return w.s.read(ctx, w.d, w.id, first, last, w.lac.Load())
}

// Close waits for pending adds, then for the completion goroutine to
// return (as ledger.WriteHandle's Close does: a closed handle holds no
// goroutine), and closes the ledger at LastAddConfirmed.
func (w *writer) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closing = true
	if w.cond == nil {
		w.cond = sync.NewCond(&w.mu)
	}
	for w.inflight > 0 && !w.stopped {
		w.cond.Wait()
	}
	w.stopped = true
	for w.running {
		w.cond.Wait()
	}
	w.mu.Unlock()
	w.s.mu.Lock()
	delete(w.s.writers, w)
	w.s.mu.Unlock()
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	if w.d.fenced {
		return fmt.Errorf("ledger %d: %w", w.id, ErrFenced)
	}
	if !w.d.closed {
		w.d.closed = true
		w.d.lastID = w.lac.Load()
		// Entries stored beyond LAC (their adds failed) are not part of
		// the closed ledger.
		w.d.entries = w.d.entries[:w.d.lastID+1]
		var n int64
		for _, e := range w.d.entries {
			n += int64(len(e))
		}
		w.d.length = n
	}
	return nil
}

type reader struct {
	s  *Store
	id int64
	d  *ledgerData
}

func (r *reader) ID() int64 { return r.id }
func (r *reader) LastAddConfirmed() int64 {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	return r.d.lastID
}
func (r *reader) Length() int64 {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	var n int64
	for _, e := range r.d.entries[:r.d.lastID+1] {
		n += int64(len(e))
	}
	return n
}
func (r *reader) Read(ctx context.Context, first, last int64) ([][]byte, error) {
	return r.s.read(ctx, r.d, r.id, first, last, r.LastAddConfirmed())
}
func (r *reader) Close() error { return nil }
