// Package sdk is the Go SDK for Magnetar functions and connectors. A
// function is a main package that calls Run with a handler; built with
// `go build`, the executable is uploaded to the worker (as the data part
// of POST /admin/v3/functions/...), which runs one process per instance.
//
//	func main() {
//		sdk.Run(func(ctx *sdk.Context, in []byte) ([]byte, error) {
//			return append(in, '!'), nil
//		})
//	}
//
// The instance's Pulsar client is Magnetar's own (package pulsarclient):
// Instance.Client, the messages handlers see (*pulsarclient.Message) and
// the producers Output returns are its types.
//
// # Contract with the worker
//
// The process reads its configuration from the environment
// (MAGNETAR_FUNCTION_SPEC: the JSON Spec; MAGNETAR_INSTANCE_ID;
// MAGNETAR_SERVICE_URL; MAGNETAR_WORKER_URL), its credentials once from
// the pipe MAGNETAR_CONF_FD names (Pulsar's GoInstanceConfig JSON:
// clientAuthenticationPlugin and clientAuthenticationParameters, a token,
// used towards brokers and as the bearer token of state calls to the
// worker; tlsTrustCertsFilePath), makes itself non-dumpable (other
// processes of its account cannot read its memory or environment), and
// writes its cumulative
// Stats, one JSON line at a time, to file descriptor 3 every 500ms and at
// exit. SIGTERM stops it after the in-flight messages are answered.
//
// # Processing guarantees
//
//   - ATMOST_ONCE: the input is acknowledged before the handler runs.
//   - ATLEAST_ONCE: the input is acknowledged after its output was
//     persisted (send receipt); a failure negatively acknowledges it, so it
//     is redelivered, and after maxMessageRetries it goes to the
//     dead-letter topic when one is set.
//   - EFFECTIVELY_ONCE: as ATLEAST_ONCE, and the output producer is named
//     after the function and the input topic, with each output's sequence
//     id derived from the input message id (ledgerId<<28 | entryId, plus the
//     batch index in the low bits when batched), so a redelivered input's
//     output is dropped by the broker's deduplication. Deduplication must
//     be enabled for the output topic's namespace (or broker-wide), as in
//     Pulsar. The subscription is Failover.
//
// # State
//
// Counters and key-value state go through the worker's REST API
// (/admin/v3/functions/{t}/{ns}/{name}/state/{key} and .../counter/{key})
// and are stored durably in the metadata store; a call returns after the
// write is durable.
package sdk
