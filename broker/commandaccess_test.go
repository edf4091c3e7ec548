package broker

import (
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestCommandAccessCoversProtocol walks every command type of the
// protocol's BaseCommand enum: each has a row in commandAccess, and a
// checked row says what it checks, on what, and how it refuses. A new
// command in the protocol fails here until someone decides on its
// authorization.
func TestCommandAccessCoversProtocol(t *testing.T) {
	values := pb.BaseCommand_CONNECT.Descriptor().Values()
	if values.Len() < 50 {
		t.Fatalf("BaseCommand has %d types: the walk reads the wrong enum", values.Len())
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
			}
			switch rule.need {
			case PermitLookup, PermitProduce, permitConsume, permitListNamespace:
			default:
				t.Errorf("%s: checked for unknown permission %d", typ, rule.need)
			}
			// The resource reads an absent payload as "" (no panic).
			if name, _ := rule.resource(&pb.BaseCommand{Type: typ.Enum()}); name != "" {
				t.Errorf("%s: resource of an empty command = %q", typ, name)
			}
		case accessAuthn, accessOpen, accessOnID, accessFeature, accessAnswer:
			if rule.resource != nil || rule.refuse != nil {
				t.Errorf("%s: kind %d carries a check it never runs", typ, rule.kind)
			}
		default:
			t.Errorf("%s: unknown kind %d", typ, rule.kind)
		}
		if got, want := coreCommand(typ), rule.kind <= accessChecked; got != want {
			t.Errorf("%s: coreCommand %v, kind %d", typ, got, rule.kind)
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
