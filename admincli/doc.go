// Package admincli is `magnetar admin`: pulsar-admin's nouns and verbs
// (clusters, brokers, tenants, namespaces, topics, subscriptions,
// schemas, transactions, functions, sources, sinks ...) over the admin
// REST API of a Magnetar or Pulsar cluster. NewCommand builds the cobra
// command tree; the binary only adds it to its root.
//
// Output is a table by default and the server's JSON with -o json; a
// non-2xx answer is an error carrying Pulsar's {"reason"}. Credentials
// and TLS follow pulsar-admin's flags (--auth-plugin, --auth-params,
// --tls-trust-cert-path, --tls-allow-insecure). Stats commands take
// --watch (kubectl's -w). The package uses only net/http and
// encoding/json (and package auth for client credentials), so the
// command starts fast and knows no server package.
//
// Invariant: every request a verb sends is served by a route of the
// broker's route table (package httpapi's Table, declared by admin,
// cluster, console and the function worker), with every wildcard of
// that route filled by a value the verb was given. admin's
// TestCLIRequestsHaveRoutes runs each verb against a recording server
// and looks its requests up in the table; a verb added without a
// matching route, or a path misspelt on either side, fails there.
package admincli
