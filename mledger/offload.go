package mledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/offload"
)

// Offloader is the tiered store a managed ledger offloads closed ledgers
// to. NewOffloader adapts package offload's *Offloader.
type Offloader interface {
	// Offload copies src to objects named by uid, verifies them, and
	// removes them again on failure.
	Offload(ctx context.Context, src ReadLedger, uid offload.UID, mlName string) error
	// Open returns a read handle on an offloaded ledger.
	Open(ctx context.Context, ledgerID int64, uid offload.UID, driverMeta map[string]string) (ReadLedger, error)
	// Delete removes the objects of an attempt (absent ones are fine).
	Delete(ctx context.Context, ledgerID int64, uid offload.UID, driverMeta map[string]string) error
	// DriverName and DriverMetadata are recorded with each attempt.
	DriverName() string
	DriverMetadata() map[string]string
}

// NewOffloader adapts o to Offloader.
func NewOffloader(o *offload.Offloader) Offloader { return offloaderAdapter{o} }

type offloaderAdapter struct{ o *offload.Offloader }

func (a offloaderAdapter) Offload(ctx context.Context, src ReadLedger, uid offload.UID, name string) error {
	return a.o.Offload(ctx, src, uid, name)
}
func (a offloaderAdapter) Open(ctx context.Context, id int64, uid offload.UID, m map[string]string) (ReadLedger, error) {
	h, err := a.o.Open(ctx, id, uid, m)
	if err != nil {
		return nil, err
	}
	return h, nil
}
func (a offloaderAdapter) Delete(ctx context.Context, id int64, uid offload.UID, m map[string]string) error {
	return a.o.Delete(ctx, id, uid, m)
}
func (a offloaderAdapter) DriverName() string                { return a.o.DriverName() }
func (a offloaderAdapter) DriverMetadata() map[string]string { return a.o.DriverMetadata() }

// OffloadPolicy configures a managed ledger's tiered storage. With a nil
// Offloader nothing is offloaded automatically (Options.Offloader still
// serves reads and deletes of offloaded ledgers).
type OffloadPolicy struct {
	// Offloader receives offloads; nil: Options.Offloader for manual
	// offloads, no automatic ones.
	Offloader Offloader
	// ThresholdBytes: closed ledgers are offloaded automatically once the
	// ledgers after them (the current one included) hold more than this
	// many bytes; < 0 disables, 0 offloads every closed ledger.
	ThresholdBytes int64
	// ThresholdSeconds: closed ledgers older than this (by close time)
	// are offloaded automatically; < 0 disables.
	ThresholdSeconds int64
	// DeletionLag: the bookie copy of an offloaded ledger is deleted this
	// long after the offload completed (checked when trimming); < 0
	// never.
	DeletionLag time.Duration
	// BookkeeperFirst reads offloaded ledgers from the bookies while
	// their copy there exists (Pulsar's bookkeeper-first); default
	// tiered-storage-first.
	BookkeeperFirst bool
}

// Offload states (Pulsar's LongRunningProcessStatus).
const (
	OffloadNotRun  = "NOT_RUN"
	OffloadRunning = "RUNNING"
	OffloadSuccess = "SUCCESS"
	OffloadError   = "ERROR"
)

// OffloadStatus is the state of the last offload run.
type OffloadStatus struct {
	State     string
	LastError string
	// FirstUnoffloaded is (first ledger not offloaded, 0) after the run.
	FirstUnoffloaded Position
	// LastOffloadLedgerID and the timestamps (unix ms, 0: never) of the
	// last success and failure.
	LastOffloadLedgerID      int64
	LastOffloadSuccessMillis int64
	LastOffloadFailureMillis int64
}

// offloadState is a managed ledger's offload bookkeeping; mu is a leaf.
// run is made by the first offload (most managed ledgers never offload).
type offloadState struct {
	mu     sync.Mutex
	policy OffloadPolicy
	closed bool
	run    *offloadRun
}

// offloadRun is the state of offload runs, under offloadState.mu.
type offloadRun struct {
	running bool
	status  OffloadStatus
	retryAt time.Time
	backoff time.Duration
	cancel  context.CancelFunc // of the running offload
	wg      sync.WaitGroup
}

const (
	offloadBackoffMin = time.Second
	offloadBackoffMax = time.Minute
)

// SetOffloadPolicy replaces the offload policy (admin changes apply at
// once, without reopening).
func (ml *ManagedLedger) SetOffloadPolicy(p OffloadPolicy) {
	ml.off.mu.Lock()
	ml.off.policy = p
	if r := ml.off.run; r != nil {
		r.retryAt = time.Time{}
	}
	ml.off.mu.Unlock()
}

func (ml *ManagedLedger) offloadPolicy() OffloadPolicy {
	ml.off.mu.Lock()
	defer ml.off.mu.Unlock()
	return ml.off.policy
}

// offloader is the policy's offloader, else the factory's.
func (ml *ManagedLedger) offloader() Offloader {
	if o := ml.offloadPolicy().Offloader; o != nil {
		return o
	}
	return ml.f.opts.Offloader
}

// OffloadStatus returns the state of the last offload run.
func (ml *ManagedLedger) OffloadStatus() OffloadStatus {
	ml.off.mu.Lock()
	defer ml.off.mu.Unlock()
	var s OffloadStatus
	if r := ml.off.run; r != nil {
		s = r.status
	}
	if s.State == "" {
		s.State = OffloadNotRun
	}
	return s
}

// offloadCandidatesLocked returns the closed, non-empty, not yet
// offloaded ledgers with id < upTo (ascending). mu held.
func (ml *ManagedLedger) offloadCandidatesLocked(upTo int64) []int64 {
	var ids []int64
	for i, l := range ml.ledgers {
		if i == len(ml.ledgers)-1 && ml.state != stateTerminated || l.LedgerID >= upTo {
			break
		}
		if l.Entries == 0 || l.Timestamp == 0 || (l.Offload != nil && l.Offload.Complete) {
			continue
		}
		ids = append(ids, l.LedgerID)
	}
	return ids
}

// Offload offloads every closed, non-empty, not yet offloaded ledger
// before upTo's ledger and waits for it. It returns the first position
// not offloaded. upTo must be an existing position or the position after
// the last entry (ErrInvalidPosition otherwise). ErrOffloadInProgress
// when another offload runs.
func (ml *ManagedLedger) Offload(ctx context.Context, upTo Position) (Position, error) {
	done, err := ml.startOffload(ctx, upTo, true)
	if err != nil {
		return Position{}, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return Position{}, ctx.Err()
	}
	s := ml.OffloadStatus()
	if s.State == OffloadError {
		return s.FirstUnoffloaded, errors.New(s.LastError)
	}
	return s.FirstUnoffloaded, nil
}

// StartOffload is Offload without waiting: OffloadStatus reports
// progress.
func (ml *ManagedLedger) StartOffload(upTo Position) error {
	_, err := ml.startOffload(context.Background(), upTo, true)
	return err
}

func (ml *ManagedLedger) startOffload(ctx context.Context, upTo Position, manual bool) (<-chan struct{}, error) {
	o := ml.offloader()
	if o == nil {
		return nil, ErrNoOffloader
	}
	ml.mu.RLock()
	if ml.state == stateClosed {
		ml.mu.RUnlock()
		return nil, ErrClosed
	}
	if manual {
		i := ml.ledgers.find(upTo.LedgerID)
		if i >= len(ml.ledgers) || ml.ledgers[i].LedgerID != upTo.LedgerID || upTo.EntryID < 0 || upTo.EntryID > ml.ledgers[i].Entries {
			ml.mu.RUnlock()
			return nil, fmt.Errorf("offload up to %s: %w", upTo, ErrInvalidPosition)
		}
	}
	ids := ml.offloadCandidatesLocked(upTo.LedgerID)
	ml.mu.RUnlock()
	ml.off.mu.Lock()
	if r := ml.off.run; r != nil && r.running {
		ml.off.mu.Unlock()
		return nil, ErrOffloadInProgress
	}
	if ml.off.closed {
		ml.off.mu.Unlock()
		return nil, ErrClosed
	}
	if ml.off.run == nil {
		ml.off.run = &offloadRun{}
	}
	r := ml.off.run
	r.running = true
	r.status.State = OffloadRunning
	r.status.LastError = ""
	octx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.wg.Add(1)
	ml.off.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer r.wg.Done()
		defer close(done)
		defer cancel()
		ml.runOffload(octx, o, ids)
	}()
	return done, nil
}

// runOffload offloads ids in order; failures do not stop the others.
func (ml *ManagedLedger) runOffload(ctx context.Context, o Offloader, ids []int64) {
	var firstErr error
	failed := int64(-1)
	var last int64 = -1
	for _, id := range ids {
		if ctx.Err() != nil {
			firstErr = errors.Join(firstErr, ctx.Err())
			break
		}
		err := ml.offloadLedger(ctx, o, id)
		if err != nil {
			ml.log.Warn("offload ledger failed", "ledger", id, "err", err)
			if firstErr == nil {
				firstErr = err
			}
			if failed < 0 {
				failed = id
			}
			continue
		}
		last = id
		ml.log.Info("offloaded ledger", "ledger", id)
	}
	now := ml.f.opts.Now()
	ml.mu.RLock()
	first := ml.endLocked()
	for _, l := range ml.ledgers {
		if l.Offload == nil || !l.Offload.Complete {
			first = Position{l.LedgerID, 0}
			break
		}
	}
	if failed >= 0 && failed < first.LedgerID {
		first = Position{failed, 0}
	}
	ml.mu.RUnlock()
	ml.off.mu.Lock()
	defer ml.off.mu.Unlock()
	r := ml.off.run // set by startOffload
	r.running, r.cancel = false, nil
	st := &r.status
	st.FirstUnoffloaded = first
	if last >= 0 {
		st.LastOffloadLedgerID = last
		st.LastOffloadSuccessMillis = now.UnixMilli()
	}
	if firstErr != nil {
		st.State, st.LastError = OffloadError, firstErr.Error()
		st.LastOffloadFailureMillis = now.UnixMilli()
		r.backoff = min(max(2*r.backoff, offloadBackoffMin), offloadBackoffMax)
		r.retryAt = now.Add(r.backoff)
		return
	}
	st.State = OffloadSuccess
	r.backoff, r.retryAt = 0, time.Time{}
}

// offloadContextOf returns ledger id's offload context in the persisted
// info and whether the ledger is listed. infoMu held.
func (ml *ManagedLedger) offloadContextOfLocked(id int64) (*OffloadContext, bool) {
	ls := ledgerList(ml.info.ledgers)
	i := ls.find(id)
	if i >= len(ls) || ls[i].LedgerID != id {
		return nil, false
	}
	return ls[i].Offload, true
}

// setOffloadContext records oc for ledger id in the info (compare-and-
// set) and the live view, if check accepts the current one. infoMu held.
func (ml *ManagedLedger) setOffloadContextLocked(ctx context.Context, id int64, check func(*OffloadContext) error, oc *OffloadContext) error {
	err := ml.updateInfo(ctx, func(in *mlInfo) error {
		i := ledgerList(in.ledgers).find(id)
		if i >= len(in.ledgers) || in.ledgers[i].LedgerID != id {
			return fmt.Errorf("ledger %d no longer listed (trimmed): %w", id, ErrOffloadConflict)
		}
		if err := check(in.ledgers[i].Offload); err != nil {
			return err
		}
		in.ledgers[i].Offload = oc
		return nil
	})
	if err != nil {
		return err
	}
	ml.mu.Lock()
	if i := ml.ledgers.find(id); i < len(ml.ledgers) && ml.ledgers[i].LedgerID == id {
		ml.ledgers[i].Offload = oc
	}
	ml.mu.Unlock()
	return nil
}

// offloadLedger runs the two-phase protocol for one ledger:
//
//  1. an earlier attempt's objects (uid recorded, not complete) are
//     deleted; the attempt stops if that fails, so no uid is forgotten
//     while its objects may exist;
//  2. prepare: a fresh uid is recorded (complete = false) before any
//     object is written;
//  3. the offloader writes and verifies data and index (and removes
//     them itself on failure);
//  4. complete: complete = true and the timestamp are recorded, only if
//     the recorded uid is still this one; otherwise the objects are
//     removed (ErrOffloadConflict);
//  5. the cached read handle is dropped, so reads move to the object
//     store.
func (ml *ManagedLedger) offloadLedger(ctx context.Context, o Offloader, id int64) error {
	ml.infoMu.Lock()
	old, listed := ml.offloadContextOfLocked(id)
	ml.infoMu.Unlock()
	if !listed {
		return fmt.Errorf("ledger %d: %w", id, ErrOffloadConflict)
	}
	if old != nil && old.Complete {
		return nil
	}
	if old != nil {
		if err := o.Delete(ctx, id, old.UID, old.DriverMetadata); err != nil {
			return fmt.Errorf("clean up earlier offload %s of ledger %d: %w", old.UID, id, err)
		}
		ml.log.Info("removed objects of an interrupted offload", "ledger", id, "uid", old.UID.String())
	}
	uid := offload.NewUID()
	prep := &OffloadContext{UID: uid, Driver: o.DriverName(), DriverMetadata: o.DriverMetadata()}
	ml.infoMu.Lock()
	err := ml.setOffloadContextLocked(ctx, id, func(cur *OffloadContext) error {
		if cur != old {
			return fmt.Errorf("ledger %d offload state changed: %w", id, ErrOffloadConflict)
		}
		return nil
	}, prep)
	ml.infoMu.Unlock()
	if err != nil {
		return fmt.Errorf("prepare offload of ledger %d: %w", id, err)
	}
	rl, err := ml.store.Open(ctx, id)
	if err != nil {
		return fmt.Errorf("open ledger %d: %w", id, err)
	}
	err = o.Offload(ctx, rl, uid, ml.name)
	_ = rl.Close()
	if err != nil {
		return err
	}
	done := *prep
	done.Complete, done.Timestamp = true, ml.f.opts.Now().UnixMilli()
	ml.infoMu.Lock()
	err = ml.setOffloadContextLocked(ctx, id, func(cur *OffloadContext) error {
		if cur == nil || cur.UID != uid {
			return fmt.Errorf("ledger %d offload uid changed: %w", id, ErrOffloadConflict)
		}
		return nil
	}, &done)
	ml.infoMu.Unlock()
	if errors.Is(err, ErrOffloadConflict) {
		if derr := o.Delete(context.WithoutCancel(ctx), id, uid, prep.DriverMetadata); derr != nil {
			ml.log.Warn("remove objects of a conflicting offload", "ledger", id, "err", derr)
		}
		return err
	}
	if err != nil {
		// The compare-and-set may have landed: keep the objects; the
		// next attempt cleans up if it did not.
		return fmt.Errorf("complete offload of ledger %d: %w", id, err)
	}
	ml.dropReader(id)
	return nil
}

// dropReader removes ledger id's cached read handle, closing it once
// reads already using it are over (storageTimeout bounds them).
func (ml *ManagedLedger) dropReader(id int64) {
	ml.mu.Lock()
	r := ml.readers[id]
	delete(ml.readers, id)
	ml.mu.Unlock()
	if r != nil {
		time.AfterFunc(readerCloseDelay, func() { _ = r.Close() })
	}
}

// readerCloseDelay is how long a dropped read handle stays usable by
// reads that already hold it.
const readerCloseDelay = 30 * time.Second

// maybeOffload starts an automatic offload when the policy's thresholds
// select ledgers (Pulsar's rule: walk from the newest ledger, summing
// sizes; a closed ledger not yet offloaded is chosen when the sum exceeds
// ThresholdBytes or it was closed ThresholdSeconds ago or more).
func (ml *ManagedLedger) maybeOffload(now time.Time) {
	ml.off.mu.Lock()
	p := ml.off.policy
	r := ml.off.run
	busy := ml.off.closed || r != nil && (r.running || now.Before(r.retryAt))
	ml.off.mu.Unlock()
	if p.Offloader == nil || busy || (p.ThresholdBytes < 0 && p.ThresholdSeconds < 0) {
		return
	}
	ml.mu.RLock()
	var sum int64
	upTo := int64(-1)
	for i := len(ml.ledgers) - 1; i >= 0; i-- {
		l := ml.ledgers[i]
		sum += l.Size
		if l.Timestamp == 0 || l.Entries == 0 || (l.Offload != nil && l.Offload.Complete) {
			continue
		}
		if (p.ThresholdBytes >= 0 && sum > p.ThresholdBytes) ||
			(p.ThresholdSeconds >= 0 && now.UnixMilli()-l.Timestamp >= p.ThresholdSeconds*1000) {
			upTo = l.LedgerID + 1
			break
		}
	}
	ml.mu.RUnlock()
	if upTo < 0 {
		return
	}
	if _, err := ml.startOffload(context.Background(), Position{LedgerID: upTo}, false); err != nil &&
		!errors.Is(err, ErrOffloadInProgress) && !errors.Is(err, ErrClosed) {
		ml.log.Warn("start offload", "err", err)
	}
}

// stopOffload cancels a running offload and waits for it (Close).
func (ml *ManagedLedger) stopOffload() {
	ml.off.mu.Lock()
	ml.off.closed = true
	r := ml.off.run
	if r != nil && r.cancel != nil {
		r.cancel()
	}
	ml.off.mu.Unlock()
	if r != nil {
		r.wg.Wait()
	}
}

// deleteBookieCopiesLocked deletes the bookie copy of every offloaded
// ledger whose deletion lag has passed: bookkeeperDeleted is recorded
// first, then the ledger is deleted from the store, so a crash in
// between leaks a bookie ledger and never leaves a reference to a
// deleted one. infoMu held.
func (ml *ManagedLedger) deleteBookieCopiesLocked(ctx context.Context, now time.Time) error {
	lag := ml.offloadPolicy().DeletionLag
	if lag < 0 {
		return nil
	}
	var ids []int64
	for _, l := range ml.info.ledgers {
		if o := l.Offload; o != nil && o.Complete && !o.BookkeeperDeleted && now.UnixMilli()-o.Timestamp >= lag.Milliseconds() {
			ids = append(ids, l.LedgerID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	err := ml.updateInfo(ctx, func(in *mlInfo) error {
		for i := range in.ledgers {
			l := &in.ledgers[i]
			for _, id := range ids {
				if l.LedgerID == id {
					oc := *l.Offload
					oc.BookkeeperDeleted = true
					l.Offload = &oc
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	ml.mu.Lock()
	for _, id := range ids {
		for _, l := range ml.info.ledgers {
			if l.LedgerID == id {
				if i := ml.ledgers.find(id); i < len(ml.ledgers) && ml.ledgers[i].LedgerID == id {
					ml.ledgers[i].Offload = l.Offload
				}
			}
		}
	}
	ml.mu.Unlock()
	for _, id := range ids {
		ml.dropReader(id) // may be a bookie handle; the next read opens the offload
		if err := ml.store.Delete(ctx, id); err != nil {
			ml.log.Warn("delete bookie copy of offloaded ledger (leaked)", "ledger", id, "err", err)
			continue
		}
		ml.log.Info("deleted bookie copy of offloaded ledger", "ledger", id)
	}
	return nil
}

// deleteOffloaded removes the objects of every ledger in ls with an
// offload uid. It returns the first error; a missing offloader is one
// when objects exist.
func deleteOffloaded(ctx context.Context, o Offloader, ls []LedgerInfo) error {
	var errs []error
	for _, l := range ls {
		oc := l.Offload
		if oc == nil {
			continue
		}
		if o == nil {
			errs = append(errs, fmt.Errorf("ledger %d has offloaded objects: %w", l.LedgerID, ErrNoOffloader))
			continue
		}
		if err := o.Delete(ctx, l.LedgerID, oc.UID, oc.DriverMetadata); err != nil {
			errs = append(errs, fmt.Errorf("delete offloaded ledger %d: %w", l.LedgerID, err))
		}
	}
	return errors.Join(errs...)
}
