// Package brokertest is the test kit for packages built on the broker
// core (its features, admin, clients): an in-process broker over an
// embedded metadata store and in-memory ledgers, restartable over the
// same stores, with command authorization (package brokerauthz), policy
// enforcement (package enforcement) and the schema registry (package
// schemareg, Broker.Schemas), always on as in the binary, and the
// features a test wires in; pulsar-client-go
// helpers; and a raw binary-protocol client for frames the real client
// cannot send. It is imported by tests only (internal/lint keeps it out
// of the binary).
//
//	b := brokertest.Start(t, brokertest.Options{
//		Features: func(b *broker.Broker) error { _, err := entrymeta.Enable(b, names); return err },
//	})
//	cl := b.Client(t)
//	b = b.Restart(t) // same metadata and ledgers, features wired again
package brokertest
