// Package proxy is Magnetar's Pulsar proxy: one address for clients that
// cannot reach the brokers (Kubernetes services, load balancers). See
// docs/proxy.md for the user's view.
//
// # Binary protocol: two kinds of client connection
//
// A CONNECT without proxy_to_broker_url opens a lookup connection. The
// proxy authenticates the client itself (when authentication is on) and
// answers CONNECTED. It then serves:
//
//   - LOOKUP: the proxy asks a broker (round-robin over the known
//     brokers), follows Redirect answers itself (at most 10, then
//     ServiceNotReady "Reached max number of redirections") and answers
//     Connect with brokerServiceUrl = brokerServiceUrlTls = the owner's
//     URL, authoritative = true and proxy_through_service_url = true.
//     The client then opens a connection to the proxy (the physical
//     address, from its service URL) naming the owner (the logical
//     address) in proxy_to_broker_url. Lookups in flight above
//     Config.MaxConcurrentLookupRequests get TooManyRequests.
//   - PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE, GET_SCHEMA: sent
//     to any broker, answered under the client's request id.
//   - PING/PONG. Any other command closes the connection.
//
// The proxy's own requests travel on pooled broker connections, one per
// (broker, original principal[, forwarded credentials]), with the
// proxy's request ids; idle ones are closed after two minutes.
//
// A CONNECT with proxy_to_broker_url = "host:port" opens a relay. The
// target must be a broker the proxy knows: registered under
// /loadbalance/brokers (metadata mode), or in the static list or named
// by a lookup answer this proxy received (static mode); otherwise
// ERROR(ServiceNotReady, "Target broker cannot be validated.") and close,
// so the proxy cannot be used to reach other hosts. The proxy connects
// to the broker and sends its own CONNECT: client_version "Pulsar
// proxy", the client's protocol_version and feature flags, the proxy's
// credentials (brokerClientAuthentication*), original_principal = the
// client's authenticated role and, with ForwardAuthorizationCredentials,
// original_auth_method / original_auth_data = the client's method and
// credentials. The broker's answer (CONNECTED, or ERROR then close) is
// passed to the client as received; after that bytes are copied both
// ways without decoding, and when either side closes both are closed.
//
// A client CONNECT that itself carries original_principal,
// original_auth_data or original_auth_method is refused with
// ERROR(AuthorizationError, "Invalid roles.") and closed: only the proxy
// names an original principal.
//
// # HTTP
//
// /admin/... and /lookup/... are forwarded: the caller is authenticated
// at the proxy, any X-Original-Principal header it sent is dropped and,
// when the proxy authenticates or has broker credentials, so is its
// Authorization: the proxy's credentials and X-Original-Principal = the
// caller's role are set instead (a proxy with neither passes the
// caller's Authorization through). Redirects (307) are followed inside
// the proxy (at most 10), re-setting those headers. Topic calls
// (/admin/v2/{persistent|non-persistent}/{tenant}/{ns}/{topic}/...) go
// to the topic's owner, found by a lookup as the caller; other calls to
// any broker (the next one when a broker cannot be reached). Bodies are
// buffered (at most 64 MiB) so that a redirect can resend them.
// /metrics (Prometheus), /proxy-stats, /proxy-stats/connections (JSON;
// superUserRoles only when authentication is on) and /status.html are
// served by the proxy itself.
//
// # State
//
// None that matters: the broker list is re-read from the metadata store
// (cached for two seconds, re-read at once for an unknown relay target),
// the pool and the static-mode list of lookup answers are caches. Any
// number of proxies can serve one cluster, and a restarted proxy serves
// as before; clients reconnect and look up again.
package proxy
