package mledger

import "github.com/RoaringBitmap/roaring/v2"

// maxLedgerEntries is the most entries the managed ledger writes to one
// ledger. A cursor keeps the acked entry ids of a ledger in a 32-bit
// roaring bitmap, so every entry id must fit in a uint32; the rollover at
// this count is forced even before MinLedgerRolloverTime. A variable so
// that tests can lower it.
var maxLedgerEntries int64 = 1<<32 - 1

// runEnd returns the last id of the run of consecutive ids in bm that
// starts at x, or x-1 when x is not in bm. The result is in [x-1, 2^32-1]:
// it is never a "not found" sentinel, so it can become a position.
//
// It walks bm with an iterator instead of calling NextAbsentValue, which
// in roaring v2.30.0 answers -1 or 0 when x's container is the last one
// and x sits at a 65,536 boundary (entryset_test.go keeps a model check of
// every roaring call the ack state relies on at container boundaries).
// The walk costs the length of the run; advance removes the run it walked,
// so over a cursor's life each acked entry is walked about once.
func runEnd(bm *roaring.Bitmap, x uint32) int64 {
	it := bm.Iterator()
	it.AdvanceIfNeeded(x)
	last := int64(x) - 1
	for it.HasNext() {
		v := int64(it.Next())
		if v != last+1 {
			break
		}
		last = v
	}
	return last
}
