package dispatch

import "github.com/magnetar-mq/magnetar/broker/storage"

// QueueCursor is the cursor of a non-persistent topic's subscription: a
// queue of the entries Offer handed it while some consumer had permits.
// Nothing is stored, so the subscription's pending entries keep their
// bytes. Only its subscription's loop uses it.
type QueueCursor struct{ q []ledgerEntry }

// NewQueueCursor returns an empty queue cursor.
func NewQueueCursor() *QueueCursor { return &QueueCursor{} }

// Offer hands e to a non-persistent subscription (over a QueueCursor):
// dispatched when some consumer has permits and the dispatch rate limits
// allow it now, dropped otherwise (as Pulsar does).
func (s *Subscription) Offer(e storage.LedgerEntry) {
	q, ok := s.cur.(*QueueCursor)
	if !ok || !s.anyPermits() || s.rateLimitedNow() {
		return
	}
	q.q = append(q.q, e)
	s.dispatch()
}

func (c *QueueCursor) ReadEntries(max int) ([]storage.LedgerEntry, error) {
	n := min(max, len(c.q))
	out := c.q[:n:n]
	c.q = c.q[n:]
	if len(c.q) == 0 {
		c.q = nil
	}
	return out, nil
}
func (c *QueueCursor) Ack(...storage.Position) error { return nil }
func (c *QueueCursor) AckBatchIndexes(storage.Position, []int64, int) (bool, error) {
	return true, nil
}
func (c *QueueCursor) AckCumulative(storage.Position) error { return nil }
func (c *QueueCursor) BatchAckSet(storage.Position) []int64 { return nil }
func (c *QueueCursor) MarkDelete() storage.Position {
	return storage.Position{LedgerID: 0, EntryID: -1}
}
func (c *QueueCursor) IsAcked(storage.Position) bool { return false }
func (c *QueueCursor) Seek(storage.Position) error   { c.q = nil; return nil }
func (c *QueueCursor) SeekTime(int64) error          { c.q = nil; return nil }
func (c *QueueCursor) Backlog() (int64, int64)       { return 0, 0 }
func (c *QueueCursor) Durable() bool                 { return false }

// ReadAt: a non-persistent topic stores nothing (its pending entries keep
// their bytes instead).
func (c *QueueCursor) ReadAt(ps []storage.Position) ([][]byte, error) {
	return nil, storage.ErrEntryGone
}
