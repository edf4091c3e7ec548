package bookie

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// Open opens (or creates) the bookie in opts' directories: it opens the
// index, the entry logs and the journal, replays the journal from the last
// checkpoint (data re-added to the write cache, master keys, fences and
// explicit LACs restored), checkpoints, and then starts the background
// checkpoint, disk-check and GC loops.
func Open(opts Options) (*Bookie, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	for _, d := range append([]string{opts.JournalDir}, opts.LedgerDirs...) {
		if err := ensureDir(opts.FS, d); err != nil {
			return nil, err
		}
	}
	s, err := openStorage(&opts)
	if err != nil {
		return nil, err
	}
	return open(opts, s)
}

// ensureDir creates dir and makes it and every ancestor's entry durable
// (a fresh bookie must not lose its directories, and so its journal, to a
// crash).
func ensureDir(fs vfs.FS, dir string) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bookie: %w", err)
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if err := fs.SyncDir(d); err != nil {
			return fmt.Errorf("bookie: sync dir %s: %w", d, err)
		}
		if parent := filepath.Dir(d); parent == d {
			return nil
		}
	}
}

// storageSet is what openStorage opens.
type storageSet struct {
	j   wal
	el  entryStore
	idx ledgerIndex
	rm  *vfs.Remover // the deletes of j and el; nil with fakes
}

func (s storageSet) close() error {
	if s.rm != nil {
		defer s.rm.Close()
	}
	var errs []error
	for _, c := range []interface{ Close() error }{s.j, s.el, s.idx} {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// open builds the bookie over opened storage (tests pass fakes), replays
// and starts it. opts already passed EnsureDefaults and Validate.
func open(opts Options, s storageSet) (*Bookie, error) {
	b := &Bookie{
		opts:     opts,
		log:      opts.Logger,
		j:        s.j,
		el:       s.el,
		idx:      s.idx,
		rm:       s.rm,
		wc:       newWriteCache(opts.WriteCacheSize),
		rc:       newReadCache(opts.ReadCacheSize),
		closing:  make(chan struct{}),
		diskKick: make(chan struct{}, 1),
		gcKick:   make(chan struct{}, 1),
	}
	b.m.init(s.j)
	b.lastSwap = time.Now()
	if _, ok := s.j.(groupTimer); ok && opts.StageSampling > 0 {
		b.tracer = newStageTracer(opts.StageSampling, opts.OnAddStages)
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	// Logs sealed before this process started have no index update
	// pending in it: an entry appended by a checkpoint that did not
	// finish is still in the journal after the last mark, and replay
	// adds it again (the checkpoint then indexes the new copy).
	b.compactHorizon.Store(s.el.ActiveLogID())
	n, err := b.replay()
	if err != nil {
		b.cancel()
		s.close()
		return nil, fmt.Errorf("bookie: journal replay: %w", err)
	}
	b.log.Info("journal replayed", "records", n)
	b.metaDirty.Store(true)
	if err := b.checkpointNoSpace(b.Checkpoint(), "open"); err != nil {
		b.cancel()
		s.close()
		return nil, fmt.Errorf("bookie: checkpoint after replay: %w", err)
	}
	b.diskBudget.Store(math.MaxInt64) // until a check measures it (never, without DiskUsager)
	if err := b.CheckDisks(); err != nil {
		b.log.Warn("disk check failed", "err", err)
	}
	if !b.IsReadOnly() {
		b.ensureReserves()
	}
	b.wg.Add(1)
	go b.every(opts.CheckpointInterval, b.wc.needFlush, b.checkpointTick)
	if opts.DiskCheckInterval > 0 {
		b.wg.Add(1)
		go b.every(opts.DiskCheckInterval, b.diskKick, b.diskTick)
	}
	if opts.GCInterval > 0 {
		b.wg.Add(1)
		go b.every(opts.GCInterval, b.gcKick, b.gcTick)
	}
	if opts.LedgerStateIdle > 0 {
		b.wg.Add(1)
		go b.every(opts.LedgerStateIdle, nil, b.sweepTick)
	}
	return b, nil
}

// replay applies the journal records after the last checkpoint.
func (b *Bookie) replay() (int, error) {
	n := 0
	err := b.j.Replay(func(r journal.Record) error {
		n++
		return b.apply(r)
	})
	return n, err
}

// apply restores one journal record. Data records are re-added (idempotent:
// the same key overwrites); when the write cache fills, it is flushed to
// ledger storage without a journal checkpoint (replay may run again).
func (b *Bookie) apply(r journal.Record) error {
	if r.LedgerID < 0 {
		return nil // checkpoint barrier (see doc.go)
	}
	st, err := b.lockLedger(r.LedgerID, true)
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	metaChanged := false
	if !st.known {
		st.known, metaChanged = true, true
	}
	switch r.Type {
	case journal.Entry:
		if active, _ := b.wc.size(); active+int64(len(r.Payload)) > b.wc.halfSize && active > 0 {
			b.ckptMu.Lock()
			err := b.checkpointLocked(false, false)
			b.ckptMu.Unlock()
			if err != nil {
				return err
			}
		}
		if err := b.wc.put(r.LedgerID, r.EntryID, r.Payload, entrylog.PayloadCRC(r.Payload), 0, b.closing); err != nil {
			return err
		}
		st.lastEntry = max(st.lastEntry, r.EntryID)
	case journal.MasterKey:
		if string(st.meta.masterKey) != string(r.Payload) {
			st.meta.masterKey = append([]byte(nil), r.Payload...)
			metaChanged = true
		}
	case journal.Fence:
		if !st.meta.fenced {
			st.meta.fenced, metaChanged = true, true
		}
	case journal.ExplicitLAC:
		_, lac, body, err := decodeLAC(r.Payload)
		if err != nil {
			return err
		}
		if !st.meta.hasLAC || lac >= st.meta.lac {
			st.meta.hasLAC, st.meta.lac, st.meta.lacBody = true, lac, append([]byte(nil), body...)
			metaChanged = true
		}
	default:
		return fmt.Errorf("unknown journal record type %v", r.Type)
	}
	if metaChanged {
		if err := b.idx.SetMeta(r.LedgerID, st.meta); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the background loops, checkpoints (unless the journal
// failed), and closes the journal, the entry logs and the index. Adds still
// waiting for durability complete (or fail) before Close returns. It waits
// for every goroutine the bookie started.
func (b *Bookie) Close() error {
	if b.closed.Swap(true) {
		return ErrClosed
	}
	close(b.closing) // wakes adds waiting for write-cache space
	b.cancel()
	// Wait for calls that are enqueueing journal records; later ones see
	// closed.
	b.closeMu.Lock()
	//lint:ignore SA2001 the empty critical section is the wait: enqueueing calls hold closeMu
	b.closeMu.Unlock()
	b.wg.Wait()
	var errs []error
	noSpace := false
	if b.j.Err() == nil && b.ro.reasons()&roCorrupt == 0 {
		b.lockCheckpoint()
		err := b.checkpointLocked(true, false)
		noSpace = isNoSpace(err)
		if err := b.checkpointNoSpace(err, "close"); err != nil {
			errs = append(errs, err)
		}
		b.ckptMu.Unlock()
	}
	// After a checkpoint that found no space the journal keeps every
	// record after its last mark, so the index and entry logs failing to
	// write their last metadata for lack of space lose nothing: replay
	// redoes it. Such a Close is not an error (the process stopping on a
	// full disk exits cleanly); any other failure is.
	errs = append(errs, b.j.Close())
	for _, c := range []interface{ Close() error }{b.el, b.idx} {
		err := c.Close()
		if noSpace && isNoSpace(err) {
			b.log.Warn("closing on a full disk: storage metadata not written; the journal keeps it", "err", err)
			continue
		}
		errs = append(errs, err)
	}
	if b.rm != nil {
		b.rm.Close() // what it had not freed yet is swept at the next Open
	}
	return errors.Join(errs...)
}
