// Package brokerauthz authorizes the commands of the binary protocol:
// the broker core's CommandAuthorizer (broker/access.go) over the
// security layer's authorizer (auth.Security.Authz). The binary
// registers it (internal/stack), as does the test kit
// (broker/brokertest):
//
//	b, _ := broker.New(cfg, deps)
//	_, err := brokerauthz.Enable(b) // before Start
//
// With authorization on (Config.Security with authorizationEnabled) the
// core refuses to start without a CommandAuthorizer: it fails closed.
// Off, the core never asks it.
//
// # Rules
//
// The rules are data (rules.go): every BaseCommand type has a row in
// commandAccess saying what it needs, and TestCommandAccessCoversProtocol
// fails on a type without one, or on a row that disagrees with how the
// core routes the command (broker.CommandRoute), so a protocol update
// cannot add a command nobody decided on. The kinds:
//
//   - authentication itself (CONNECT, AUTH_RESPONSE; the core's
//     security.go), commands naming nothing (PING, PONG), and commands
//     on a producer or consumer of the connection, which ride on the
//     check of the PRODUCER or SUBSCRIBE that created it: not asked;
//   - checked: LOOKUP and PARTITIONED_METADATA need lookup on the topic,
//     PRODUCER produce, SUBSCRIBE consume (with the subscription, for
//     the namespace's subscription auth mode), GET_TOPICS_OF_NAMESPACE
//     the namespace's listing; a topic name that does not parse is left
//     to the handler, which reports it;
//   - a feature's command: its Command's SuperUserOnly (every role a
//     superuser) and Access (lookup or produce on the topic it names;
//     any other permission denies);
//   - the broker's answers and pushes: never requests.
//
// Every role of the connection must be allowed: its own and, when a
// proxy connects for a client, the original principal's. The first role
// denied answers the command in Pulsar's shape, with AuthorizationError:
// LOOKUP_RESPONSE (Failed) or PARTITIONED_METADATA_RESPONSE (Failed) for
// the lookups, ERROR(request_id) for PRODUCER, SUBSCRIBE and
// GET_TOPICS_OF_NAMESPACE, the command's own answer
// (pulsarproto.Refusal) for a feature's. The text is Pulsar's ("Client
// is not authorized to Lookup", ...), the authorizer's reason where
// Pulsar gives it (SUBSCRIBE's prefix mode), or "Exception occurred
// while trying to authorize: ..." when the check itself failed (the
// metadata store). The core sends the answer, logs the denial and
// serves nothing.
package brokerauthz
