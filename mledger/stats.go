package mledger

import "slices"

// Stats is a snapshot of a managed ledger for the broker and admin API
// (Pulsar's internalStats).
type Stats struct {
	Name                string
	EntriesAddedCounter int64
	NumberOfEntries     int64
	TotalSize           int64
	// OffloadedSize is the size of the ledgers whose offload completed;
	// BookieSize what the bookies still hold (TotalSize minus the
	// offloaded ledgers whose bookie copy was deleted).
	OffloadedSize int64
	BookieSize    int64
	Offload       OffloadStatus
	LastConfirmed Position
	Terminated    bool
	Ledgers       []LedgerInfo
	Cursors       []CursorStats
}

// CursorStats describes one cursor.
type CursorStats struct {
	Name                     string
	Durable                  bool
	MarkDelete               Position
	ReadPosition             Position
	BacklogEntries           int64
	BacklogMessages          int64
	IndividuallyDeletedCount int64
	PartiallyAckedBatches    int
	CursorLedger             int64
	PersistedSnapshotBytes   int64
	PersistedDeltaBytes      int64
}

// Stats returns the current statistics.
func (ml *ManagedLedger) Stats() Stats {
	ml.mu.RLock()
	s := Stats{
		Name:                ml.name,
		EntriesAddedCounter: ml.entriesAdded.Load(),
		LastConfirmed:       ml.lastPositionLocked(),
		Terminated:          ml.state == stateTerminated,
		Ledgers:             slices.Clone(ml.ledgers),
	}
	cursors := ml.cursorListLocked()
	ml.mu.RUnlock()
	for _, l := range s.Ledgers {
		s.NumberOfEntries += l.Entries
		s.TotalSize += l.Size
		if l.Offload != nil && l.Offload.Complete {
			s.OffloadedSize += l.Size
		}
		if l.Offload == nil || !l.Offload.BookkeeperDeleted {
			s.BookieSize += l.Size
		}
	}
	s.Offload = ml.OffloadStatus()
	for _, c := range cursors {
		s.Cursors = append(s.Cursors, c.Stats())
	}
	return s
}

// Size returns the entries and bytes the ledgers hold (Stats'
// NumberOfEntries and TotalSize) without copying the ledger list or
// reading the cursors.
func (ml *ManagedLedger) Size() (entries, bytes int64) {
	ml.mu.RLock()
	defer ml.mu.RUnlock()
	for _, l := range ml.ledgers {
		entries += l.Entries
		bytes += l.Size
	}
	return entries, bytes
}

// EntriesAddedCounter returns the number of entries added since open.
func (ml *ManagedLedger) EntriesAddedCounter() int64 { return ml.entriesAdded.Load() }

// Stats returns the cursor's statistics.
func (c *Cursor) Stats() CursorStats {
	e, m := c.Backlog()
	s := CursorStats{Name: c.name, Durable: c.durable, BacklogEntries: e, BacklogMessages: m,
		ReadPosition: c.ReadPosition(), CursorLedger: -1}
	c.mu.Lock()
	s.MarkDelete = c.st.markDelete
	s.IndividuallyDeletedCount = c.st.ackedCount
	s.PartiallyAckedBatches = len(c.st.batch)
	c.mu.Unlock()
	if c.persistMu.TryLock() {
		if c.pl != nil {
			s.CursorLedger = c.pl.w.ID()
			s.PersistedSnapshotBytes = c.pl.snapshotBytes
			s.PersistedDeltaBytes = c.pl.deltaBytes
		}
		c.persistMu.Unlock()
	}
	return s
}
