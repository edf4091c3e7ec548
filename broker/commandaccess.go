package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Per-command authorization of the binary protocol, as data: every
// BaseCommand type has a row in commandAccess saying what it needs when
// authorization is on (TestCommandAccessCoversProtocol fails on a type
// without one, so a protocol update cannot add a command nobody decided
// on). Commands that name a topic or namespace are checked for every role
// of the connection (its own and, when proxied, the original principal's);
// the first denial answers the command in Pulsar's shape and the handler
// never runs. Commands on an existing producer or consumer id ride on the
// check made when it was created.

// accessKind is how a command is authorized.
type accessKind uint8

const (
	// accessAuthn: the command is authentication itself (CONNECT,
	// AUTH_RESPONSE; security.go).
	accessAuthn accessKind = iota + 1
	// accessOpen: the command names nothing (PING, PONG).
	accessOpen
	// accessOnID: the command acts on a producer or consumer of the
	// connection; PRODUCER or SUBSCRIBE was checked.
	accessOnID
	// accessChecked: the row's permission on the topic or namespace the
	// command names.
	accessChecked
	// accessFeature: a registered feature serves it; its Command's
	// SuperUserOnly and Access decide (featureDenied). Without one the
	// command is refused (NotAllowed) or closes the connection.
	accessFeature
	// accessAnswer: the broker's answer or push, never a request: no
	// feature may serve it, and a client sending one is closed.
	accessAnswer
)

// Permissions beyond the features' TopicPermissions (Command.Access).
const (
	permitConsume       TopicPermission = iota + 100 // on the topic, for the subscription
	permitListNamespace                              // on the namespace
)

// commandRule is one row of commandAccess.
type commandRule struct {
	kind accessKind
	// For accessChecked: need on resource's topic (parsed; a bad name is
	// left to the handler) or namespace; op names the check in the log;
	// denial is the refusal's text ("": the authorizer's reason); refuse
	// answers the command with AuthorizationError and msg.
	need     TopicPermission
	resource func(cmd *pb.BaseCommand) (name, subscription string)
	op       string
	denial   string
	refuse   func(c *conn, cmd *pb.BaseCommand, msg string)
}

// commandAccess is the authorization of each command type: the checked
// commands' rows and, for the others, their kind (commandKinds).
var commandAccess = func() map[pb.BaseCommand_Type]commandRule {
	m := maps.Clone(checkedCommands)
	for kind, types := range commandKinds {
		for _, t := range types {
			if _, dup := m[t]; dup {
				panic("BUG: broker: command " + t.String() + " in two commandAccess rows")
			}
			m[t] = commandRule{kind: kind}
		}
	}
	return m
}()

// commandKinds lists the commands that are not checked here, by kind.
var commandKinds = map[accessKind][]pb.BaseCommand_Type{
	accessAuthn: {pb.BaseCommand_CONNECT, pb.BaseCommand_AUTH_RESPONSE},
	accessOpen:  {pb.BaseCommand_PING, pb.BaseCommand_PONG},
	accessOnID: {pb.BaseCommand_SEND, pb.BaseCommand_FLOW, pb.BaseCommand_ACK, pb.BaseCommand_UNSUBSCRIBE,
		pb.BaseCommand_CLOSE_PRODUCER, pb.BaseCommand_CLOSE_CONSUMER, pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES,
		pb.BaseCommand_SEEK, pb.BaseCommand_GET_LAST_MESSAGE_ID, pb.BaseCommand_CONSUMER_STATS},
	accessFeature: {pb.BaseCommand_GET_SCHEMA, pb.BaseCommand_GET_OR_CREATE_SCHEMA,
		pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST, pb.BaseCommand_NEW_TXN, pb.BaseCommand_ADD_PARTITION_TO_TXN,
		pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN, pb.BaseCommand_END_TXN, pb.BaseCommand_END_TXN_ON_PARTITION,
		pb.BaseCommand_END_TXN_ON_SUBSCRIPTION, pb.BaseCommand_WATCH_TOPIC_LIST, pb.BaseCommand_WATCH_TOPIC_LIST_CLOSE},
	accessAnswer: {pb.BaseCommand_CONNECTED, pb.BaseCommand_SEND_RECEIPT, pb.BaseCommand_SEND_ERROR,
		pb.BaseCommand_MESSAGE, pb.BaseCommand_SUCCESS, pb.BaseCommand_ERROR, pb.BaseCommand_PRODUCER_SUCCESS,
		pb.BaseCommand_PARTITIONED_METADATA_RESPONSE, pb.BaseCommand_LOOKUP_RESPONSE,
		pb.BaseCommand_CONSUMER_STATS_RESPONSE, pb.BaseCommand_REACHED_END_OF_TOPIC,
		pb.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE, pb.BaseCommand_ACTIVE_CONSUMER_CHANGE,
		pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE, pb.BaseCommand_GET_SCHEMA_RESPONSE,
		pb.BaseCommand_AUTH_CHALLENGE, pb.BaseCommand_ACK_RESPONSE, pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE,
		pb.BaseCommand_NEW_TXN_RESPONSE, pb.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE,
		pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE, pb.BaseCommand_END_TXN_RESPONSE,
		pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE, pb.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE,
		pb.BaseCommand_TC_CLIENT_CONNECT_RESPONSE, pb.BaseCommand_WATCH_TOPIC_LIST_SUCCESS,
		pb.BaseCommand_WATCH_TOPIC_UPDATE, pb.BaseCommand_TOPIC_MIGRATED},
}

// checkedCommands are the commands naming a topic or namespace that the
// core serves, with what they need there.
var checkedCommands = map[pb.BaseCommand_Type]commandRule{
	pb.BaseCommand_LOOKUP: {kind: accessChecked, need: PermitLookup, op: "lookup", denial: "Client is not authorized to Lookup",
		resource: func(cmd *pb.BaseCommand) (string, string) { return cmd.LookupTopic.GetTopic(), "" },
		refuse: func(c *conn, cmd *pb.BaseCommand, msg string) {
			c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: &pb.CommandLookupTopicResponse{
				RequestId: ptr(cmd.LookupTopic.GetRequestId()), Response: pb.CommandLookupTopicResponse_Failed.Enum(),
				Error: pb.ServerError_AuthorizationError.Enum(), Message: &msg,
			}})
		}},
	pb.BaseCommand_PARTITIONED_METADATA: {kind: accessChecked, need: PermitLookup, op: "partitioned-metadata",
		denial:   "Client is not authorized to Get Partition Metadata",
		resource: func(cmd *pb.BaseCommand) (string, string) { return cmd.PartitionMetadata.GetTopic(), "" },
		refuse: func(c *conn, cmd *pb.BaseCommand, msg string) {
			c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA_RESPONSE.Enum(), PartitionMetadataResponse: &pb.CommandPartitionedTopicMetadataResponse{
				RequestId: ptr(cmd.PartitionMetadata.GetRequestId()), Response: pb.CommandPartitionedTopicMetadataResponse_Failed.Enum(),
				Error: pb.ServerError_AuthorizationError.Enum(), Message: &msg,
			}})
		}},
	pb.BaseCommand_PRODUCER: {kind: accessChecked, need: PermitProduce, op: "produce", denial: "Client is not authorized to Produce",
		resource: func(cmd *pb.BaseCommand) (string, string) { return cmd.Producer.GetTopic(), "" },
		refuse: func(c *conn, cmd *pb.BaseCommand, msg string) {
			c.sendError(cmd.Producer.GetRequestId(), codeAuthorizationError, msg)
		}},
	pb.BaseCommand_SUBSCRIBE: {kind: accessChecked, need: permitConsume, op: "subscribe",
		resource: func(cmd *pb.BaseCommand) (string, string) {
			return cmd.Subscribe.GetTopic(), cmd.Subscribe.GetSubscription()
		},
		refuse: func(c *conn, cmd *pb.BaseCommand, msg string) {
			c.sendError(cmd.Subscribe.GetRequestId(), codeAuthorizationError, msg)
		}},
	pb.BaseCommand_GET_TOPICS_OF_NAMESPACE: {kind: accessChecked, need: permitListNamespace, op: "get-topics",
		denial:   "Client is not authorized to GetTopicsOfNamespace",
		resource: func(cmd *pb.BaseCommand) (string, string) { return cmd.GetTopicsOfNamespace.GetNamespace(), "" },
		refuse: func(c *conn, cmd *pb.BaseCommand, msg string) {
			c.sendError(cmd.GetTopicsOfNamespace.GetRequestId(), codeAuthorizationError, msg)
		}},
}

// coreCommand reports whether the core serves command type t itself.
func coreCommand(t pb.BaseCommand_Type) bool {
	switch commandAccess[t].kind {
	case accessAuthn, accessOpen, accessOnID, accessChecked:
		return true
	}
	return false
}

// check asks s whether role has need on name (a canonical topic, or a
// namespace for permitListNamespace).
func checkAccess(ctx context.Context, s *auth.Security, role string, need TopicPermission, name, sub string) error {
	switch need {
	case PermitLookup:
		return s.CanLookup(ctx, role, name)
	case PermitProduce:
		return s.CanProduce(ctx, role, name)
	case permitConsume:
		return s.CanConsume(ctx, role, name, sub)
	case permitListNamespace:
		return s.CanListNamespace(ctx, role, name)
	}
	return fmt.Errorf("%w: unknown permission %d", auth.ErrAuthorization, need) // a feature's bug: deny
}

// deniedRole checks need on name for every role of the connection: the
// first role denied and why ("" when all are allowed).
func (c *conn) deniedRole(s *auth.Security, need TopicPermission, name, sub string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	for _, r := range c.sec.roles() {
		if err := checkAccess(ctx, s, r, need, name, sub); err != nil {
			return r, err
		}
	}
	return "", nil
}

// canonicalTopic returns the canonical form of a topic name, false when
// it does not parse (the handler reports the bad name).
func canonicalTopic(name string) (string, bool) {
	tn, err := parseTopicName(name)
	if err != nil {
		return "", false
	}
	return tn.String(), true
}

// authzFailure is the refusal text for err: denied's (or, without one,
// the authorizer's reason), or the failure of the check itself.
func authzFailure(err error, denied string) string {
	if !errors.Is(err, auth.ErrAuthorization) {
		return "Exception occurred while trying to authorize: " + err.Error()
	}
	if denied == "" {
		return strings.TrimPrefix(err.Error(), auth.ErrAuthorization.Error()+": ")
	}
	return denied
}

// denied authorizes a command by its commandAccess row. When a role
// lacks the permission it answers the command (Pulsar's error shapes) and
// returns true; the handler must then not run.
func (c *conn) denied(f *pulsarproto.Frame) bool {
	s := c.b.sec
	if s == nil || s.Authz == nil {
		return false
	}
	rule := commandAccess[f.Type]
	if rule.kind != accessChecked {
		return false
	}
	name, sub := rule.resource(f.Cmd)
	if rule.need != permitListNamespace {
		var ok bool
		if name, ok = canonicalTopic(name); !ok {
			return false
		}
	}
	role, err := c.deniedRole(s, rule.need, name, sub)
	if err == nil {
		return false
	}
	rule.refuse(c, f.Cmd, authzFailure(err, rule.denial))
	c.logDenied(role, rule.op, name)
	return true
}

// featureDenied authorizes a feature's command (Command.SuperUserOnly,
// Command.Access) when authorization is on: when some role of the
// connection is not allowed, it answers with AuthorizationError (when
// pulsarproto.Refusal knows the command's answer) and returns true.
func (c *conn) featureDenied(f *pulsarproto.Frame, cmd Command) bool {
	s := c.b.sec
	if s == nil || s.Authz == nil || (!cmd.SuperUserOnly && cmd.Access == nil) {
		return false
	}
	refuse := func(role, msg, resource string) bool {
		if a := pulsarproto.Refusal(f.Type, f.Cmd, pb.ServerError_AuthorizationError, msg); a != nil {
			c.sendSimple(a)
		}
		c.logDenied(role, strings.ToLower(f.Type.String()), resource)
		return true
	}
	notAuthorized := "Client is not authorized to send " + f.Type.String()
	if cmd.SuperUserOnly {
		for _, r := range c.sec.roles() {
			if !s.Authz.IsSuperUser(r) {
				return refuse(r, notAuthorized, "")
			}
		}
	}
	if cmd.Access == nil {
		return false
	}
	topic, need := cmd.Access(f.Cmd)
	name, ok := canonicalTopic(topic)
	if !ok {
		return false // Handle reports the bad name
	}
	if need != PermitLookup && need != PermitProduce {
		need = 0 // a feature may ask for the TopicPermissions only
	}
	role, err := c.deniedRole(s, need, name, "")
	if err == nil {
		return false
	}
	return refuse(role, authzFailure(err, notAuthorized), name)
}

func (c *conn) logDenied(role, op, resource string) {
	c.log.Info("denied", "role", role, "op", op, "resource", resource)
}
