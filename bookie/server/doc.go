// Package server puts a *bookie.Bookie on the network and in process, and
// keeps its identity in the metadata store.
//
//	c, err := server.CheckCookie(ctx, store, fs, id, journalDir, ledgerDirs) // before bookie.Open
//	b, err := bookie.Open(...)
//	s, err := server.New(b, server.Options{Addr: ":3181"})
//	r, err := server.Register(ctx, store, id, b, server.RegisterOptions{})
//	...
//	r.Close(); s.Close(); b.Close()
//
// # In process
//
// Local (local.go) calls the bookie directly, with no network hop
// (standalone). It has the method set of ledger.BookieClient (plain types,
// bkproto status sentinels), so it satisfies that interface without this
// package importing ledger, which the import rules forbid (bookie/...
// may not import ledger, nor ledger bookie); no lint rule had to change.
// Bookie errors map to bkproto sentinels with ProtoError, the same mapping
// the network server uses for status codes.
//
// # Network server
//
// Server (server.go) serves protocol/bkproto over TCP. Per connection a
// reader goroutine decodes frames: the adds among the frames of one read
// go together to Bookie.AddEntries (which copies the payloads before the
// read buffer is reused), before the next request of another kind, and
// are answered from their durability callbacks, so many adds are in flight per connection and answers go out
// in completion order, matched by request id. Other requests go to one of
// two bounded worker pools: the high-priority pool (fence reads, recovery
// reads, any request flagged high priority, WRITE_LAC) and the normal read
// pool, so recovery never waits behind catch-up reads; a full queue
// answers ETOOMANYREQUESTS. A writer goroutine per connection writes every
// response queued since its last write in one call (coalesced writes).
// LONG_POLL requests park in longpoll.go until the ledger's known LAC (the
// highest piggybacked LAC of adds stored through this server, explicit
// LACs, and what the bookie reports) passes the client's, or their
// timeout fires. An Authenticator hook sees AUTH requests; while it says
// Required, other requests on an unauthenticated connection get EUA. The
// default allows everything.
//
// # Cookies (cookie.go)
//
// A cookie (format 1, JSON: bookie id, journal dir, ledger dirs, cluster
// instance id from /ledgers/INSTANCEID) is written to a VERSION file in
// the journal dir and every ledger dir, then to /ledgers/cookies/<id>.
// CheckCookie, run before the bookie opens its directories, refuses
// (ErrCookieMismatch) when a cookie is registered for the id but any
// directory lacks an identical VERSION file (wiped or replaced disk, wrong
// directories) or holds another bookie's, so a bookie never serves from
// empty disks as if it had its data.
//
// # Registration (register.go)
//
// Register creates the ephemeral node /ledgers/available/<id> (JSON
// {address, readOnly}) or /ledgers/available/readonly/<id> while the bookie
// is read-only, and moves it when the state changes (checked every
// CheckInterval, or on Sync). The node disappears with the store session.
//
// A bookie restarted right after a crash finds its previous session's
// node, which the server keeps until that session expires. The node
// carries a token (Cookie.Token: a digest of the bookie id, directories
// and cluster instance); a node with this bookie's own token is its own
// and is deleted and re-created at once (no other live process can serve
// the id: the bookie holds its port and directories). A node without it
// is waited for, as BookKeeper's bookie waits for its previous znode: up
// to StaleWait (session timeout + 2 s), then Register fails with
// ErrExists. A stale node of the other state (read-only vs writable) with
// the bookie's token is removed too.
package server
