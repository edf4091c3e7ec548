// Package txn holds what the transaction coordinator and the transaction
// participants (topics with their transaction buffers, subscriptions with
// their pending-ack stores) share: the transaction id, the end action, and
// the interface through which a coordinator ends a transaction on the
// topics and subscriptions that joined it.
//
// Transaction ids are two uint64 halves as on the wire
// (txnid_most_bits / txnid_least_bits): the most-significant half is the
// coordinator id (the partition of the coordinator's assign topic), the
// least-significant half a sequence the coordinator never reuses, across
// restarts included. See docs/transactions.md.
package txn
