// Package cluster is a broker's membership in a multi-broker cluster, as
// Apache Pulsar's ModularLoadManager and NamespaceService do it: bundle
// ownership through ephemeral nodes in the metadata store, lookups that
// find or assign a bundle's owner, broker registration with load reports,
// leader election, least-loaded placement and shedding. It knows nothing
// of topics beyond their names; the broker supplies OnBundleLost (close
// the bundle's topics) and Stats (per-bundle rates).
//
// # Metadata layout (Pulsar's)
//
//	/loadbalance/brokers/{host:webPort}   ephemeral  LocalBrokerData JSON (load report)
//	/loadbalance/leader                   ephemeral  {"brokerId":..., "serviceUrl":web URL}
//	/namespace/{tenant}/{ns}/{0xL_0xU}    ephemeral  owner: NamespaceEphemeralData JSON
//	/admin/policies/{tenant}/{ns}         persistent namespace policies ("bundles": BundlesData)
//	/admin/local-policies/{tenant}/{ns}   persistent {"bundles": BundlesData}, boundaries in force
//
// A namespace's boundaries come from its local policies; when those are
// missing they are copied from the namespace policies' "bundles", or made
// as bundle.DefaultCount (4) even bundles. Splits rewrite them with a
// compare-and-set, so brokers that read them afterwards agree.
//
// # Ownership and the lease
//
// A broker owns a bundle while the owner node it created exists on its
// current session. It takes one with metadata.Sessioner.CreateEphemeral,
// which the store never re-creates: once the session is gone, so is the
// ownership, for good. The node's value carries a lock id (broker id,
// session, process nonce) so a create whose reply was lost is recognised.
//
// The broker serves a bundle only while it holds a lease on its session:
// every SessionTimeout/6 it sends a read to the store; when the reply
// comes on the same session, the session was alive when the server
// processed the read, which was after it was sent, so the server cannot
// expire it before sent+SessionTimeout. The lease runs to
// sent+SessionTimeout/2. Owns (checked on PRODUCER, SUBSCRIBE, topic load
// and before every SEND_RECEIPT) is false once the lease lapsed, whatever
// the reason: connection loss, a SIGSTOP, a long pause. The lease loop
// then closes the bundle's topics (OnBundleLost) and deletes the owner
// node if the session still holds it. A frozen process that wakes up
// checks the lease before it acknowledges anything, so it cannot
// acknowledge a write after its ownership could have passed to another
// broker. The bound assumes the store server's reply reaches the broker
// within SessionTimeout/2 of the server handling it and that clocks on
// both sides advance at the same rate.
//
// # Why two brokers never acknowledge writes for one topic at once
//
// Two independent mechanisms, either of which suffices for the
// acknowledged data itself:
//
//  1. Ownership: a new owner can only create the owner node after the old
//     one's node is gone: deleted by the old owner after it closed the
//     topics (unload), or removed by the server when the old owner's
//     session expired. In the second case the old owner's lease ended at
//     least SessionTimeout/2 before that expiry, and the broker checks
//     Owns before sending each SEND_RECEIPT, so the old owner stopped
//     acknowledging before the new owner could exist.
//  2. Fencing: the new owner opens the topic's managed ledger with a
//     recovery open, which fences the current ledger on its bookies and
//     updates the managed-ledger record with a compare-and-set. After
//     that, an add by the old owner cannot reach its ack quorum (fenced
//     bookies refuse it) and a rollover by the old owner fails on the
//     record's version (mledger.ErrFenced). Every entry the old owner had
//     acknowledged before is inside the recovered ledger. The broker
//     treats ErrFenced as final: it unloads the topic and sends its
//     clients to look it up again — no retry, and messages that were not
//     stored are never counted.
//
// So the windows in which each owner can acknowledge writes are disjoint,
// and every acknowledged write is in the log the next owner continues.
//
// # Lookup (Pulsar's findBrokerServiceUrl)
//
// Owned here: connect here (or "being unloaded"). Owned elsewhere: connect
// to the owner. Unowned: an authoritative request is taken here; otherwise
// a follower redirects (non-authoritative) to the leader, and the leader
// (or any broker while no live leader is known) places the bundle on the
// least-loaded broker and redirects there with authoritative set. A broker
// that is chosen takes the bundle before it answers, so the client's
// PRODUCER or SUBSCRIBE finds it owned.
//
// # Load reports, placement, shedding
//
// Each broker writes its LocalBrokerData (Pulsar's JSON: URLs, CPU,
// memory, message rates, per-bundle stats) every ReportInterval. The
// leader places an unowned bundle on the broker with the least message
// rate plus 50 msg/s per bundle it owns or was just given
// (LeastLongTermMessageRate with Pulsar's default for bundles without
// history). Every ShedInterval the leader unloads the busiest bundles of
// any broker whose rate exceeds the mean by more than ShedThreshold, never
// a broker's last bundle and never a bundle shed within ShedGrace; the
// next lookups place them again.
//
// # Graceful unload and shutdown
//
// Unload marks the bundle inactive (lookups answer "being unloaded"),
// calls OnBundleLost (the broker sends CLOSE_PRODUCER and CLOSE_CONSUMER,
// lets pending writes complete and closes the ledgers), then deletes the
// owner node. Close first deletes the broker's registration (no new
// bundles come to it), then unloads every bundle it owns.
package cluster
