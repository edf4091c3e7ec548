package bookie

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/internal/corrupt"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// errStorageCorrupt marks corruption the bookie itself detects (a
// malformed journal payload) and that storage fakes report in tests.
var errStorageCorrupt = corrupt.New("bookie: storage corrupt")

// isCorrupt reports whether err marks on-disk corruption from any storage
// package (journal, entry log, index: the shared marker of package
// corrupt); the bookie turns read-only on it.
func isCorrupt(err error) bool { return errors.Is(err, corrupt.Err) }

// isNotFound reports whether a read found no record at a location (its log
// was compacted away meanwhile).
func isNotFound(err error) bool {
	return errors.Is(err, entrylog.ErrNotFound) || errors.Is(err, errFakeNotFoundMarker)
}

// errFakeNotFoundMarker lets test fakes report a vanished location.
var errFakeNotFoundMarker = errors.New("bookie: location not found")

// barrierLedger is the ledger id of the checkpoint barrier records older
// bookies appended (fence records of a ledger that cannot exist). The
// bookie now uses the journal's record-free Sync; replay still skips them.
const barrierLedger = -1

// walJournal adapts *journal.Journal to wal.
type walJournal struct{ *journal.Journal }

// markOp completes a barrier.
type markOp struct {
	ch chan struct{}
	// Set before ch closes.
	pos journal.Position
	err error
}

func (op *markOp) AppendDone(pos journal.Position, err error) {
	op.pos, op.err = pos, err
	close(op.ch)
}

// Mark starts a journal Sync: it writes nothing, never blocks, and its
// position covers every record appended earlier.
func (w walJournal) Mark() func() (journal.Position, error) {
	op := &markOp{ch: make(chan struct{})}
	w.Journal.Sync(op)
	return func() (journal.Position, error) {
		<-op.ch
		return op.pos, op.err
	}
}

func (w walJournal) Replay(fn func(journal.Record) error) error {
	return w.Journal.Replay(w.LastMark(), func(r journal.Record, _ journal.Position) error { return fn(r) })
}

// entryLogStore adapts *entrylog.Log to entryStore.
type entryLogStore struct {
	*entrylog.Log
}

func (s entryLogStore) Scan(fn func(ledger, entry int64, loc uint64) error) error {
	for _, li := range s.Logs() {
		err := s.Log.Scan(li.ID, func(r entrylog.Record) error { return fn(r.Ledger, r.Entry, r.Loc) })
		if err != nil && !errors.Is(err, entrylog.ErrNotFound) {
			return fmt.Errorf("entry log %s: %w", li.Path, err)
		}
	}
	return nil
}

// GC removes sealed logs without live data, then compacts sealed logs
// whose live ratio is below the threshold: copies, Sync, relocate (index
// durable), then RemoveLog. Only logs with an id below the horizon are
// touched: the active log, and logs sealed while a checkpoint may still
// be setting the index locations of their entries, wait for a later
// pass.
//
// On a full disk the order matters: removing a log needs no space, so
// every removable log goes first; compaction needs room for the live
// bytes it copies, so the logs with the fewest go next, and a log whose
// live bytes (plus gcMargin) exceed req.room is postponed rather than
// started: a copy that runs out of space half-way leaves its partial
// copies behind, and a retry every pass used to fill the disk to the
// last byte that way.
func (s entryLogStore) GC(ctx context.Context, req gcRequest) (gcStats, error) {
	var st gcStats
	usages, uerr := s.Usage(req.live)
	var compact []entrylog.Usage
	for _, u := range usages {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		switch {
		case u.ID >= req.horizon:
		case u.Live == 0:
			if err := s.RemoveLog(u.ID); err != nil {
				return st, err
			}
			st.LogsDeleted++
			st.BytesReclaimed += int64(u.Total)
		case u.Ratio() < req.threshold:
			compact = append(compact, u)
		}
	}
	slices.SortStableFunc(compact, func(a, b entrylog.Usage) int { return cmp.Compare(a.Live, b.Live) })
	for i, u := range compact {
		need := int64(u.Live) + gcMargin(u.Live)
		if room := req.room(); room >= 0 && need > room {
			st.Postponed, st.Need = len(compact)-i, need
			break
		}
		var moves []relocation
		_, err := s.Compact(ctx, u.ID, req.live, func(ledger, entry int64, oldLoc, newLoc uint64) error {
			moves = append(moves, relocation{ledger, entry, oldLoc, newLoc})
			return nil
		})
		if err != nil {
			return st, err
		}
		if err := s.Sync(); err != nil {
			return st, err
		}
		if err := req.relocate(moves); err != nil {
			return st, err
		}
		if err := s.RemoveLog(u.ID); err != nil {
			return st, err
		}
		st.LogsCompacted++
		st.BytesReclaimed += int64(u.Total - u.Live)
	}
	return st, uerr
}

// gcMargin is the room compaction keeps beyond the live bytes it copies:
// the copies' ledgers map, the index pages it rewrites, the header of a
// next log.
func gcMargin(live uint64) int64 { return 64<<10 + int64(live/16) }

// openStorage opens the journal, the entry logs and the index in opts'
// directories.
func openStorage(opts *Options) (s storageSet, err error) {
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	// The deletes of GC and of the journal's checkpoint are paced; a
	// crash's leftovers are swept first (in the background, paced too).
	s.rm = vfs.NewRemover(opts.FS, opts.DeleteRate, 0)
	for _, d := range append([]string{opts.JournalDir}, opts.LedgerDirs...) {
		if err := s.rm.Sweep(d); err != nil {
			return s, fmt.Errorf("bookie: sweep deleted files: %w", err)
		}
	}
	el, err := entrylog.Open(entrylog.Options{
		FS:                  opts.FS,
		Remove:              s.rm.Remove,
		Dirs:                opts.LedgerDirs,
		LogSizeLimit:        opts.EntryLogMaxSize,
		CompactionRateBytes: opts.CompactionRateBytes,
		FlushBytes:          opts.EntryLogFlushBytes,
		Logger:              opts.Logger,
	})
	if err != nil {
		return s, fmt.Errorf("bookie: open entry logs: %w", err)
	}
	s.el = entryLogStore{el}
	s.idx, err = openIndex(opts)
	if err != nil {
		return s, fmt.Errorf("bookie: open index: %w", err)
	}
	jopts := journalOptions(opts)
	jopts.Remove = s.rm.Remove
	j, err := journal.Open(jopts)
	if err != nil && isNoSpace(err) && releaseReserves(opts) > 0 {
		// A restart on a full volume: the journal's new file needs a
		// few KiB before the bookie can serve reads; half the reserve
		// is set aside again for GC (reserve.go).
		j, err = journal.Open(jopts)
		if err == nil {
			halfReserves(opts)
		}
	}
	if err != nil {
		return s, fmt.Errorf("bookie: open journal: %w", err)
	}
	s.j = walJournal{j}
	return s, nil
}

// journalOptions are the journal's options for a bookie's.
func journalOptions(opts *Options) journal.Options {
	return journal.Options{
		Dir:             opts.JournalDir,
		FS:              opts.FS,
		WriterMode:      opts.JournalWriteMode,
		Logger:          opts.Logger,
		MaxGroupWait:    max(opts.JournalMaxGroupWait, 0),
		MaxGroupBytes:   opts.JournalMaxGroupBytes,
		MaxGroupEntries: opts.JournalMaxGroupEntries,
		MaxFileSize:     opts.JournalMaxFileSize,
		NoSync:          opts.JournalNoSync,
		DirectIO:        opts.JournalDirectIO,
		Alignment:       opts.JournalAlignment,
		ZeroFill:        opts.JournalZeroFill,
	}
}
