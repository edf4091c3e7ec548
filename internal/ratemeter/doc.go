// Package ratemeter turns cumulative counters (messages, bytes) into
// per-second rates measured between successive reads at least a second
// apart: the broker's per-bundle load reports (cluster load shedding)
// and a feature's own stats, such as the replicators' (package georep).
//
// Invariants: the first Update primes the meter and reads 0; a later
// one less than a second after the last measurement returns the
// previous rates unchanged (so frequent readers all see the same
// figures); counters are expected to grow (a smaller value gives a
// negative rate for that interval). A Meter's zero value is ready and
// safe for concurrent use. It imports nothing of the project.
package ratemeter
