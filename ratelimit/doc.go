// Package ratelimit is the token-bucket arithmetic behind Magnetar's rate
// limits (Pulsar's publish, dispatch and subscribe rates): a Limiter is a
// pair of buckets, messages and bytes, refilled at the configured rate and
// holding at most one period's worth.
//
// Work is counted after it is done (a SEND after it was read, an entry
// after it was dispatched) and may take a bucket below zero: Take
// reports how long until both buckets are positive again, and the caller
// waits that long before the next unit (Wait tells it when). Over any
// window longer than the period the work done is the limit times the
// window plus at most one period's burst; a unit larger than the burst
// still counts in full (it is taken as whole bursts).
//
// PerKey limits events (SUBSCRIBEs) per key (a consumer identity): one
// bucket per key, created on the key's first event and forgotten by
// Prune once it is full again.
//
// Limiters are safe for concurrent use. A nil *Limiter limits nothing.
// The package knows no broker: package enforcement builds limiters from
// a topic's policy and hands them to the broker core (broker.Limits).
package ratelimit
