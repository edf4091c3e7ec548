package mledger

import "context"

// CrashForTest drops the managed ledger without flushing cursors, closing
// ledgers or updating the info, as a process crash would. Background
// goroutines are stopped so the test can go on.
func (ml *ManagedLedger) CrashForTest() {
	ml.mu.Lock()
	ml.state = stateClosed
	ops := append(ml.retry, ml.queued...)
	ml.retry, ml.queued = nil, nil
	ml.mu.Unlock()
	for _, op := range ops {
		op.cb(Position{}, ErrClosed)
	}
	ml.wg.Wait()
	ml.stopOffload()
	ml.cache.clear()
	ml.f.forget(ml)
}

// PersistAllForTest flushes every durable cursor.
func (ml *ManagedLedger) PersistAllForTest(ctx context.Context) error {
	for _, c := range ml.Cursors() {
		if err := c.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// SetMaxLedgerEntriesForTest lowers the forced-rollover entry count until
// the test ends.
func SetMaxLedgerEntriesForTest(t interface{ Cleanup(func()) }, n int64) {
	old := maxLedgerEntries
	maxLedgerEntries = n
	t.Cleanup(func() { maxLedgerEntries = old })
}
