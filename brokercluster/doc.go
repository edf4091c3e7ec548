// Package brokercluster makes a broker a member of a multi-broker cluster:
// it runs package cluster (bundle ownership, lookups, load reports,
// leader election, shedding) behind the core's broker.Ownership seam.
// The core declares what it needs (the bundle of a topic, whether it
// still owns or holds it, the answer to LOOKUP, session health) and calls
// Deps.JoinCluster at Start; Join is that function. The cluster side
// calls back into the core through broker.ClusterNode: UnloadBundle when
// a bundle is lost or given up, BundleLoads for load reports.
//
// Invariants:
//   - The core never imports this package nor package cluster; the
//     features and admin roles that need the cluster service itself
//     (bundles, leader, load reports) reach it with Service.
//   - Lookup failures are mapped to Pulsar's answers here: transient
//     ownership states are MetadataError (the client retries the lookup
//     without dropping its connection), no broker at all
//     ServiceNotReady, a missing namespace TopicNotFound.
//   - NotOwned and TopicBundle's refusals wrap cluster.ErrNotOwned /
//     cluster.ErrUnloading, so errors.Is works on the core's errors.
package brokercluster
