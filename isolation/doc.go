// Package isolation holds a cluster's failure domains and namespace
// isolation policies as Apache Pulsar stores them, validates them as
// Pulsar does, and answers the placement questions the load manager
// (package cluster) asks of them.
//
// # Metadata layout (Pulsar's configuration store)
//
//	/admin/clusters/{cluster}/failureDomain/{domain}      {"brokers":["host:port",...]}
//	/admin/clusters/{cluster}/namespaceIsolationPolicies  {"{policy}": NamespaceIsolationData, ...}
//
// NamespaceIsolationData is Pulsar's JSON:
//
//	{"namespaces":["tenant/ns-regex",...], "primary":["host-regex",...],
//	 "secondary":["host-regex",...],
//	 "auto_failover_policy":{"policy_type":"min_available",
//	                         "parameters":{"min_limit":"1","usage_threshold":"80"}}}
//
// # Invariants
//
//   - A broker id ("host:port") is in at most one failure domain of a
//     cluster: SetFailureDomain refuses a broker another domain lists
//     (ErrConflict, Pulsar's 409).
//   - A stored policy has at least one namespace and one primary regex,
//     a secondary list (possibly empty), regexes that compile, and an
//     auto-failover policy of type min_available whose min_limit and
//     usage_threshold are integers (Pulsar's validate; *InvalidError).
//   - Regexes match whole strings, as Java's String.matches: a namespace
//     regex the full "tenant/ns", a broker regex the broker's host (the
//     broker id up to its last ':') in placement, and the whole broker id
//     in the admin API's broker listings (as Pulsar's ClustersBase).
//
// # Placement (Pulsar's LoadManagerShared.applyNamespacePolicies)
//
// Candidates narrows the live brokers for a namespace: a namespace
// matched by a policy (the first by policy name) goes to the brokers
// whose host matches the policy's primary regexes, and also to those
// matching its secondary regexes when fewer than min_limit primaries are
// available; any other namespace goes to the shared brokers — those that
// are primary for no policy. Domains maps broker ids to their failure
// domain ("default" for a broker in none), which the anti-affinity
// placement uses when failure domains are enabled.
package isolation
