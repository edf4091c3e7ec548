// Package admin serves Apache Pulsar's admin REST API (/admin/v2) over a
// broker.Service: clusters, brokers, bookies, tenants, namespaces and
// their policies, topics (partitioned or not), subscriptions, stats and
// the HTTP schema endpoints. It knows the broker only through
// broker.Service and the tenants and policies only through the
// policy.Store the service hands out, so the same handlers can serve any
// process that implements the interface.
//
// # Usage
//
//	b, _ := broker.New(cfg, deps)
//	admin.Register(b.Router(), b) // before b.Start
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
package admin
