// Package entryset holds the ordered sets a subscription's loop keeps
// per entry: the replay set (entries to (re)deliver before new ones, in
// position order), a min-heap by position (the pending order of an
// Exclusive or Failover subscription, which cumulative acks pop) and the
// delayed set (a min-heap by due time, then position).
//
// The sets are generic over the element, which the core gives them as a
// pointer with a few methods (Ordered: Before, the position order;
// Member adds the replay set's membership flag and the entry's size), so
// this package knows nothing of the broker.
//
// # Complexity
//
// The sets' sizes follow what clients do (a consumer that never acks, a
// nack of every message, a million delayed messages), so every
// operation is O(log n) or amortised O(1) in the number of elements,
// never O(n): a sorted slice with inserts in the middle made a consumer
// holding 1M unacked messages take minutes to leave.
//
//	Heap.Push, Heap.Pop              O(log n)
//	Heap.Init                        O(n)
//	DelayHeap.Push, DelayHeap.Pop    O(log n)
//	Replay.Add, taking the first     O(log n)
//	Replay.AddAll                    O(k) into an empty set, else O(k log n)
//	Replay.RemoveWhile               O(k log n) for the k elements removed
//	Replay.Reset                     O(n)
//	a scan looking at k held elements again    O(k)
//
// No operation allocates except to grow a slice (amortised), and a scan
// that holds elements back (one slice per pass that holds any).
//
// # Invariants of the replay set
//
// Layout: front is a sorted slice of elements a scan looked at and held
// back (Key_Shared: their consumer had no permits); heap holds everything
// added since; the set's order merges the two. An element is in the set
// at most once (its Queued flag, which only the set sets) and leaves it
// only from the front of that order (a scan's Next, RemoveWhile) or all
// at once (Reset), so front and heap never hold a stale copy. Bytes is
// the sum of the elements' Size at the time they entered.
//
// # Concurrency
//
// None of the sets is safe for concurrent use: the subscription's loop
// owns them. During a scan no other method of its Replay may run.
package entryset
