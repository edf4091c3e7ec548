package bookie

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/magnetar-mq/magnetar/entrylog"
)

// LedgerStats describes what the bookie holds of one ledger and where.
type LedgerStats struct {
	Ledger      int64  `json:"ledger"`
	MasterKey   string `json:"master_key_hex"`
	Fenced      bool   `json:"fenced"`
	ExplicitLAC *int64 `json:"explicit_lac,omitempty"`
	// FirstEntry and LastEntry bound the entry ids present (-1: none).
	FirstEntry int64 `json:"first_entry"`
	LastEntry  int64 `json:"last_entry"`
	Entries    int64 `json:"entries"`
	Bytes      int64 `json:"bytes"`
	// Missing counts ids between FirstEntry and LastEntry this bookie does
	// not hold (with striping, E > Qw, that is normal).
	Missing int64 `json:"missing"`
	// InWriteCache counts entries not yet flushed to an entry log.
	InWriteCache int64 `json:"in_write_cache"`
	// Logs lists, per entry-log file, the entries and bytes there.
	Logs []LogShare `json:"logs"`
}

// LogShare is a ledger's share of one entry log.
type LogShare struct {
	LogID   uint32 `json:"log_id"`
	File    string `json:"file"`
	Entries int64  `json:"entries"`
	Bytes   int64  `json:"bytes"`
}

// LedgerStats walks ledger's entries from 0 to its last entry and reports
// where each one is. progress, if not nil, is called with entries done and
// the total.
func (b *Bookie) LedgerStats(ledger int64, progress func(done, total int64)) (LedgerStats, error) {
	st, err := b.lockLedger(ledger, false)
	if err != nil {
		return LedgerStats{}, err
	}
	if st == nil {
		return LedgerStats{}, ErrNoLedger
	}
	if st.deleted || !st.known {
		st.mu.Unlock()
		return LedgerStats{}, ErrNoLedger
	}
	meta, last := st.meta, st.lastEntry
	st.mu.Unlock()
	s := LedgerStats{Ledger: ledger, MasterKey: hex.EncodeToString(meta.masterKey), Fenced: meta.fenced, FirstEntry: -1, LastEntry: last}
	if meta.hasLAC {
		lac := meta.lac
		s.ExplicitLAC = &lac
	}
	shares := map[uint32]*LogShare{}
	var buf []byte // reused for every entry read
	for e := int64(0); e <= last; e++ {
		if progress != nil && (e%4096 == 0 || e == last) {
			progress(e+1, last+1)
		}
		if v, ok := b.wc.appendGet(buf[:0], ledger, e); ok {
			buf = v
			s.add(e, len(v))
			s.InWriteCache++
			continue
		}
		loc, ok, err := b.idx.Get(ledger, e)
		if err != nil {
			return s, b.storageErr(err)
		}
		if !ok {
			if s.FirstEntry >= 0 {
				s.Missing++
			}
			continue
		}
		v, err := b.readStored(buf[:0], ledger, e)
		if err != nil {
			return s, fmt.Errorf("ledger %d entry %d at %#x: %w", ledger, e, loc, err)
		}
		buf = v
		s.add(e, len(v))
		id, _ := entrylog.SplitLocation(loc)
		sh := shares[id]
		if sh == nil {
			sh = &LogShare{LogID: id, File: entrylog.FileName(id)}
			shares[id] = sh
		}
		sh.Entries++
		sh.Bytes += int64(len(v))
	}
	for _, sh := range shares {
		s.Logs = append(s.Logs, *sh)
	}
	slices.SortFunc(s.Logs, func(a, b LogShare) int { return int(a.LogID) - int(b.LogID) })
	return s, nil
}

func (s *LedgerStats) add(e int64, n int) {
	if s.FirstEntry < 0 {
		s.FirstEntry = e
	}
	s.Entries++
	s.Bytes += int64(n)
}

// RebuildIndex rebuilds the index of opts' ledger directories from the
// entry logs: every record's location is set (a later copy of an entry,
// written by compaction, wins), and ledgers the index does not know are
// created with an empty master key (the first add or fence adopts the one
// it carries). Fenced flags, master keys and explicit LACs of ledgers the
// index lost cannot be recovered from entry logs; the journal replay at
// the next Open restores those still in the journal. Run it with the
// bookie stopped. progress, if not nil, gets the entries done so far.
func RebuildIndex(opts Options, progress func(entries int64)) (entries int64, err error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return 0, err
	}
	el, err := entrylog.Open(entrylog.Options{FS: opts.FS, Dirs: opts.LedgerDirs, LogSizeLimit: opts.EntryLogMaxSize,
		CompactionRateBytes: opts.CompactionRateBytes, Logger: opts.Logger})
	if err != nil {
		return 0, fmt.Errorf("bookie: rebuild index: %w", err)
	}
	defer el.Close()
	idx, err := openIndex(&opts)
	if err != nil {
		return 0, fmt.Errorf("bookie: rebuild index: %w", err)
	}
	defer func() { err = errors.Join(err, idx.Close()) }()
	known := map[int64]bool{}
	err = entryLogStore{el}.Scan(func(ledger, entry int64, loc uint64) error {
		if !known[ledger] {
			_, ok, err := idx.Meta(ledger)
			if err != nil {
				return err
			}
			if !ok {
				if err := idx.SetMeta(ledger, ledgerMeta{}); err != nil {
					return err
				}
			}
			known[ledger] = true
		}
		entries++
		if progress != nil && entries%4096 == 0 {
			progress(entries)
		}
		return idx.Put(ledger, entry, loc)
	})
	if err != nil {
		return entries, fmt.Errorf("bookie: rebuild index: %w", err)
	}
	if progress != nil {
		progress(entries)
	}
	return entries, idx.Flush()
}
