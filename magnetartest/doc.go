// Package magnetartest runs a complete Magnetar standalone inside the
// calling Go test process, for testing code that talks to Pulsar:
//
//	func TestMyService(t *testing.T) {
//		srv := magnetartest.Start(t)
//		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: srv.ServiceURL()})
//		...
//	}
//
// Start opens what `magnetar standalone` runs, through the same wiring
// (package internal/stack): an embedded metadata store, one bookie with
// a journal that fsyncs every group commit, managed ledgers, the broker
// with the admin REST API, and public/default. Nothing is faked: the
// client speaks the Pulsar binary protocol to a real listener, and
// pulsaradmin-style tools reach WebURL.
//
// Isolation: every server listens on 127.0.0.1 on ports the kernel
// picks (":0"), keeps all files in its own temporary directory (the
// test's TempDir unless WithDataDir names one), and registers its
// metrics in its own Prometheus registry; servers share no process-wide
// state, so several may run in one test process, also in parallel
// tests. The server stops in t.Cleanup (after the test's own cleanups
// registered later, such as closing clients) and its directory is
// removed with the test's TempDir.
//
// Settings:
//   - WithTokenAuth: JWT token authentication (HS256, a fresh key per
//     server) and authorization; Token mints a token for any role,
//     AdminToken one for the superuser role "admin" (also the identity
//     of the function worker's own connections).
//   - WithSecurity: any security key of Pulsar's broker.conf
//     (authenticationEnabled, tlsCertificateFilePath, superUserRoles,
//     ...), as the standalone's configuration file takes it. With TLS
//     keys set the TLS listeners also bind free ports (TLSServiceURL,
//     TLSWebURL).
//   - WithBrokerConfig: any broker setting (package broker's Config).
//   - WithFunctionsWorker: the in-process function worker
//     (/admin/v3/functions); builtin connectors are not available, as
//     they run as a `magnetar` subprocess.
//   - WithDataDir: a directory to reuse, to test a restart.
//   - WithLogger: where the server logs (default: nowhere).
//
// New starts a server outside a test's lifetime (TestMain, examples);
// its caller closes it, and Close removes the temporary directory New
// made.
//
// The broker runs with its package defaults (brokerconf.Config's
// EnsureDefaults: Pulsar's defaults), except that the web console is
// off. Pulsar's non-security configuration keys (allowAutoTopicCreation
// and the like) are not taken by name: their mapping to settings lives
// with the binary's flags; WithBrokerConfig sets the same settings.
//
// The package imports package testing and is for tests only; the
// magnetar binary never links it (internal/lint checks both).
package magnetartest
