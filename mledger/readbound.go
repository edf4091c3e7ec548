package mledger

// SetReadBound limits what the cursors of ml read: when f reports a bound
// (ok), ReadEntries returns no entry at or after it and Backlog counts no
// entry at or after it. f is called under the managed ledger's read lock
// on every ReadEntries and Backlog call, so it must not block or call back
// into ml; a bound that only ever grows past entries already stored keeps
// reads consistent. The broker's transaction buffer uses it to hold
// consumers before the first entry of the oldest open transaction (the
// max read position). A nil f removes the bound. With no bound set, a read
// costs one atomic load more.
func (ml *ManagedLedger) SetReadBound(f func() (Position, bool)) {
	if f == nil {
		ml.readBound.Store(nil)
		return
	}
	ml.readBound.Store(&f)
}

// readBoundNow returns the current read bound (exclusive), if any.
func (ml *ManagedLedger) readBoundNow() (Position, bool) {
	if f := ml.readBound.Load(); f != nil {
		return (*f)()
	}
	return Position{}, false
}

// before returns the last position before b and at or before last; ok is
// false when there is none.
func (ls ledgerList) before(b, last Position) (Position, bool) {
	if last.Less(b) {
		return last, true
	}
	i := ls.find(b.LedgerID)
	if i < len(ls) && ls[i].LedgerID == b.LedgerID && b.EntryID > 0 && ls[i].Entries > 0 {
		return Position{b.LedgerID, min(b.EntryID-1, ls[i].Entries-1)}, true
	}
	for i--; i >= 0; i-- {
		if ls[i].Entries > 0 {
			return Position{ls[i].LedgerID, ls[i].Entries - 1}, true
		}
	}
	return Position{}, false
}
