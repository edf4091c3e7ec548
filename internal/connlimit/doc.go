// Package connlimit bounds what clients can hold of a TCP server at
// accept time, before any TLS handshake or protocol byte: the number of
// open connections, and the number of untrusted connections one client
// address holds.
//
// A Listener wraps a net.Listener. With a connection cap, Accept waits
// for a slot before accepting (further connections wait in the kernel's
// listen backlog) and a closed connection frees its slot. With a
// per-address cap, a new connection from an address that already holds
// that many untrusted ones is reset at once (SO_LINGER 0, so the kernel
// frees the socket) and Accept goes on with the next. A connection is
// untrusted until the server calls Trust on it (an HTTP server does once
// a request on it has authenticated); a server that never trusts (a
// webhook without credentials) caps all of an address's connections.
//
// Invariants: each accepted connection takes one slot and one count of
// its address, and gives each back exactly once (Trust gives back the
// count; Close gives back what is left); the per-address counts are
// deleted at zero, so the map holds only addresses with untrusted
// connections open.
package connlimit
