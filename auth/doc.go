// Package auth is Magnetar's security layer: authentication providers,
// authorization, permission storage, TLS material and the HTTP guard.
// The broker and the admin API call into it through small hooks.
//
// # Authentication
//
// A client names a method (CONNECT.auth_method_name on the binary
// protocol; on HTTP the Authorization scheme: "Bearer" = token, "Basic" =
// basic, none but a verified client certificate = tls):
//
//   - token: a compact JWS. HS256/384/512 with a raw secret key of at
//     least 32 bytes, or RS*/PS*, ES256/384/512 or EdDSA with a public key
//     (X.509 SubjectPublicKeyInfo, DER as Pulsar writes it, or PEM). The
//     accepted algorithms are pinned to the key type, so "alg":"none" and
//     algorithm swaps fail (Pulsar CVE-2021-22160). exp and nbf are
//     enforced (leeway tokenAllowedClockSkewSeconds, default 0), the role
//     is the tokenAuthClaim claim (default sub; a string or the first of
//     a list), and with tokenAudienceClaim set the audience must match.
//     Surrounding whitespace of the token is ignored (clients send token
//     files with a trailing newline).
//   - tls: role = subject CN of the client certificate, only when the
//     chain verified against tlsTrustCertsFilePath.
//   - basic: "user:password" checked against an htpasswd file
//     (package htpasswd): Pulsar's forms, APR1-MD5 ($apr1$) and DES
//     crypt, and bcrypt ($2y$, Magnetar only). A weak hash is accepted,
//     as Pulsar accepts it, with one start-up warning naming the users.
//     Unknown users cost one comparison too. Unlike Pulsar, the
//     password may contain ':' and the file may have comments.
//
// No credentials (method "" or "none") give anonymousUserRole when it is
// set, else fail. Unlike Pulsar, an unknown method name and invalid
// credentials never fall back to the anonymous role.
//
// Key settings (tokenSecretKey, tokenPublicKey, basicAuthConf) take
// "data:;base64,<b64>", "file:///path", a path, or base64 text, in that
// order (ReadKey).
//
// A binary-protocol connection's authentication is a ConnSession
// (connsession.go; the broker reads and sends the frames): CONNECT
// authenticated and its original principal validated (Security.Connect),
// the roles its commands are authorized for, and the refresh of an
// expiring credential (one AUTH_CHALLENGE; the connection closes when
// the client cannot refresh or leaves it unanswered until the next
// check; an AUTH_RESPONSE keeps the method and the role).
//
// # Token formats (interoperable with `pulsar tokens`)
//
// create-secret-key: random raw bytes (32/48/64 for HS256/384/512), or
// base64 text. create-key-pair: private key PKCS#8 DER, public key X.509
// DER. create: header {"alg":...} only, claims sub and optional exp
// (epoch seconds).
//
// # Authorization
//
// State lives in the metadata store beside the broker's: the tenant node
// /admin/policies/<tenant> (TenantInfo: adminRoles, allowedClusters) and
// the namespace node /admin/policies/<tenant>/<ns> (Policies JSON), whose
// auth_policies {namespace_auth: role→actions, destination_auth:
// topic→role→actions, subscription_auth_roles: sub→roles} and
// subscription_auth_mode ("None"|"Prefix") this package reads and
// writes. Writes are compare-and-set read-modify-writes that keep every
// other field of the node byte for byte. Every check reads the store, so
// a revoke takes effect at the next check.
//
// Decisions: superusers (superUserRoles) pass everything. Admins of a
// tenant pass every operation inside it. Other roles need: lookup =
// produce or consume; produce; consume (plus, for a named subscription:
// the role is in subscription_auth_roles[sub] when that list is
// non-empty, and in Prefix mode the subscription name starts with the
// role). A grant on a partitioned topic covers its partitions. A tenant
// whose allowedClusters is non-empty and lacks this cluster is closed to
// all but superusers. Wildcard roles ("app-*", "*-ops") match only with
// authorizationAllowWildcardsMatching.
//
// HTTP: Rules maps every admin and lookup endpoint to the access it needs
// (deny by default: an unlisted path needs a superuser). Management
// operations (topic policies, unload, compaction, termination,
// subscription creation, namespace policies) are tenant-admin only, never
// granted by produce/consume (Pulsar CVE-2024-28098/29834). Failures:
// 401 {"reason":"Authentication required"} when the caller is not
// authenticated, 403 {"reason":...} when the role is not allowed.
//
// # TLS
//
// ServerTLS serves tlsCertificateFilePath/tlsKeyFilePath, verifies client
// certificates against tlsTrustCertsFilePath (required with
// tlsRequireTrustedClientCertOnConnect; with tlsAllowInsecureConnection
// any certificate is accepted for the transport and becomes an identity
// only if it verifies against the trust file), TLS 1.2 minimum, and
// re-reads the files when their size or modification time changes
// (checked at most every tlsCertRefreshCheckDurationSec at handshakes); a
// bad new file keeps the previous material.
//
// # The broker's own identity
//
// Security.Client (BrokerClient) holds brokerClientAuthenticationPlugin,
// brokerClientAuthenticationParameters and brokerClientTlsEnabled in
// force. Pulsar marks them dynamic; an update replaces them only when
// plugin and parameters parse together, and bumps a generation, so the
// connections the broker opens afterwards (and clients rebuilt because
// the generation changed) present the new identity.
package auth
