package brokerauthz

import (
	"maps"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// accessKind is how a command is authorized.
type accessKind uint8

const (
	// accessAuthn: the command is authentication itself (CONNECT,
	// AUTH_RESPONSE; the core's security.go).
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
	// SuperUserOnly and Access decide (authorizeFeature). Without one
	// the core refuses the command (NotAllowed) or closes the connection.
	accessFeature
	// accessAnswer: the broker's answer or push, never a request: no
	// feature may serve it, and the core closes a client sending one.
	accessAnswer
)

// permission is what a check needs: the features' TopicPermissions
// (broker.Command.Access) and two of the core's commands' own.
type permission int

const (
	permitLookup                   = permission(broker.PermitLookup)
	permitProduce                  = permission(broker.PermitProduce)
	permitConsume       permission = iota + 100 // on the topic, for the subscription
	permitListNamespace                         // on the namespace
)

// commandRule is one row of commandAccess.
type commandRule struct {
	kind accessKind
	// For accessChecked: need on resource's topic (parsed; a bad name is
	// left to the handler) or namespace; op names the check in the log;
	// denial is the refusal's text ("": the authorizer's reason); refuse
	// builds the command's answer with AuthorizationError and msg.
	need     permission
	resource func(cmd *pb.BaseCommand) (name, subscription string)
	op       string
	denial   string
	refuse   func(cmd *pb.BaseCommand, msg string) *pb.BaseCommand
}

// commandAccess is the authorization of each command type: the checked
// commands' rows and, for the others, their kind (commandKinds).
var commandAccess = func() map[pb.BaseCommand_Type]commandRule {
	m := maps.Clone(checkedCommands)
	for kind, types := range commandKinds {
		for _, t := range types {
			if _, dup := m[t]; dup {
				panic("BUG: brokerauthz: command " + t.String() + " in two commandAccess rows")
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
// core serves (broker.RouteAuthorized), with what they need there.
var checkedCommands = map[pb.BaseCommand_Type]commandRule{
	pb.BaseCommand_LOOKUP: {kind: accessChecked, need: permitLookup, op: "lookup", denial: "Client is not authorized to Lookup",
		resource: func(cmd *pb.BaseCommand) (string, string) { return cmd.LookupTopic.GetTopic(), "" },
		refuse: func(cmd *pb.BaseCommand, msg string) *pb.BaseCommand {
			return &pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: &pb.CommandLookupTopicResponse{
				RequestId: ptr(cmd.LookupTopic.GetRequestId()), Response: pb.CommandLookupTopicResponse_Failed.Enum(),
				Error: pb.ServerError_AuthorizationError.Enum(), Message: &msg,
			}}
		}},
	pb.BaseCommand_PARTITIONED_METADATA: {kind: accessChecked, need: permitLookup, op: "partitioned-metadata",
		denial:   "Client is not authorized to Get Partition Metadata",
		resource: func(cmd *pb.BaseCommand) (string, string) { return cmd.PartitionMetadata.GetTopic(), "" },
		refuse: func(cmd *pb.BaseCommand, msg string) *pb.BaseCommand {
			return &pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA_RESPONSE.Enum(), PartitionMetadataResponse: &pb.CommandPartitionedTopicMetadataResponse{
				RequestId: ptr(cmd.PartitionMetadata.GetRequestId()), Response: pb.CommandPartitionedTopicMetadataResponse_Failed.Enum(),
				Error: pb.ServerError_AuthorizationError.Enum(), Message: &msg,
			}}
		}},
	pb.BaseCommand_PRODUCER: {kind: accessChecked, need: permitProduce, op: "produce", denial: "Client is not authorized to Produce",
		resource: func(cmd *pb.BaseCommand) (string, string) { return cmd.Producer.GetTopic(), "" },
		refuse: func(cmd *pb.BaseCommand, msg string) *pb.BaseCommand {
			return errorAnswer(cmd.Producer.GetRequestId(), msg)
		}},
	pb.BaseCommand_SUBSCRIBE: {kind: accessChecked, need: permitConsume, op: "subscribe",
		resource: func(cmd *pb.BaseCommand) (string, string) {
			return cmd.Subscribe.GetTopic(), cmd.Subscribe.GetSubscription()
		},
		refuse: func(cmd *pb.BaseCommand, msg string) *pb.BaseCommand {
			return errorAnswer(cmd.Subscribe.GetRequestId(), msg)
		}},
	pb.BaseCommand_GET_TOPICS_OF_NAMESPACE: {kind: accessChecked, need: permitListNamespace, op: "get-topics",
		denial:   "Client is not authorized to GetTopicsOfNamespace",
		resource: func(cmd *pb.BaseCommand) (string, string) { return cmd.GetTopicsOfNamespace.GetNamespace(), "" },
		refuse: func(cmd *pb.BaseCommand, msg string) *pb.BaseCommand {
			return errorAnswer(cmd.GetTopicsOfNamespace.GetRequestId(), msg)
		}},
}

// errorAnswer is ERROR(requestID, AuthorizationError, msg).
func errorAnswer(requestID uint64, msg string) *pb.BaseCommand {
	return &pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{
		RequestId: &requestID, Error: pb.ServerError_AuthorizationError.Enum(), Message: &msg,
	}}
}

func ptr[T any](v T) *T { return &v }
