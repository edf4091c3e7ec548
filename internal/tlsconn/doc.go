// Package tlsconn is the client side of TLS on a connection Magnetar
// dialled itself: the Pulsar client's connections to brokers, the
// proxy's to brokers, the ledger client's to bookies.
//
// Invariants: the configuration given is never modified (Client clones
// it before filling in ServerName); the server name defaults to the
// host of the address dialled, so a certificate is checked against the
// name the caller used; the handshake is bounded by the context; a
// connection whose handshake fails is closed, so callers never close it
// twice or leak it.
package tlsconn
