package brokerauthz

import (
	"testing"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestCommandAccessCoversProtocol walks every command type of the
// protocol's BaseCommand enum: each has a row in commandAccess, a
// checked row says what it checks, on what, and how it refuses, and
// each row agrees with how the core routes the command
// (broker.CommandRoute: the core asks the authorizer exactly for the
// checked commands and the features'). A new command in the protocol
// fails here until someone decides on its authorization.
func TestCommandAccessCoversProtocol(t *testing.T) {
	values := pb.BaseCommand_CONNECT.Descriptor().Values()
	if values.Len() < 50 {
		t.Fatalf("BaseCommand has %d types: the walk reads the wrong enum", values.Len())
	}
	route := map[accessKind]broker.Route{
		accessAuthn: broker.RouteCore, accessOpen: broker.RouteCore, accessOnID: broker.RouteCore,
		accessChecked: broker.RouteAuthorized, accessFeature: broker.RouteFeature, accessAnswer: broker.RouteNone,
	}
	kinds := map[accessKind]int{}
	for i := 0; i < values.Len(); i++ {
		typ := pb.BaseCommand_Type(values.Get(i).Number())
		rule, ok := commandAccess[typ]
		if !ok {
			t.Errorf("%s: no row in commandAccess", typ)
			continue
		}
		kinds[rule.kind]++
		switch rule.kind {
		case accessChecked:
			if rule.resource == nil || rule.refuse == nil || rule.op == "" {
				t.Errorf("%s: checked, but resource, refuse or op is missing", typ)
				continue
			}
			switch rule.need {
			case permitLookup, permitProduce, permitConsume, permitListNamespace:
			default:
				t.Errorf("%s: checked for unknown permission %d", typ, rule.need)
			}
			// The resource reads an absent payload as "" (no panic).
			empty := &pb.BaseCommand{Type: typ.Enum()}
			if name, _ := rule.resource(empty); name != "" {
				t.Errorf("%s: resource of an empty command = %q", typ, name)
			}
			// The refusal is an answer with AuthorizationError and the text.
			a := rule.refuse(empty, "no")
			if a == nil || a.GetType() == typ {
				t.Errorf("%s: refusal %v", typ, a)
			}
		case accessAuthn, accessOpen, accessOnID, accessFeature, accessAnswer:
			if rule.resource != nil || rule.refuse != nil {
				t.Errorf("%s: kind %d carries a check it never runs", typ, rule.kind)
			}
		default:
			t.Errorf("%s: unknown kind %d", typ, rule.kind)
		}
		if got, want := broker.CommandRoute(typ), route[rule.kind]; got != want {
			t.Errorf("%s: the core routes it %d, the row's kind %d wants %d", typ, got, rule.kind, want)
		}
	}
	if len(commandAccess) != values.Len() {
		t.Errorf("commandAccess has %d rows, the enum %d types", len(commandAccess), values.Len())
	}
	// The commands naming a topic or namespace that the core serves.
	for _, typ := range []pb.BaseCommand_Type{pb.BaseCommand_LOOKUP, pb.BaseCommand_PARTITIONED_METADATA,
		pb.BaseCommand_PRODUCER, pb.BaseCommand_SUBSCRIBE, pb.BaseCommand_GET_TOPICS_OF_NAMESPACE} {
		if commandAccess[typ].kind != accessChecked {
			t.Errorf("%s is not checked", typ)
		}
	}
	if kinds[accessChecked] != 5 {
		t.Errorf("%d checked rows, want 5", kinds[accessChecked])
	}
}
