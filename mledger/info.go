package mledger

import (
	"maps"
	"slices"
)

// StoredInfo is what a managed ledger's metadata nodes hold, for the
// admin API's internal-info (Pulsar's ManagedLedgerInfo, which is read
// from the metadata store): the info node as last read or written and
// each durable cursor's node.
type StoredInfo struct {
	// Version is the info node's metadata version.
	Version int64
	// Ledgers are the ledgers as the info node records them: the open
	// ledger's entries and size are not recorded until it closes
	// (Entries and Size 0, Timestamp 0).
	Ledgers    []LedgerInfo
	Terminated bool
	// LastConfirmed is the last entry (the terminated position of a
	// terminated ledger).
	LastConfirmed Position
	// Properties are the info node's properties (infoprops.go).
	Properties map[string]string
	Cursors    []StoredCursor
}

// StoredCursor is one durable cursor's node: its cursor ledger (-1:
// none yet), mark-delete position and the individually deleted ranges
// beyond it.
type StoredCursor struct {
	Name         string
	Version      int64
	CursorLedger int64
	MarkDelete   Position
	// Deleted are the acknowledged runs beyond MarkDelete, each the
	// entries (From, To]: From is the entry before the run's first.
	Deleted    []PositionRange
	Properties map[string]string
}

// PositionRange is the half-open range of entries (From, To].
type PositionRange struct{ From, To Position }

// StoredInfo returns the managed ledger's stored info and its durable
// cursors' (the cursors' mark-delete and ranges as they are now: what
// the next persist writes).
func (ml *ManagedLedger) StoredInfo() StoredInfo {
	ml.infoMu.Lock()
	out := StoredInfo{Version: int64(ml.infoVersion), Properties: map[string]string{}}
	if ml.info != nil {
		out.Ledgers = slices.Clone(ml.info.ledgers)
		out.Terminated = ml.info.terminated
		if ml.info.props != nil {
			out.Properties = maps.Clone(ml.info.props)
		}
	}
	ml.infoMu.Unlock()
	ml.mu.RLock()
	out.LastConfirmed = ml.lastPositionLocked()
	cursors := ml.cursorListLocked()
	ml.mu.RUnlock()
	for _, c := range cursors {
		if !c.durable {
			continue
		}
		out.Cursors = append(out.Cursors, c.stored())
	}
	return out
}

func (c *Cursor) stored() StoredCursor {
	s := StoredCursor{Name: c.name, CursorLedger: -1, Properties: c.Properties()}
	c.persistMu.Lock()
	s.Version = int64(c.nodeVersion)
	if c.pl != nil {
		s.CursorLedger = c.pl.w.ID()
	}
	c.persistMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	s.MarkDelete = c.st.markDelete
	for _, l := range c.st.ledgers {
		bm := c.st.acked[l]
		if bm == nil {
			continue
		}
		first, prev := int64(-1), int64(-1)
		it := bm.Iterator()
		for it.HasNext() {
			e := int64(it.Next())
			if first >= 0 && e == prev+1 {
				prev = e
				continue
			}
			if first >= 0 {
				s.Deleted = append(s.Deleted, PositionRange{From: Position{l, first - 1}, To: Position{l, prev}})
			}
			first, prev = e, e
		}
		if first >= 0 {
			s.Deleted = append(s.Deleted, PositionRange{From: Position{l, first - 1}, To: Position{l, prev}})
		}
	}
	return s
}
