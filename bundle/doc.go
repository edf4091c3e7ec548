// Package bundle maps topics to namespace bundles exactly as Apache Pulsar
// does, so that a Magnetar cluster and its clients agree with Pulsar's
// tooling on which bundle (and therefore which broker) serves a topic.
//
// # Hash space and names
//
// A namespace's 32-bit hash space [0x00000000, 0xffffffff] is cut into
// contiguous ranges called bundles. A bundle covers [Lower, Upper), except
// the last one, which covers [Lower, 0xffffffff] (the full upper bound is
// inclusive). A bundle's range string is "0x%08x_0x%08x" in lower-case hex,
// for example "0x00000000_0x40000000"; its key is "{tenant}/{ns}/{range}".
//
// The boundaries of a namespace are stored as Pulsar's BundlesData JSON:
//
//	{"boundaries":["0x00000000","0x40000000",...,"0xffffffff"],"numBundles":N}
//
// with numBundles = len(boundaries)-1. Boundaries are strictly increasing,
// start at 0x00000000 and end at 0xffffffff (Parse rejects anything else).
//
// # Initial boundaries
//
// N bundles (Even) start at 0, seg, 2·seg, …, (N-1)·seg with seg = 2^32/N
// (integer division), then 0xffffffff: the last bundle absorbs the rest.
// N = 4 gives 0x00000000_0x40000000, 0x40000000_0x80000000,
// 0x80000000_0xc0000000 and 0xc0000000_0xffffffff.
//
// # Topic to bundle
//
// The hash of a topic is the IEEE CRC-32 (hash/crc32.ChecksumIEEE) of its
// canonical full name, for example "persistent://public/default/my-topic";
// a partition hashes under its own name ("...-partition-3"), so the
// partitions of one topic spread over bundles. The bundle is found by a
// binary search over the boundaries: an exact hit on boundary i selects
// bundle i (the last boundary selects the last bundle), otherwise the
// bundle whose lower bound is the greatest boundary below the hash.
// Example: "persistent://public/default/my-topic" hashes to 0x2bad45f7 and
// falls in 0x00000000_0x40000000 of 4 bundles.
//
// # Split
//
// Split divides one bundle in two at a point strictly inside it. The
// range_equally_divide algorithm takes lower + (upper-lower)/2; the
// topic_count_equally_divide algorithm (SplitByTopics) takes the midpoint
// between the two middle topic hashes. Splitting a bundle of width 1 is an
// error (ErrCannotSplit).
//
// Everything in this package is a pure function of its inputs: no I/O.
package bundle
