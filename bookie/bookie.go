package bookie

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// Bookie is the local ledger store: a journal for durability, a write
// cache, entry logs and an index for the long-term copy. See doc.go.
//
// Every method is safe for concurrent use.
type Bookie struct {
	opts Options
	log  *slog.Logger

	j   wal
	el  entryStore
	idx ledgerIndex
	wc  *writeCache
	rc  *readCache
	ro  roState
	rm  *vfs.Remover // paced deletes (Options.DeleteRate); nil with fakes

	ledgers sync.Map // int64 -> *ledgerState
	// loadMu serialises the loads of a ledger's state (by ledger id mod
	// its size), so that no state can be created, changed and evicted
	// while another load reads the index and the write cache for it
	// (ledgerstate.go).
	loadMu [64]sync.Mutex

	// closeMu is held shared by every call that enqueues journal records
	// and exclusively by Close, so nothing is appended to a closed journal.
	closeMu sync.RWMutex
	closed  atomic.Bool
	closing chan struct{}
	ctx     context.Context // cancelled by Close (stops a running GC)
	cancel  context.CancelFunc
	wg      sync.WaitGroup // background goroutines

	// ckptMu serializes checkpoints, ledger deletes and GC relocations.
	ckptMu     sync.Mutex
	locBuf     []uint64                         // guarded by ckptMu
	recBuf     [][]byte                         // guarded by ckptMu
	spanBuf    []ckptSpan                       // guarded by ckptMu
	frozenMark func() (journal.Position, error) // mark of the unreleased frozen half; ckptMu
	// lastSwap is when the last checkpoint froze the active half (at
	// first, when the bookie opened); ckptMu.
	lastSwap time.Time
	// ckptWaiting counts callers waiting for ckptMu that a paced
	// checkpoint must not keep waiting (lockCheckpoint).
	ckptWaiting atomic.Int32
	// pendingMark is a journal checkpoint not yet accepted; ckptMu.
	pendingMark    journal.Position
	hasPendingMark bool
	metaDirty      atomic.Bool // index metadata changed since the last checkpoint
	// compactHorizon is the entry log's ActiveLogID read at the end of the
	// last successful checkpoint (under ckptMu, so no flush was running):
	// every entry in a log with a smaller id has had its index update. GC
	// compacts and removes only such logs (see gc.go).
	compactHorizon atomic.Uint32
	gcMu           sync.Mutex // one GC pass at a time
	// gcPostponedNeed is the need of the compaction the last GC pass
	// postponed for want of space (0: none); gcMu.
	gcPostponedNeed int64
	// hooks are test hooks, nil in production.
	hooks struct {
		afterFlushSync func() // checkpoint: entry log synced, index not yet updated
		beforeRelocate func() // GC: compaction copied and synced, index not yet repointed
		ledgerLoad     func() // ledgerFor: the write cache read, the index not yet
		ledgerLoaded   func() // ledgerFor: both read, the state not stored yet
	}
	minFree atomic.Uint64 // least free bytes over all dirs at the last check
	// diskBudget is the bytes adds may still write before the disk loop
	// checks usage again (see diskfull.go); diskKick and gcKick wake the
	// disk and GC loops early.
	diskBudget atomic.Int64
	diskKick   chan struct{}
	gcKick     chan struct{}

	stats struct {
		checkpoints, gcRuns atomic.Int64
	}
	m metrics // see metrics.go
	// tracer samples adds' stages (nil: off; see stages.go).
	tracer *stageTracer
}

// checkKeyLocked verifies masterKey against st, creating the ledger (index
// metadata plus a journal master-key record, durable before any later
// record of the ledger) when it is new. st.mu is held.
func (b *Bookie) checkKeyLocked(st *ledgerState, ledger int64, masterKey []byte) error {
	if st.deleted {
		return ErrNoLedger
	}
	if st.known && len(st.meta.masterKey) > 0 {
		if string(st.meta.masterKey) != string(masterKey) {
			return ErrUnauthorized
		}
		return nil
	}
	st.meta.masterKey = append([]byte(nil), masterKey...)
	if err := b.idx.SetMeta(ledger, st.meta); err != nil {
		st.meta.masterKey = nil
		return b.storageErr(err)
	}
	st.known = true
	b.metaDirty.Store(true)
	b.j.Append(journal.Record{Type: journal.MasterKey, LedgerID: ledger, Payload: st.meta.masterKey}, (*metaDone)(b))
	return nil
}

// metaDone completes records nobody waits for.
type metaDone Bookie

func (m *metaDone) AppendDone(_ journal.Position, err error) {
	if err != nil {
		(*Bookie)(m).journalFailed(err)
	}
}

// addOp completes one add.
type addOp struct {
	b     *Bookie
	done  func(error)
	start int64 // journal.Nanotime at the AddEntry call (add latency)
	// half holds the payload the journal wrote from (AppendRef); nil when
	// the journal copied it.
	half *cacheHalf
	// traced: the add's stages are sampled; st holds their stamps.
	traced bool
	st     stageStamps
}

var addOpPool = sync.Pool{New: func() any { return new(addOp) }}

func (op *addOp) AppendDone(_ journal.Position, err error) {
	b, done, start := op.b, op.done, op.start
	if op.half != nil {
		op.half.refs.Done() // the journal no longer reads the cached payload
	}
	if op.traced && err == nil {
		b.tracer.record(&op.st, b.j.(groupTimer).CompletingGroup(), journal.Nanotime())
	}
	*op = addOp{}
	addOpPool.Put(op)
	b.addDurable(start, err, done)
}

// addDurable finishes an add whose journal record completed with err:
// the latency from start (journal.Nanotime) on success, read-only mode
// on a journal failure, then the caller's callback.
func (b *Bookie) addDurable(start int64, err error, done func(error)) {
	if err != nil {
		b.journalFailed(err)
	} else {
		b.m.addLatency.Observe(b.m.durableAt() - start)
	}
	done(err)
}

// waitOp completes a record its caller waits for.
type waitOp struct {
	b  *Bookie
	ch chan error
}

func (op *waitOp) AppendDone(_ journal.Position, err error) {
	if err != nil {
		op.b.journalFailed(err)
	}
	op.ch <- err
}

// writable returns nil when an add may proceed. Recovery adds pass while
// the only reason for read-only mode is disk usage and every directory
// still has MinFreeForRecoveryAdds free.
func (b *Bookie) writable(recovery bool) error {
	r := b.ro.reasons()
	if r == 0 {
		return nil
	}
	if recovery && r == roDiskFull && b.minFree.Load() >= b.opts.MinFreeForRecoveryAdds {
		return nil
	}
	return b.ro.err()
}

// AddEntry stores an entry. done runs exactly once: with nil after the
// journal record holding the entry is durable (fdatasync returned), or
// with the reason it was refused or failed. Callbacks of successful adds
// run in journal order. done may run on the caller's goroutine (refusals)
// or the journal's completion goroutine; it must not block, and must not
// call AddEntry, Fence or WriteLAC synchronously: those may wait for
// write-cache or journal queue space, which only the completion goroutine
// frees (hand such work to another goroutine).
//
// The first add (or fence) of a ledger sets its master key; later requests
// with another key get ErrUnauthorized. Normal adds to a fenced ledger get
// ErrFenced; recovery adds are accepted. The entry is readable as soon as
// AddEntry returns, before it is durable.
func (b *Bookie) AddEntry(ledger, entry int64, masterKey, payload []byte, recovery bool, done func(error)) {
	if err := b.addEntry(ledger, entry, masterKey, payload, recovery, done, journal.Nanotime()); err != nil {
		done(err)
	}
}

func (b *Bookie) addEntry(ledger, entry int64, masterKey, payload []byte, recovery bool, done func(error), start int64) error {
	if ledger < 0 || entry < 0 || len(masterKey) == 0 {
		return fmt.Errorf("%w: ledger %d entry %d, master key %d bytes", ErrBadRequest, ledger, entry, len(masterKey))
	}
	b.closeMu.RLock()
	defer b.closeMu.RUnlock()
	if b.closed.Load() {
		return ErrClosed
	}
	if err := b.writable(recovery); err != nil {
		return err
	}
	b.spendDiskBudget(len(payload))
	// One pass over the payload for both checksums (the write cache frames
	// the entry-log record with it, the journal its record), outside the
	// ledger's mutex.
	pcrc := entrylog.PayloadCRC(payload)
	st, err := b.lockLedger(ledger, true)
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if err := b.checkKeyLocked(st, ledger, masterKey); err != nil {
		return err
	}
	if st.meta.fenced && !recovery {
		return ErrFenced
	}
	// Cache first, journal second: a checkpoint mark taken under the cache
	// lock then never covers a record whose data it does not flush.
	// A large payload is not copied a second time: the journal writes it
	// from the write cache's copy (AppendRef), which the half keeps until
	// the completion (addOp.AppendDone releases it).
	ref := len(payload) >= journal.RefMinPayload
	cached, half, err := b.wc.putRef(ledger, entry, payload, pcrc, ref, b.opts.WriteCacheMaxWait, b.closing)
	if err != nil {
		return err
	}
	if entry > st.lastEntry {
		st.lastEntry = entry
	}
	op := addOpPool.Get().(*addOp)
	op.b, op.done, op.start = b, done, start
	rec := journal.Record{Type: journal.Entry, LedgerID: ledger, EntryID: entry, Payload: payload}
	if b.tracer != nil && b.tracer.sample(1) {
		op.traced = true
		op.st = stageStamps{start: start, cached: journal.Nanotime()}
		rec.Appended = &op.st.appended
	}
	if ref {
		op.half = half
		rec.Payload = cached
		b.j.AppendRef(rec, pcrc, op)
	} else {
		b.j.AppendWithCRC(rec, pcrc, op)
	}
	return nil
}

// Fence marks ledger fenced: from then on normal adds fail with ErrFenced.
// It returns after the journal's fence record is durable, so fencing
// survives a restart. A ledger this bookie never saw is created with
// masterKey and fenced. Fencing works in read-only mode (it is part of
// recovery) unless the journal failed.
func (b *Bookie) Fence(ledger int64, masterKey []byte) error {
	if ledger < 0 || len(masterKey) == 0 {
		return fmt.Errorf("%w: ledger %d, master key %d bytes", ErrBadRequest, ledger, len(masterKey))
	}
	ch, err := b.fence(ledger, masterKey)
	if err != nil {
		return err
	}
	return <-ch
}

func (b *Bookie) fence(ledger int64, masterKey []byte) (<-chan error, error) {
	b.closeMu.RLock()
	defer b.closeMu.RUnlock()
	if b.closed.Load() {
		return nil, ErrClosed
	}
	if r := b.ro.reasons(); r&(roJournal|roCorrupt) != 0 {
		return nil, b.ro.err()
	}
	st, err := b.lockLedger(ledger, true)
	if err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	if err := b.checkKeyLocked(st, ledger, masterKey); err != nil {
		return nil, err
	}
	if !st.meta.fenced {
		st.meta.fenced = true
		if err := b.idx.SetMeta(ledger, st.meta); err != nil {
			st.meta.fenced = false
			return nil, b.storageErr(err)
		}
		b.metaDirty.Store(true)
	}
	op := &waitOp{b: b, ch: make(chan error, 1)}
	b.j.Append(journal.Record{Type: journal.Fence, LedgerID: ledger}, op)
	return op.ch, nil
}

// IsFenced reports whether ledger is fenced.
func (b *Bookie) IsFenced(ledger int64) (bool, error) {
	st, err := b.lockLedger(ledger, false)
	if err != nil {
		return false, err
	}
	if st == nil {
		return false, ErrNoLedger
	}
	defer st.mu.Unlock()
	if st.deleted || !st.known {
		return false, ErrNoLedger
	}
	return st.meta.fenced, nil
}

// WriteLAC stores an explicit last-add-confirmed for ledger (lac and the
// client's opaque body) and returns once its journal record is durable.
// A lower lac than the stored one is ignored.
func (b *Bookie) WriteLAC(ledger, lac int64, masterKey, body []byte) error {
	if ledger < 0 || lac < -1 || len(masterKey) == 0 {
		return fmt.Errorf("%w: ledger %d lac %d, master key %d bytes", ErrBadRequest, ledger, lac, len(masterKey))
	}
	ch, err := b.writeLAC(ledger, lac, masterKey, body)
	if err != nil {
		return err
	}
	return <-ch
}

func (b *Bookie) writeLAC(ledger, lac int64, masterKey, body []byte) (<-chan error, error) {
	b.closeMu.RLock()
	defer b.closeMu.RUnlock()
	if b.closed.Load() {
		return nil, ErrClosed
	}
	if err := b.writable(false); err != nil {
		return nil, err
	}
	st, err := b.lockLedger(ledger, true)
	if err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	if err := b.checkKeyLocked(st, ledger, masterKey); err != nil {
		return nil, err
	}
	ch := make(chan error, 1)
	if st.meta.hasLAC && lac < st.meta.lac {
		ch <- nil
		return ch, nil
	}
	old := st.meta
	st.meta.hasLAC, st.meta.lac, st.meta.lacBody = true, lac, append([]byte(nil), body...)
	if err := b.idx.SetMeta(ledger, st.meta); err != nil {
		st.meta = old
		return nil, b.storageErr(err)
	}
	b.metaDirty.Store(true)
	op := &waitOp{b: b, ch: ch}
	b.j.Append(journal.Record{Type: journal.ExplicitLAC, LedgerID: ledger, Payload: appendLAC(nil, lac, st.meta.lacBody)}, op)
	return ch, nil
}

// ReadLAC returns the explicit LAC last written for ledger and its body;
// ErrNoEntry when none was written.
func (b *Bookie) ReadLAC(ledger int64) (lac int64, body []byte, err error) {
	st, err := b.lockLedger(ledger, false)
	if err != nil {
		return 0, nil, err
	}
	if st == nil {
		return 0, nil, ErrNoLedger
	}
	defer st.mu.Unlock()
	if st.deleted || !st.known {
		return 0, nil, ErrNoLedger
	}
	if !st.meta.hasLAC {
		return 0, nil, fmt.Errorf("%w: ledger %d has no explicit LAC", ErrNoEntry, ledger)
	}
	return st.meta.lac, append([]byte(nil), st.meta.lacBody...), nil
}

// LastEntry returns the highest entry id stored for ledger (ErrNoEntry if
// none).
func (b *Bookie) LastEntry(ledger int64) (int64, error) {
	st, err := b.lockLedger(ledger, false)
	if err != nil {
		return 0, err
	}
	if st == nil {
		return 0, ErrNoLedger
	}
	defer st.mu.Unlock()
	if st.deleted || !st.known {
		return 0, ErrNoLedger
	}
	if st.lastEntry < 0 {
		return 0, fmt.Errorf("%w: ledger %d is empty", ErrNoEntry, ledger)
	}
	return st.lastEntry, nil
}

// ListLedgers returns the ledgers this bookie holds, ascending.
func (b *Bookie) ListLedgers() ([]int64, error) {
	if b.closed.Load() {
		return nil, ErrClosed
	}
	ls, err := b.idx.Ledgers()
	if err != nil {
		return nil, b.storageErr(err)
	}
	return ls, nil
}

// DeleteLedger removes ledger: its cached entries, its index entries and
// metadata. A checkpoint follows at once, so a restart does not replay the
// ledger's journal records back into existence. Entry-log space comes back
// at the next GC.
func (b *Bookie) DeleteLedger(ledger int64) error {
	if b.closed.Load() {
		return ErrClosed
	}
	st, err := b.lockLedger(ledger, false)
	if err != nil {
		return err
	}
	if st == nil {
		return ErrNoLedger
	}
	wasKnown, wasDeleted := st.known && !st.deleted, st.deleted
	st.deleted = true
	st.mu.Unlock()
	if !wasKnown {
		if !wasDeleted {
			b.ledgers.CompareAndDelete(ledger, st)
		}
		return ErrNoLedger
	}
	b.lockCheckpoint()
	defer b.ckptMu.Unlock()
	b.wc.deleteLedger(ledger)
	b.rc.deleteLedger(ledger)
	if err := b.idx.Delete(ledger); err != nil {
		return b.storageErr(err)
	}
	// Only once the index has forgotten the ledger: until then the
	// deleted state keeps a lookup from loading it back from there.
	b.ledgers.CompareAndDelete(ledger, st)
	b.metaDirty.Store(true)
	if b.ro.reasons()&(roDiskFull|roStorage) != 0 {
		b.kickGC() // the space may be what the bookie is waiting for
	}
	return b.checkpointLocked(true, false)
}

// IsReadOnly reports whether adds are refused.
func (b *Bookie) IsReadOnly() bool { return b.ro.reasons() != 0 }

// ReadOnlyReason returns nil while writable, else ErrReadOnly wrapped with
// the reasons.
func (b *Bookie) ReadOnlyReason() error { return b.ro.err() }

// journalFailed switches to read-only mode after the journal failed.
func (b *Bookie) journalFailed(err error) {
	if errors.Is(err, ErrClosed) || errors.Is(err, journal.ErrClosed) {
		return
	}
	if b.ro.set(roJournal, "journal failed: "+err.Error()) {
		b.log.Error("journal failed, bookie is read-only until restart", "err", err)
	}
}

// storageErr inspects an error from ledger storage: corruption turns the
// bookie read-only. It returns err.
func (b *Bookie) storageErr(err error) error {
	if err != nil && isCorrupt(err) {
		if b.ro.set(roCorrupt, "corruption: "+err.Error()) {
			b.log.Error("ledger storage corrupt, bookie is read-only", "err", err)
		}
	}
	return err
}

// appendLAC encodes an explicit-LAC journal payload: the LAC (8 bytes, big
// endian) followed by the client's body.
func appendLAC(dst []byte, lac int64, body []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(lac))
	return append(dst, body...)
}

// decodeLAC decodes what appendLAC encoded.
func decodeLAC(src []byte) (rest []byte, lac int64, body []byte, err error) {
	if len(src) < 8 {
		return src, 0, nil, fmt.Errorf("explicit-LAC record of %d bytes: %w", len(src), errStorageCorrupt)
	}
	return nil, int64(binary.BigEndian.Uint64(src)), src[8:], nil
}
