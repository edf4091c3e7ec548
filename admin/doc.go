// Package admin serves Apache Pulsar's admin REST API (/admin/v2,
// /admin/v3/transactions, /lookup/v2): clusters, brokers, bookies,
// tenants, namespaces and their policies, topics (partitioned or not),
// subscriptions, stats, schemas, permissions, topic lookup, namespace
// bundles and, on a clustered broker, the redirect of topic calls to the
// topic's owner; and Pulsar's /status.html health page (status.go). Every route is declared with its access rule on an
// httpapi.Table; the guard in front of the table authorizes by it. It
// knows the broker only through the small role interfaces of roles.go
// (Node, Topics, TopicReads, TopicLifecycle, Subscriptions, Schemas,
// Ownership, ...) and the tenants and policies only through the
// policy.Store Node hands out, so the same handlers serve any process
// that implements the roles.
//
// # Usage
//
//	b, _ := broker.New(cfg, deps)
//	admin.Register(b.Router(), admin.BrokerDeps(b)) // before b.Start
//
// # Conventions
//
// Paths, bodies, status codes and JSON field names follow Pulsar's
// /admin/v2 API. Errors are {"reason": "..."} with 404 (missing tenant,
// namespace, topic or subscription), 409 (exists, or a tenant or
// namespace that is not empty), 412 (bad policy value, in use), 400
// (malformed body), 405 (wrong method, or an operation that does not
// apply to the topic kind); no route answers 501 (TestNoRouteAnswers501).
// A request on a partitioned topic's subscription
// acts on every partition.
//
// Policy writes go through policy.Store.Update (namespace) or
// UpdateTopic (topic-level, /admin/v2/{domain}/{tenant}/{ns}/{topic}/
// <policy>), which notify the broker before the request is answered: the
// new policy applies to loaded topics at once. A topic-level GET with
// ?applied=true resolves topic > namespace > broker default
// (docs/policies.md).
//
// Policy values are data (policy_fields.go): a policyField declares one
// value of a namespace's (policy.Policies) or a topic's
// (policy.TopicPolicies) record once — its name, its GET answer, the
// parser that reads and checks a written body, how DELETE clears it —
// and policyRoutes turns the lists (namespacePolicies in policies.go,
// topicPolicies in topicpolicies.go) into the GET, POST (and PUT where
// Pulsar takes it) and DELETE routes. A value is parsed by the same
// parser at both levels; an empty or null body is refused with 412
// (DELETE removes a policy).
//
// # Transactions (/admin/v3/transactions)
//
// Every endpoint answers 503 on a broker without
// transactionCoordinatorEnabled, as Pulsar's. The coordinator side
// (transactions.go): coordinators, coordinatorStats, transactionMetadata,
// slowTransactions, coordinatorInternalStats. The participant side
// (transactions_participants.go), on persistent topics named
// {tenant}/{namespace}/{topic}: transactionBufferStats,
// transactionInBufferStats/{most}/{least}, pendingAckStats/{sub} and
// transactionInPendingAckStats/{sub}/{most}/{least}, with the fields of
// Pulsar's TransactionBufferStats (state "NoSnapshot" for a topic that
// never used transactions, else "Ready"; maxReadPosition "L:E", the last
// entry readers may read; lastSnapshotTimestamps, ongoingTxnSize,
// recoverStartTime, recoverEndTime), TransactionInBufferStats
// (startPosition, absent when the buffer holds no entry of the
// transaction; aborted), TransactionPendingAckStats (state "None" before
// the subscription's first transactional ack, else "Ready";
// ongoingTxnSize, recoverStartTime, recoverEndTime) and
// TransactionInPendingAckStats (cumulativeAckPosition, absent without
// one). Magnetar adds counters Pulsar does not report:
// abortedTxnSize (aborted ids the buffer keeps), committedTxnCount and
// abortedTxnCount (buffer: over the topic's life; pending ack: since the
// subscription was loaded), pendingAckedEntries (entries held by open
// transactions) and individualAckPositions (the positions one
// transaction holds, sorted). Pulsar's optional lowWaterMarks and
// snapshotStats are not reported. A missing topic or subscription is 404;
// a transaction id that is not two decimal integers is 412.
package admin
