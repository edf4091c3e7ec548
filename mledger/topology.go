package mledger

import "sort"

// ledgerList is a topology over an ordered ledger list whose entries counts
// are the confirmed entries (the current ledger's count grows with adds).
type ledgerList []LedgerInfo

func (ls ledgerList) find(id int64) int {
	return sort.Search(len(ls), func(i int) bool { return ls[i].LedgerID >= id })
}

// NextPosition returns the entry after p among ledgers ls (Stats().Ledgers,
// ordered by id); false: none is stored.
func NextPosition(ls []LedgerInfo, p Position) (Position, bool) { return ledgerList(ls).next(p) }

func (ls ledgerList) next(p Position) (Position, bool) {
	i := ls.find(p.LedgerID)
	if i < len(ls) && ls[i].LedgerID == p.LedgerID {
		if p.EntryID+1 < ls[i].Entries {
			return Position{p.LedgerID, p.EntryID + 1}, true
		}
		i++
	}
	for ; i < len(ls); i++ {
		if ls[i].Entries > 0 {
			return Position{ls[i].LedgerID, 0}, true
		}
	}
	return Position{}, false
}

// last returns the last confirmed position, or (firstLedger, -1) style
// "before everything" when there are no entries; ok is false when the list
// holds no entries at all.
func (ls ledgerList) last() (Position, bool) {
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].Entries > 0 {
			return Position{ls[i].LedgerID, ls[i].Entries - 1}, true
		}
	}
	return Position{}, false
}

// entriesBetween counts the entries in (from, to].
func (ls ledgerList) entriesBetween(from, to Position) int64 {
	if !from.Less(to) {
		return 0
	}
	var n int64
	for _, l := range ls {
		if l.LedgerID < from.LedgerID || l.LedgerID > to.LedgerID || l.Entries == 0 {
			continue
		}
		lo, hi := int64(0), l.Entries-1
		if l.LedgerID == from.LedgerID && from.EntryID+1 > lo {
			lo = from.EntryID + 1
		}
		if l.LedgerID == to.LedgerID && to.EntryID < hi {
			hi = to.EntryID
		}
		if hi >= lo {
			n += hi - lo + 1
		}
	}
	return n
}

// ceil returns the first existing position at or after p.
func (ls ledgerList) ceil(p Position) (Position, bool) {
	if p.EntryID < 0 {
		p.EntryID = 0
	}
	return ls.next(Position{p.LedgerID, p.EntryID - 1})
}

// entries returns the confirmed entry count of ledger id (0 if unknown).
func (ls ledgerList) entries(id int64) int64 {
	if i := ls.find(id); i < len(ls) && ls[i].LedgerID == id {
		return ls[i].Entries
	}
	return 0
}
