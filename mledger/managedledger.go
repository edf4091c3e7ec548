package mledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
)

type mlState int

const (
	stateReady       mlState = iota // current ledger accepts adds
	stateRolling                    // rollover in progress; adds queue
	stateWriteFailed                // no writable ledger; the next add retries creating one
	stateTerminated                 // no more adds, ever
	stateFenced                     // another owner took over
	stateClosed
)

// addOp is one AddEntry call. addOps are pooled together with their
// completion closure, so a steady stream of adds allocates nothing here.
type addOp struct {
	ml   *ManagedLedger
	data []byte
	// buf, when not nil, holds data at offset off with free room in front,
	// for a HeadroomWriter's first attempt; it is cleared once used (a
	// retry on another ledger copies: the first ledger may still read the
	// frame built in that room).
	buf     []byte
	off     int
	msgs    int32
	cb      func(Position, error)
	retries int
	ledger  int64
	done    func(entryID int64, err error) // calls ml.addComplete(op, ...)
}

var addOpPool sync.Pool

func init() {
	addOpPool.New = func() any {
		op := &addOp{}
		op.done = func(id int64, err error) { op.ml.addComplete(op, id, err) }
		return op
	}
}

func newAddOp(ml *ManagedLedger, data []byte, msgs int32, cb func(Position, error)) *addOp {
	op := addOpPool.Get().(*addOp)
	op.ml, op.data, op.msgs, op.cb, op.retries, op.ledger = ml, data, msgs, cb, 0, 0
	op.buf, op.off = nil, 0
	return op
}

// release returns op to the pool once nothing refers to it any more.
func (op *addOp) release() {
	op.ml, op.data, op.cb, op.buf = nil, nil, nil, nil
	addOpPool.Put(op)
}

// ManagedLedger is a named, unbounded log made of a chain of ledgers, with
// named cursors. See the package documentation for positions, recovery,
// rollover, trimming and locking.
//
// Safe for concurrent use.
type ManagedLedger struct {
	f     *Factory
	name  string
	path  string
	cfg   *Config // shared by the managed ledgers with the same (Factory.config)
	log   *slog.Logger
	cache *mlCache
	store LedgerStore
	meta  metadata.Store

	// rolloverTime is MaxLedgerRolloverTime plus this ledger's random 0-5%.
	rolloverTime time.Duration

	// infoMu serialises read-modify-write cycles of the info node (and the
	// I/O around them: rollover, trim, terminate, close). Lock order: see doc.go.
	infoMu      sync.Mutex
	propsHook   atomic.Pointer[func(map[string]string)] // infoprops.go
	info        *mlInfo                                 // as last persisted
	infoVersion metadata.Version

	mu       sync.RWMutex
	drained  *sync.Cond // signalled (on mu) when pending becomes empty; made by the first waitDrainedLocked
	state    mlState
	ledgers  ledgerList // live view; the last is current while writing
	current  WriteLedger
	closing  WriteLedger // the previous current ledger while rollover, Close or Terminate closes it (reads use it, never a fencing open)
	created  int64       // current ledger's creation (unix ns)
	subCount int64       // entries submitted to the current ledger
	subSize  int64       // bytes submitted to the current ledger
	pending  []*addOp    // sent to current, awaiting callbacks, in order
	retry    []*addOp    // failed on a broken ledger, to resend first
	retryErr error       // the first error among retry (logged by the rollover)
	queued   []*addOp    // waiting for a ledger
	msgSums  ledgerSums
	cursors  cursorSet
	readers  map[int64]ReadLedger
	addedCh  chan struct{} // nil until waitChLocked
	chWanted bool
	lastTrim int64 // unix ns
	// emptyBase is the ledger id used in positions while no ledger exists
	// (a terminated managed ledger whose only ledger was empty).
	emptyBase int64

	entriesAdded atomic.Int64
	wg           sync.WaitGroup // rollover goroutines

	// failed is the back-off after rollovers that could not create a
	// ledger (see writefail.go); mu.
	failed writeFailure

	// off is the tiered-storage state (offload.go); its own leaf lock.
	off offloadState

	// readBound limits what cursors read (readbound.go); nil: none.
	readBound atomic.Pointer[func() (Position, bool)]
}

func escapeName(s string) string { return url.PathEscape(s) }

func openManagedLedger(ctx context.Context, f *Factory, name string, cfg Config) (*ManagedLedger, error) {
	ml := &ManagedLedger{
		f:     f,
		name:  name,
		path:  f.opts.RootPath + "/" + escapeName(name),
		cfg:   f.config(cfg),
		log:   f.log.With("ml", name),
		cache: f.cache.register(),
		store: withQuorum(f.opts.Ledgers, cfg.Quorum, cfg.Placement),
		meta:  f.opts.Metadata,
	}
	ml.off.policy = cfg.Offload
	ml.rolloverTime = cfg.MaxLedgerRolloverTime + time.Duration(rand.Float64()*0.05*float64(cfg.MaxLedgerRolloverTime))
	if err := ml.recover(ctx); err != nil {
		ml.closeReaders()
		return nil, fmt.Errorf("mledger %s: open: %w", name, err)
	}
	return ml, nil
}

// recover runs the open sequence: read info, recover+close the last
// ledger, create a new ledger, recover cursors.
func (ml *ManagedLedger) recover(ctx context.Context) error {
	ml.infoMu.Lock()
	defer ml.infoMu.Unlock()
	data, ver, err := ml.meta.Get(ctx, ml.path)
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		ml.info = &mlInfo{}
		if ver, err = ml.meta.Put(ctx, ml.path, appendInfo(nil, ml.info), metadata.NotExists); err != nil {
			if errors.Is(err, metadata.ErrExists) {
				return ErrFenced
			}
			return err
		}
	case err != nil:
		return err
	default:
		if _, ml.info, err = decodeInfo(data); err != nil {
			return err
		}
	}
	ml.infoVersion = ver
	next := ml.info.clone()
	var deleteEmpty int64 = -1
	if n := len(next.ledgers); n > 0 {
		last := &next.ledgers[n-1]
		rl, err := ml.store.Open(ctx, last.LedgerID)
		if err != nil {
			return fmt.Errorf("recover ledger %d: %w", last.LedgerID, err)
		}
		last.Entries = rl.LastAddConfirmed() + 1
		last.Size = rl.Length()
		if last.Messages < last.Entries {
			// Message counts of an unclean ledger are unknown: estimate one
			// message per entry.
			last.Messages = last.Entries
		}
		if last.Timestamp == 0 {
			last.Timestamp = ml.f.opts.Now().UnixMilli()
		}
		if last.Entries == 0 {
			deleteEmpty = last.LedgerID
			next.ledgers = next.ledgers[:n-1]
			_ = rl.Close()
		} else {
			ml.readers = map[int64]ReadLedger{last.LedgerID: rl}
		}
	}
	var wl WriteLedger
	var createErr error
	if !next.terminated {
		// No ledger can be created when every bookie is full or
		// read-only: the managed ledger still opens, for reads (what
		// was acknowledged stays readable), in the state of a failed
		// rollover; the first add tries again (writefail.go).
		if wl, createErr = ml.store.Create(ctx); createErr == nil {
			next.ledgers = append(next.ledgers, LedgerInfo{LedgerID: wl.ID()})
		} else if errors.Is(createErr, context.Canceled) || errors.Is(createErr, context.DeadlineExceeded) {
			return fmt.Errorf("create ledger: %w", createErr)
		}
	}
	v, err := ml.meta.Put(ctx, ml.path, appendInfo(nil, next), ml.infoVersion)
	if err != nil {
		if wl != nil {
			_ = wl.Close(ctx)
			_ = ml.store.Delete(ctx, wl.ID())
		}
		if errors.Is(err, metadata.ErrBadVersion) {
			return ErrFenced
		}
		return err
	}
	ml.info, ml.infoVersion = next, v
	if deleteEmpty >= 0 {
		if err := ml.store.Delete(ctx, deleteEmpty); err != nil {
			ml.log.Warn("delete empty ledger", "ledger", deleteEmpty, "err", err)
		}
	}
	ml.ledgers = slices.Clone(next.ledgers)
	if deleteEmpty >= 0 {
		ml.emptyBase = deleteEmpty
	}
	ml.current = wl
	ml.created = ml.f.opts.Now().UnixNano()
	ml.lastTrim = ml.created
	switch {
	case next.terminated:
		ml.state = stateTerminated
	case wl == nil:
		ml.state = stateWriteFailed
		ml.failed.failedLocked(ml.f.opts.Now())
		ml.log.Error("opened without a ledger to write to (reads only until one can be created)", "err", createErr)
	default:
		ml.state = stateReady
		ml.msgSums.set(wl.ID(), nil)
	}
	return ml.recoverCursors(ctx)
}

func (in *mlInfo) clone() *mlInfo {
	out := &mlInfo{terminated: in.terminated, ledgers: slices.Clone(in.ledgers), props: maps.Clone(in.props)}
	if in.compaction != nil {
		c := *in.compaction
		out.compaction = &c
	}
	return out
}

// Name returns the managed ledger's name.
func (ml *ManagedLedger) Name() string { return ml.name }

// AddEntry appends data as one entry (one Pulsar batch) holding numMessages
// messages. cb is called exactly once, in add order, with the entry's
// position or an error; it must not block for long. data must not be
// modified afterwards: it is kept in the entry cache and handed to readers.
//
// Adds that arrive while the current ledger rolls over are queued, not
// failed. An add that fails on the ledger store is re-sent to a new ledger
// (up to Config.MaxAddRetries times) before the error is reported.
func (ml *ManagedLedger) AddEntry(data []byte, numMessages int32, cb func(Position, error)) {
	ml.addEntry(data, nil, 0, numMessages, cb)
}

// AddEntryHeadroom is AddEntry for data = buf[off:], where buf[:off] is
// free room the ledger store may overwrite to frame the entry in place
// (see HeadroomWriter; at least EntryHeadroom bytes for the bookie-backed
// store). The caller gives up buf[:off] as well as the data. The entry
// cache and readers see only buf[off:].
func (ml *ManagedLedger) AddEntryHeadroom(buf []byte, off int, numMessages int32, cb func(Position, error)) {
	ml.addEntry(buf[off:], buf, off, numMessages, cb)
}

func (ml *ManagedLedger) addEntry(data, buf []byte, off int, numMessages int32, cb func(Position, error)) {
	ml.mu.Lock()
	var err error
	switch ml.state {
	case stateClosed:
		err = ErrClosed
	case stateFenced:
		err = ErrFenced
	case stateTerminated:
		err = ErrTerminated
	}
	if err != nil {
		ml.mu.Unlock()
		cb(Position{}, err)
		return
	}
	op := newAddOp(ml, data, numMessages, cb)
	op.buf, op.off = buf, off
	switch ml.state {
	case stateReady:
		ml.submitOrQueueLocked([]*addOp{op})
	case stateWriteFailed:
		ml.queued = append(ml.queued, op)
		if !ml.failed.deferLocked(ml, ml.f.opts.Now()) {
			ml.startRolloverLocked()
		}
	default:
		ml.queued = append(ml.queued, op)
	}
	ml.mu.Unlock()
}

// submitOrQueueLocked sends ops to the current ledger in order; once the
// ledger is full it starts a rollover and queues the rest.
func (ml *ManagedLedger) submitOrQueueLocked(ops []*addOp) {
	now := ml.f.opts.Now()
	for i, op := range ops {
		if ml.state != stateReady {
			ml.queued = append(ml.queued, ops[i:]...)
			return
		}
		ml.submitLocked(op)
		if ml.shouldRollLocked(now) {
			ml.startRolloverLocked()
		}
	}
}

func (ml *ManagedLedger) submitLocked(op *addOp) {
	ml.subCount++
	ml.subSize += int64(len(op.data))
	op.ledger = ml.current.ID()
	ml.pending = append(ml.pending, op)
	if hw, ok := ml.current.(HeadroomWriter); ok && op.buf != nil {
		buf := op.buf
		op.buf = nil // used up: a retry copies
		hw.AddWithHeadroom(buf, op.off, op.done)
		return
	}
	ml.current.AddAsync(op.data, op.done)
}

func (ml *ManagedLedger) popPendingLocked(op *addOp) {
	if len(ml.pending) == 0 || ml.pending[0] != op {
		panic("BUG: mledger: add completion out of order")
	}
	ml.pending[0] = nil
	ml.pending = ml.pending[1:]
	if len(ml.pending) == 0 {
		ml.pending = nil
		if ml.drained != nil {
			ml.drained.Broadcast()
		}
	}
}

// waitDrainedLocked waits (under mu, write-locked) until no add is
// pending.
func (ml *ManagedLedger) waitDrainedLocked() {
	for len(ml.pending) > 0 {
		if ml.drained == nil {
			ml.drained = sync.NewCond(&ml.mu)
		}
		ml.drained.Wait()
	}
}

func (ml *ManagedLedger) addComplete(op *addOp, entryID int64, err error) {
	ml.mu.Lock()
	ml.popPendingLocked(op)
	if err != nil {
		op.retries++
		final := ml.state == stateClosed || ml.state == stateFenced || ml.state == stateTerminated ||
			op.retries > ml.cfg.MaxAddRetries
		if final {
			ml.mu.Unlock()
			cb, ledger := op.cb, op.ledger
			op.release()
			cb(Position{}, fmt.Errorf("%w: ledger %d: %w", ErrWriteFailed, ledger, err))
			return
		}
		// Logged once by the rollover, with the count: a bookie that
		// dies fails every add in flight.
		if ml.retryErr == nil {
			ml.retryErr = err
		}
		ml.retry = append(ml.retry, op)
		if ml.state == stateReady {
			ml.startRolloverLocked()
		}
		ml.mu.Unlock()
		return
	}
	pos := Position{op.ledger, entryID}
	cur := &ml.ledgers[len(ml.ledgers)-1]
	if cur.LedgerID != op.ledger || cur.Entries != entryID {
		panic(fmt.Sprintf("BUG: mledger: completion %s does not extend ledger %d with %d entries", pos, cur.LedgerID, cur.Entries))
	}
	cur.Entries++
	cur.Size += int64(len(op.data))
	cur.Messages += int64(op.msgs)
	sums := ml.msgSums.get(op.ledger)
	prev := int64(0)
	if len(sums) > 0 {
		prev = sums[len(sums)-1]
	}
	ml.msgSums.set(op.ledger, append(sums, prev+int64(op.msgs)))
	ml.entriesAdded.Add(1)
	ml.cache.insert(pos, op.data, ml.f.opts.Now())
	ml.notifyLocked()
	ml.mu.Unlock()
	cb := op.cb
	op.release()
	cb(pos, nil)
}

func (ml *ManagedLedger) shouldRollLocked(now time.Time) bool {
	if ml.current == nil {
		return false
	}
	if ml.subCount == 0 {
		return false
	}
	if ml.subCount >= maxLedgerEntries {
		return true
	}
	age := time.Duration(now.UnixNano() - ml.created)
	if ml.cfg.MinLedgerRolloverTime > 0 && age < ml.cfg.MinLedgerRolloverTime {
		return false
	}
	return ml.subCount >= ml.cfg.MaxEntriesPerLedger || ml.subSize >= ml.cfg.MaxSizePerLedger ||
		age >= ml.rolloverTime
}

// startRolloverLocked switches to stateRolling and starts the goroutine
// that closes the current ledger and opens the next.
func (ml *ManagedLedger) startRolloverLocked() {
	ml.state = stateRolling
	ml.wg.Add(1)
	go func() {
		defer ml.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ml.rollover(ctx)
	}()
}

// rollover waits for in-flight adds, closes the current ledger, creates the
// next, records both in the info, then re-sends retried and queued adds.
func (ml *ManagedLedger) rollover(ctx context.Context) {
	ml.infoMu.Lock()
	defer ml.infoMu.Unlock()
	ml.mu.Lock()
	ml.waitDrainedLocked()
	if ml.state != stateRolling {
		ml.mu.Unlock()
		return
	}
	old := ml.current
	ml.current = nil
	ml.closing = old
	if ml.retryErr != nil && old != nil {
		ml.log.Warn("adds failed; rolling over to a new ledger", "ledger", old.ID(), "failedAdds", len(ml.retry), "err", ml.retryErr)
	}
	ml.retryErr = nil
	ml.mu.Unlock()

	if old != nil {
		if err := old.Close(ctx); err != nil {
			ml.log.Warn("close ledger", "ledger", old.ID(), "err", err)
		}
	}
	ml.mu.Lock()
	ml.closing = nil
	ml.mu.Unlock()
	// Every ledger in the live view is closed now. It is authoritative
	// for their stats (only this instance writes the info, under infoMu);
	// empty ones are dropped.
	ml.mu.Lock()
	var live []LedgerInfo
	var empty []int64
	for i := range ml.ledgers {
		l := &ml.ledgers[i]
		if l.Timestamp == 0 {
			l.Timestamp = ml.f.opts.Now().UnixMilli()
		}
		if l.Entries == 0 {
			empty = append(empty, l.LedgerID)
			continue
		}
		live = append(live, *l)
	}
	ml.mu.Unlock()
	wl, err := ml.store.Create(ctx)
	if err == nil {
		err = ml.updateInfo(ctx, func(in *mlInfo) error {
			in.ledgers = append(slices.Clone(live), LedgerInfo{LedgerID: wl.ID()})
			return nil
		})
		if err != nil {
			_ = wl.Close(ctx)
			_ = ml.store.Delete(ctx, wl.ID())
		}
	}
	ml.mu.Lock()
	if err == nil && len(empty) > 0 {
		ml.removeLedgersLocked(empty)
		defer func() {
			for _, id := range empty {
				if derr := ml.store.Delete(ctx, id); derr != nil {
					ml.log.Warn("delete empty ledger", "ledger", id, "err", derr)
				}
			}
		}()
	}
	ops := append(ml.retry, ml.queued...)
	ml.retry, ml.queued = nil, nil
	if err != nil || ml.state != stateRolling {
		var failErr error
		switch {
		case ml.state == stateClosed:
			failErr = ErrClosed
		case ml.state == stateTerminated:
			failErr = ErrTerminated
		case errors.Is(err, ErrFenced):
			ml.state = stateFenced
			failErr = ErrFenced
		default:
			ml.state = stateWriteFailed
			failErr = fmt.Errorf("%w: %w", ErrWriteFailed, err)
		}
		first := false
		if err != nil {
			first = ml.failed.failedLocked(ml.f.opts.Now())
		}
		ml.mu.Unlock()
		switch {
		case first:
			ml.log.Error("rollover failed; adds fail until a ledger can be created", "err", err)
		case err != nil:
			ml.log.Debug("rollover failed again", "err", err)
		}
		if wl != nil && err == nil {
			_ = wl.Close(ctx)
		}
		for _, op := range ops {
			op.cb(Position{}, failErr)
		}
		return
	}
	if n := ml.failed.resetLocked(); n > 0 {
		ml.log.Info("ledger created again; adds resume", "ledger", wl.ID(), "failedRollovers", n)
	}
	ml.ledgers = append(ml.ledgers, LedgerInfo{LedgerID: wl.ID()})
	ml.msgSums.set(wl.ID(), nil)
	ml.current = wl
	ml.created = ml.f.opts.Now().UnixNano()
	ml.subCount, ml.subSize = 0, 0
	ml.state = stateReady
	ml.submitOrQueueLocked(ops)
	ml.mu.Unlock()
}

// removeLedgersLocked drops ledgers from the live view.
func (ml *ManagedLedger) removeLedgersLocked(ids []int64) {
	for _, id := range ids {
		i := ml.ledgers.find(id)
		if i < len(ml.ledgers) && ml.ledgers[i].LedgerID == id {
			ml.ledgers = slices.Delete(ml.ledgers, i, i+1)
		}
		ml.msgSums.del(id)
		if r := ml.readers[id]; r != nil {
			_ = r.Close()
			delete(ml.readers, id)
		}
		ml.cache.dropLedger(id)
	}
}

// updateInfo applies mutate to the info and writes it by compare-and-set.
// On ErrBadVersion it re-reads the node: if its content is still what we
// last wrote, it retries with the new version; otherwise another owner
// changed it and the result is ErrFenced. Callers hold infoMu.
func (ml *ManagedLedger) updateInfo(ctx context.Context, mutate func(*mlInfo) error) error {
	for attempt := 0; ; attempt++ {
		next := ml.info.clone()
		if err := mutate(next); err != nil {
			return err
		}
		ml.stampProps(next)
		v, err := ml.meta.Put(ctx, ml.path, appendInfo(nil, next), ml.infoVersion)
		if err == nil {
			ml.info, ml.infoVersion = next, v
			return nil
		}
		if !errors.Is(err, metadata.ErrBadVersion) || attempt >= 3 {
			if errors.Is(err, metadata.ErrBadVersion) {
				return ErrFenced
			}
			return err
		}
		data, ver, gerr := ml.meta.Get(ctx, ml.path)
		if gerr != nil {
			return gerr
		}
		if string(data) != string(appendInfo(nil, ml.info)) {
			return ErrFenced
		}
		ml.infoVersion = ver
	}
}

// LastConfirmed returns the position of the last added entry, and false if
// the managed ledger holds no entry.
func (ml *ManagedLedger) LastConfirmed() (Position, bool) {
	ml.mu.RLock()
	defer ml.mu.RUnlock()
	return ml.ledgers.last()
}

// GetLastPosition returns the last entry's position; for an empty managed
// ledger the entry id is -1 (Pulsar's "no message").
func (ml *ManagedLedger) GetLastPosition() Position {
	ml.mu.RLock()
	defer ml.mu.RUnlock()
	if p, ok := ml.ledgers.last(); ok {
		return p
	}
	return ml.beforeFirstLocked()
}

// beforeFirstLocked is the mark-delete of a cursor that acked nothing.
func (ml *ManagedLedger) beforeFirstLocked() Position {
	if len(ml.ledgers) > 0 {
		return Position{ml.ledgers[0].LedgerID, -1}
	}
	return Position{ml.emptyBase, -1}
}

// clampStartLocked limits a requested first position (seek, reset, a
// reader's start) to the entry after the last one: a position beyond the
// end — later in the current ledger, in a ledger that does not exist yet,
// MaxInt64 — would otherwise count entries written later as acknowledged.
func (ml *ManagedLedger) clampStartLocked(p Position) Position {
	end := ml.endLocked()
	limit := Position{end.LedgerID, end.EntryID + 1}
	if limit.Less(p) {
		return limit
	}
	return p
}

// endLocked is the mark-delete of a cursor that acked everything.
func (ml *ManagedLedger) endLocked() Position {
	if p, ok := ml.ledgers.last(); ok {
		return p
	}
	if n := len(ml.ledgers); n > 0 {
		return Position{ml.ledgers[n-1].LedgerID, -1}
	}
	return ml.beforeFirstLocked()
}

// IsTerminated reports whether Terminate has run.
func (ml *ManagedLedger) IsTerminated() bool {
	ml.mu.RLock()
	defer ml.mu.RUnlock()
	return ml.state == stateTerminated
}

// notifyLocked wakes everyone waiting in WaitForEntries.
func (ml *ManagedLedger) notifyLocked() {
	if ml.chWanted {
		close(ml.addedCh)
		ml.addedCh = nil // the next waitChLocked makes one
		ml.chWanted = false
	}
}

// waitChLocked returns a channel closed on the next completed add.
func (ml *ManagedLedger) waitChLocked() chan struct{} {
	if ml.addedCh == nil {
		ml.addedCh = make(chan struct{})
	}
	ml.chWanted = true
	return ml.addedCh
}

// Terminate stops the managed ledger from accepting adds, forever: pending
// adds complete, the current ledger is closed and the info records the
// terminated flag. It returns the last position.
func (ml *ManagedLedger) Terminate(ctx context.Context) (Position, error) {
	ml.infoMu.Lock()
	defer ml.infoMu.Unlock()
	ml.mu.Lock()
	switch ml.state {
	case stateClosed:
		ml.mu.Unlock()
		return Position{}, ErrClosed
	case stateFenced:
		ml.mu.Unlock()
		return Position{}, ErrFenced
	}
	ml.state = stateTerminated
	ml.waitDrainedLocked()
	cur := ml.current
	ml.current = nil
	if cur != nil {
		ml.closing = cur // reads use it until closed (see Close)
	}
	ops := append(ml.retry, ml.queued...)
	ml.retry, ml.queued = nil, nil
	ml.mu.Unlock()
	for _, op := range ops {
		op.cb(Position{}, ErrTerminated)
	}
	if cur != nil {
		if err := cur.Close(ctx); err != nil {
			ml.log.Warn("close ledger", "ledger", cur.ID(), "err", err)
		}
		ml.mu.Lock()
		if ml.closing == cur {
			ml.closing = nil
		}
		ml.mu.Unlock()
	}
	ml.mu.Lock()
	if n := len(ml.ledgers); n > 0 && ml.ledgers[n-1].Timestamp == 0 {
		ml.ledgers[n-1].Timestamp = ml.f.opts.Now().UnixMilli()
	}
	live := slices.Clone(ml.ledgers)
	last := ml.lastPositionLocked()
	ml.mu.Unlock()
	err := ml.updateInfo(ctx, func(in *mlInfo) error {
		in.terminated = true
		in.ledgers = live
		return nil
	})
	if err != nil {
		return last, err
	}
	return last, nil
}

// lastPositionLocked is GetLastPosition with mu held.
func (ml *ManagedLedger) lastPositionLocked() Position {
	if p, ok := ml.ledgers.last(); ok {
		return p
	}
	return ml.beforeFirstLocked()
}

// Close flushes durable cursors, waits for pending adds, closes the
// current ledger and records its final size in the info. Adds after Close
// fail with ErrClosed.
func (ml *ManagedLedger) Close(ctx context.Context) error {
	ml.mu.Lock()
	if ml.state == stateClosed {
		ml.mu.Unlock()
		return nil
	}
	prev := ml.state
	ml.state = stateClosed // new adds fail from here on
	ml.waitDrainedLocked()
	ml.notifyLocked()
	cur := ml.current
	ml.current = nil
	if cur != nil {
		// Reads of it go to the handle until it is closed: a recovery
		// open by a reader (handle) would fence it under our close.
		ml.closing = cur
	}
	ops := append(ml.retry, ml.queued...)
	ml.retry, ml.queued = nil, nil
	cursors := ml.cursorListLocked()
	ml.mu.Unlock()
	for _, op := range ops {
		op.cb(Position{}, ErrClosed)
	}
	ml.wg.Wait() // rollover goroutines see stateClosed and stop
	ml.stopOffload()
	var errs []error
	for _, c := range cursors {
		errs = append(errs, c.close(ctx))
	}
	ml.infoMu.Lock()
	if cur != nil {
		err := cur.Close(ctx)
		ml.mu.Lock()
		if ml.closing == cur {
			ml.closing = nil
		}
		ml.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		} else if prev != stateFenced {
			ml.mu.Lock()
			n := len(ml.ledgers)
			ml.ledgers[n-1].Timestamp = ml.f.opts.Now().UnixMilli()
			final := ml.ledgers[n-1]
			ml.mu.Unlock()
			errs = append(errs, ml.updateInfo(ctx, func(in *mlInfo) error {
				if k := len(in.ledgers); k > 0 && in.ledgers[k-1].LedgerID == final.LedgerID {
					in.ledgers[k-1] = final
				}
				return nil
			}))
		}
	}
	ml.infoMu.Unlock()
	ml.closeReaders()
	ml.cache.clear()
	ml.f.forget(ml)
	return errors.Join(errs...)
}

func (ml *ManagedLedger) closeReaders() {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	for id, r := range ml.readers {
		_ = r.Close()
		delete(ml.readers, id)
	}
}

func (ml *ManagedLedger) cursorListLocked() []*Cursor {
	out := append(make([]*Cursor, 0, ml.cursors.len()), ml.cursors.list...)
	slices.SortFunc(out, func(a, b *Cursor) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return out
}

// tick runs the periodic work: time-based rollover, cursor flushes,
// trimming and cache eviction behind the slowest cursor.
func (ml *ManagedLedger) tick(ctx context.Context, now time.Time) {
	ml.mu.Lock()
	if ml.state == stateClosed {
		ml.mu.Unlock()
		return
	}
	if ml.state == stateReady && ml.shouldRollLocked(now) {
		ml.startRolloverLocked()
	}
	// Unsorted: the tick visits every cursor, in no particular order, on
	// every loaded ledger ten times a second.
	cursors := slices.Clone(ml.cursors.list)
	trim := ml.cfg.TrimInterval > 0 && time.Duration(now.UnixNano()-ml.lastTrim) >= ml.cfg.TrimInterval
	if trim {
		ml.lastTrim = now.UnixNano()
	}
	end := ml.endLocked()
	ml.mu.Unlock()
	slowest := end
	for _, c := range cursors {
		if c.durable && now.Sub(c.lastPersistTime()) >= ml.cfg.CursorPersistInterval {
			if err := c.persist(ctx); err != nil {
				ml.log.Warn("persist cursor", "cursor", c.name, "err", err)
			}
		}
		if md := c.MarkDeletePosition(); md.Less(slowest) {
			slowest = md
		}
	}
	ml.cache.evictUpTo(slowest)
	// Per-entry message counts are only needed for backlogs: free them
	// for ledgers every cursor has left behind.
	ml.mu.Lock()
	ml.msgSums.dropBelow(slowest.LedgerID)
	ml.mu.Unlock()
	if trim {
		if err := ml.Trim(ctx); err != nil {
			ml.log.Warn("trim", "err", err)
		}
	}
	ml.maybeOffload(now)
}
