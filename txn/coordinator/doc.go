// Package coordinator is the transaction coordinator (TC): it hands out
// transaction ids, keeps each transaction's participants (the topics it
// produced to, the subscriptions it acknowledged on), ends transactions on
// them through a txn.Participant, and aborts the ones that outlive their
// timeout.
//
// Invariants:
//   - Every state transition is a record in the coordinator's Log, durable
//     before the coordinator acts on it or answers the client. Records
//     enter the log in the order the decisions were taken (appendMu), and
//     are applied to the in-memory state in log order, from the append
//     callbacks; recovery applies the same records the same way.
//   - A transaction id is (coordinator id, sequence). Every record carries
//     the highest sequence handed out when it was written, and the log is
//     never trimmed past its last record, so a restart continues above
//     every id ever given to a client.
//   - END_TXN answers success only after every participant ended the
//     transaction durably and COMMITTED/ABORTED is logged. A transaction
//     logged as COMMITTING/ABORTING is ended on its participants after a
//     restart; one logged OPEN keeps its deadline (open time + ttl).
//   - One goroutine per coordinator runs its single timer (deadlines in a
//     min-heap) and the log trimming.
//
// The record format and the state machine are in docs/transactions.md.
package coordinator
