// Package memmeta is the in-memory metadata.Store the tests of every
// package share (the broker's, the managed ledger's): no watches and no
// ephemeral nodes, nothing persisted. New makes a tree and its first
// client; Client another client of the same tree (each closed on its
// own), which is how the conformance suite (metadata/metadatatest) sees
// two sessions.
//
// Invariants: every node's parents exist ("/" always does); a parent's
// child names are indexed (kids) so Children and Delete cost the number
// of children, not the tree; versions start at 0 and grow by one per
// write; CreateSequential numbers count per prefix, ten digits, never
// reused. Paths are checked with metadata.ValidatePath.
//
// Tests may inject faults: FailGet fails reads of chosen paths, FailPuts
// the next n writes; BytesPut and Puts count the metadata traffic.
package memmeta
