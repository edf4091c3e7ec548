package broker

import (
	"context"
	"fmt"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// The authorization seam of the binary protocol. The core routes each
// command type a client sends (commandRoutes) and, when authorization
// is on, asks the registered CommandAuthorizer (package brokerauthz,
// which holds the per-command rules) before it serves a command naming
// a topic or namespace, or hands one to a feature. Without one, Start
// refuses to run with authorization on: the broker fails closed.

// CommandAuthorizer authorizes binary-protocol commands when
// authorization is on (Config.Security with authorizationEnabled). A
// Feature implementing it is registered with Use; one at most.
type CommandAuthorizer interface {
	// AuthorizeCommand decides whether every role of a connection
	// (roles: its own and, when proxied, the original principal's) may
	// run f: a core command of route RouteAuthorized (on the
	// connection's op goroutine), or a feature's command, served by
	// served (on the connection's reader, before Handle). nil allows
	// it; a Denial refuses it and the command goes no further. It may
	// do metadata I/O bounded by ctx; f.Cmd is read only.
	AuthorizeCommand(ctx context.Context, roles []string, f *pulsarproto.Frame, served *Command) *Denial
}

// Denial is a refused command: the core sends Answer (nil: none; the
// command's own answer, with AuthorizationError) and logs the rest.
type Denial struct {
	Answer *pb.BaseCommand
	// Role is the first role denied, Op the check, Resource the topic
	// or namespace.
	Role, Op, Resource string
}

// Route is how the core routes a command type a client sends.
type Route uint8

const (
	// RouteNone: not a request (the broker's answers and pushes, or
	// unknown): a client sending one is closed, no feature may serve it.
	RouteNone Route = iota
	// RouteCore: served by the core without authorization: CONNECT and
	// AUTH_RESPONSE (authentication itself), PING and PONG, and the
	// commands acting on a producer or consumer of the connection
	// (authorized when PRODUCER or SUBSCRIBE created it).
	RouteCore
	// RouteAuthorized: served by the core once the CommandAuthorizer
	// allowed it (the commands naming a topic or namespace).
	RouteAuthorized
	// RouteFeature: served by a registered feature (CommandSource), once
	// the CommandAuthorizer allowed it; refused with NotAllowed or
	// closing the connection when no feature serves it.
	RouteFeature
)

// CommandRoute returns how the core routes command type t.
func CommandRoute(t pb.BaseCommand_Type) Route { return commandRoutes[t] }

var commandRoutes = func() map[pb.BaseCommand_Type]Route {
	m := map[pb.BaseCommand_Type]Route{}
	for r, types := range map[Route][]pb.BaseCommand_Type{
		RouteCore: {pb.BaseCommand_CONNECT, pb.BaseCommand_AUTH_RESPONSE, pb.BaseCommand_PING, pb.BaseCommand_PONG,
			pb.BaseCommand_SEND, pb.BaseCommand_FLOW, pb.BaseCommand_ACK, pb.BaseCommand_UNSUBSCRIBE,
			pb.BaseCommand_CLOSE_PRODUCER, pb.BaseCommand_CLOSE_CONSUMER, pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES,
			pb.BaseCommand_SEEK, pb.BaseCommand_GET_LAST_MESSAGE_ID, pb.BaseCommand_CONSUMER_STATS},
		RouteAuthorized: {pb.BaseCommand_LOOKUP, pb.BaseCommand_PARTITIONED_METADATA, pb.BaseCommand_PRODUCER,
			pb.BaseCommand_SUBSCRIBE, pb.BaseCommand_GET_TOPICS_OF_NAMESPACE},
		RouteFeature: {pb.BaseCommand_GET_SCHEMA, pb.BaseCommand_GET_OR_CREATE_SCHEMA,
			pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST, pb.BaseCommand_NEW_TXN, pb.BaseCommand_ADD_PARTITION_TO_TXN,
			pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN, pb.BaseCommand_END_TXN, pb.BaseCommand_END_TXN_ON_PARTITION,
			pb.BaseCommand_END_TXN_ON_SUBSCRIPTION, pb.BaseCommand_WATCH_TOPIC_LIST, pb.BaseCommand_WATCH_TOPIC_LIST_CLOSE},
	} {
		for _, t := range types {
			m[t] = r
		}
	}
	return m
}()

// authorizing reports whether commands are authorized (Config.Security
// with authorizationEnabled).
func (b *Broker) authorizing() bool { return b.sec != nil && b.sec.Authz != nil }

// checkAuthorizer fails closed: with authorization on, a broker without
// a CommandAuthorizer does not start.
func (b *Broker) checkAuthorizer() error {
	if b.authorizing() && b.ext.access == nil {
		return fmt.Errorf("%w: authorization is on and no CommandAuthorizer is registered (package brokerauthz)", ErrBadConfig)
	}
	return nil
}

// denied asks the CommandAuthorizer about f (served: the feature's
// command, nil for the core's). When it refuses, denied sends the
// refusal, logs it and returns true; the handler must then not run.
func (c *conn) denied(f *pulsarproto.Frame, served *Command) bool {
	a := c.b.ext.access
	if a == nil || !c.b.authorizing() {
		return false // Start refuses authorization without an authorizer
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	d := a.AuthorizeCommand(ctx, c.roles(), f, served)
	if d == nil {
		return false
	}
	if d.Answer != nil {
		c.sendSimple(d.Answer)
	}
	c.log.Info("denied", "role", d.Role, "op", d.Op, "resource", d.Resource)
	return true
}
