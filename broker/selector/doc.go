// Package selector decides which consumer of a subscription receives an
// entry: one Selector per subscription type (Exclusive, Failover,
// Shared, Key_Shared), as Pulsar's dispatchers choose.
//
//   - Exclusive serves one consumer; a second is refused.
//   - Failover delivers everything to one active consumer: the one at
//     index partition % n of the consumers sorted by (priority, name,
//     arrival); partition is 0 for a non-partitioned topic.
//   - Shared round-robins entries over the consumers that can take one.
//   - Key_Shared routes every key to one consumer by the key's slot
//     (Murmur3 % Slots), in one of three modes: auto-split (Pulsar's
//     default), consistent hashing, or sticky ranges the consumers
//     declare (KeyShared).
//
// The algorithms are pure: a selector sees consumers only through the
// Consumer constraint (permits, priority, name, arrival, declared
// ranges), so tests drive them without sockets or storage. A selector is
// owned by its subscription's goroutine and is not safe for concurrent
// use.
package selector
