// Package acceptloop is the accept loop every TCP server of Magnetar's
// binary protocols runs (the broker's Pulsar listeners, the proxy's, the
// bookie's): accept until the listener closes, hand each connection on,
// and survive the errors a loaded server meets.
//
// Invariants: Run returns only when the listener is closed (net.ErrClosed
// or any error once done is closed) or the handler says stop; every other
// accept error — a timeout, EMFILE/ENFILE when descriptors run out,
// ECONNABORTED — is retried after a back-off that doubles from 5 ms to
// 1 s and resets on the next accepted connection, and is logged at most
// once a second, so a descriptor shortage neither kills the listener nor
// floods the log. A connection accepted after the handler said stop is
// closed by the handler's owner, not here (Run hands each one over).
package acceptloop
