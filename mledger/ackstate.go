package mledger

import (
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// topology tells the ack state which positions exist, so that mark-delete
// can advance across ledger boundaries and over empty ledgers.
type topology interface {
	// next returns the position of the entry after p, and false when no
	// confirmed entry follows p.
	next(p Position) (Position, bool)
	// entries returns the number of confirmed entries of ledger id.
	entries(id int64) int64
}

// ackState is a cursor's acknowledgement state: everything at or before
// markDelete is acknowledged; beyond it, acked holds individually acked
// entries (one roaring bitmap of entry ids per ledger) and batch holds the
// ack_set of partially acknowledged batches (bit set = still unacked).
//
// Invariants: every acked entry and every batch key is > markDelete; an
// entry is never both in acked and batch; no bitmap is empty; ackedCount
// is the total cardinality of acked. Not safe for concurrent use.
type ackState struct {
	markDelete Position
	acked      map[int64]*roaring.Bitmap
	ledgers    []int64 // sorted keys of acked
	batch      map[Position][]uint64
	ackedCount int64
}

func newAckState(md Position) *ackState {
	return &ackState{markDelete: md, acked: map[int64]*roaring.Bitmap{}, batch: map[Position][]uint64{}}
}

func (s *ackState) bitmap(ledger int64, create bool) *roaring.Bitmap {
	bm := s.acked[ledger]
	if bm == nil && create {
		bm = roaring.New()
		s.acked[ledger] = bm
		i, _ := slices.BinarySearch(s.ledgers, ledger)
		s.ledgers = slices.Insert(s.ledgers, i, ledger)
	}
	return bm
}

func (s *ackState) dropLedger(ledger int64) {
	bm := s.acked[ledger]
	if bm == nil {
		return
	}
	s.ackedCount -= int64(bm.GetCardinality())
	delete(s.acked, ledger)
	if i, ok := slices.BinarySearch(s.ledgers, ledger); ok {
		s.ledgers = slices.Delete(s.ledgers, i, i+1)
	}
}

// isAcked reports whether p is acknowledged (entry level).
func (s *ackState) isAcked(p Position) bool {
	if !s.markDelete.Less(p) {
		return true
	}
	bm := s.acked[p.LedgerID]
	return bm != nil && p.EntryID <= math.MaxUint32 && bm.Contains(uint32(p.EntryID))
}

// ack acknowledges entry p; it reports whether that changed anything.
func (s *ackState) ack(p Position) bool {
	if !s.markDelete.Less(p) || p.EntryID < 0 || p.EntryID > math.MaxUint32 {
		return false
	}
	delete(s.batch, p)
	if s.bitmap(p.LedgerID, true).CheckedAdd(uint32(p.EntryID)) {
		s.ackedCount++
		return true
	}
	return false
}

// ackNext is the fast path of in-order acks: if p is the entry right after
// mark-delete, mark-delete moves to p (no bitmap is touched) and it reports
// true.
func (s *ackState) ackNext(p Position, t topology) bool {
	n, ok := t.next(s.markDelete)
	if !ok || n != p {
		return false
	}
	s.markDelete = p
	delete(s.batch, p)
	return true
}

// ackRange acknowledges entries first..last of one ledger.
func (s *ackState) ackRange(ledger, first, last int64) {
	if s.markDelete.LedgerID == ledger && first <= s.markDelete.EntryID {
		first = s.markDelete.EntryID + 1
	}
	if ledger < s.markDelete.LedgerID || first > last || first < 0 || last > math.MaxUint32 {
		return
	}
	bm := s.bitmap(ledger, true)
	before := bm.GetCardinality()
	bm.AddRange(uint64(first), uint64(last)+1)
	s.ackedCount += int64(bm.GetCardinality() - before)
	if len(s.batch) > 0 {
		for p := range s.batch {
			if p.LedgerID == ledger && p.EntryID >= first && p.EntryID <= last {
				delete(s.batch, p)
			}
		}
	}
}

// ackBatch ANDs set into p's stored ack set (bit set = unacked). When no
// bit remains set the entry is acknowledged. It reports whether p became
// fully acknowledged by this call.
func (s *ackState) ackBatch(p Position, set []uint64) bool {
	if s.isAcked(p) {
		return false
	}
	cur, ok := s.batch[p]
	if !ok {
		cur = slices.Clone(set)
	} else {
		for i := range cur {
			if i < len(set) {
				cur[i] &= set[i]
			} else {
				cur[i] = 0
			}
		}
	}
	for _, w := range cur {
		if w != 0 {
			s.batch[p] = cur
			return false
		}
	}
	return s.ack(p)
}

// batchSet returns p's stored ack set, or nil.
func (s *ackState) batchSet(p Position) []uint64 { return s.batch[p] }

// setMarkDelete moves the mark-delete position to p (forward or back) and
// drops state at or before it.
func (s *ackState) setMarkDelete(p Position) {
	s.markDelete = p
	for len(s.ledgers) > 0 && s.ledgers[0] < p.LedgerID {
		s.dropLedger(s.ledgers[0])
	}
	if bm := s.acked[p.LedgerID]; bm != nil && p.EntryID >= 0 {
		before := bm.GetCardinality()
		bm.RemoveRange(0, uint64(p.EntryID)+1)
		s.ackedCount -= int64(before - bm.GetCardinality())
		if bm.IsEmpty() {
			s.dropLedger(p.LedgerID)
		}
	}
	for q := range s.batch {
		if !p.Less(q) {
			delete(s.batch, q)
		}
	}
}

// advance moves mark-delete over the acknowledged entries that follow it.
func (s *ackState) advance(t topology) {
	for len(s.ledgers) > 0 {
		n, ok := t.next(s.markDelete)
		if !ok {
			return
		}
		bm := s.acked[n.LedgerID]
		if bm == nil || n.EntryID > math.MaxUint32 || !bm.Contains(uint32(n.EntryID)) {
			return
		}
		end := runEnd(bm, uint32(n.EntryID))
		if last := t.entries(n.LedgerID) - 1; end > last {
			// Acks beyond the confirmed end cannot be trusted to stay
			// acks of entries yet to be written.
			end = last
		}
		if end < n.EntryID {
			return
		}
		s.setMarkDelete(Position{n.LedgerID, end})
	}
}

// reset forgets every individual and batch ack and sets mark-delete to p.
func (s *ackState) reset(p Position) {
	s.markDelete = p
	s.acked = map[int64]*roaring.Bitmap{}
	s.ledgers = nil
	s.batch = map[Position][]uint64{}
	s.ackedCount = 0
}

// batchKeys returns the batch positions in order.
func (s *ackState) batchKeys() []Position {
	keys := make([]Position, 0, len(s.batch))
	for p := range s.batch {
		keys = append(keys, p)
	}
	slices.SortFunc(keys, Position.Compare)
	return keys
}
