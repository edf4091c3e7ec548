// Package txnperf is the transaction benchmark driver: transactional
// produce (transactions of k messages, committed one after another by
// each of several producers) against plain produce on the same broker in
// the same run, and plain produce against a broker with the transaction
// coordinator disabled. It speaks the Pulsar protocol through
// pulsar-client-go (the client applications use for transactions) and
// starts no broker itself: the callers (BenchmarkTransactions and its
// short CI test in e2e) start `magnetar standalone` processes
// and hand their service URLs in. NOTES.md in this directory has the
// figures and the command.
//
// # Cases
//
//   - plain: each producer sends asynchronously for the case's duration
//     with at most MaxPending messages outstanding (default batching),
//     then flushes; the rate is acknowledged messages over the time until
//     the last receipt.
//   - txn-k: each producer loops: NewTransaction, k asynchronous sends
//     with the transaction, flush, wait for the k receipts, Commit. A
//     producer starts no new transaction after the duration; the rate is
//     committed messages over the time until the last commit returned.
//   - groups-k: txn-k without the transaction (k sends, flush, wait for
//     the receipts), the baseline that shows what the transaction adds
//     to the same produce pattern.
//
// # Measurements
//
// Commit latency is the time Commit takes (END_TXN to its answer: the
// coordinator logs COMMITTING, ends the transaction on every partition,
// which writes the commit marker, and logs COMMITTED). Transaction latency
// is NewTransaction to the end of Commit. Percentiles are nearest-rank
// over every transaction of the case. Broker CPU (when Run is given a
// source, such as /proc of the standalone) is the broker process's CPU
// time during the case; Run first waits for the broker to go idle
// (under 5 % of a core over 200 ms, at most 20 s) so that work left by
// the previous case is not charged to the next.
//
// # Invariants
//
//   - A message counts only once its receipt came back without error, and
//     for txn-k only once its transaction's Commit returned nil; any error
//     ends the case with that error.
//   - Every goroutine a case starts is waited for and every producer
//     closed before the case returns.
//   - With Verify, each case's topic is read back from the earliest
//     position: exactly the counted messages, each payload once, and
//     nothing after them (Reader.HasNext false).
package txnperf
