// Package inflight counts operations in flight and lets a caller wait
// for them to drain: the broker's walks over its loaded topics (each
// holds the list of topics it began with, so the idle sweep's memory
// release waits for them before it collects).
//
// Invariants: Begin never blocks and may nest; each Begin's end runs
// once; Wait returns true only at a moment the count was zero (an
// operation begun while it waits is waited for too), false once its
// limit passed or its stop channel closed. It imports nothing of the
// project.
package inflight
