package broker

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestBadInputErrorsNameNoPaths sends well-framed commands with bad
// arguments (unknown tenants and namespaces, malformed and hostile topic
// names, unknown producers and consumers, schemas of missing topics) and
// checks that no error text the broker answers names an internal path
// (a metadata node or a file); the codes stay Pulsar's.
func TestBadInputErrorsNameNoPaths(t *testing.T) {
	meta := memmeta.New()
	tb := startBrokerOpts(t, brokerOpts{meta: meta})
	// Reads under the namespace public/broken fail the way a real store's
	// do: the error names the node.
	meta.FailGet(func(p string) error {
		if strings.Contains(p, "/broken") {
			return fmt.Errorf("embedded: get %s: %w", p, errors.New("injected read failure"))
		}
		return nil
	})
	r := dialRaw(t, tb, true)
	names := []string{
		"persistent://no-tenant/no-ns/x", "persistent://public/no-ns/x", "persistent://public/default/",
		"persistent://public/default/../../admin/policies", "persistent://public/default/a/../../b",
		"persistent://../../etc/passwd", "non-persistent://nope/nope/x", "bogus://public/default/x",
		"persistent://public/default/" + strings.Repeat("x", 5000), "persistent://public/default/\x00nul",
		"persistent:///abs/path/x", "public/default", "//admin/policies",
		"persistent://public/broken/x", "public/broken", "non-persistent://public/broken/x",
	}
	var rid uint64
	next := func() *uint64 { rid++; v := rid; return &v }
	var sent int
	for _, n := range names {
		n := n
		cmds := []*pb.BaseCommand{
			{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{Topic: &n, RequestId: next()}},
			{Type: pb.BaseCommand_PARTITIONED_METADATA.Enum(), PartitionMetadata: &pb.CommandPartitionedTopicMetadata{Topic: &n, RequestId: next()}},
			{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{Topic: &n, ProducerId: next(), RequestId: next()}},
			{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{Topic: &n, Subscription: ptr("../s"), SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: next(), RequestId: next()}},
			{Type: pb.BaseCommand_GET_SCHEMA.Enum(), GetSchema: &pb.CommandGetSchema{Topic: &n, RequestId: next()}},
			{Type: pb.BaseCommand_GET_TOPICS_OF_NAMESPACE.Enum(), GetTopicsOfNamespace: &pb.CommandGetTopicsOfNamespace{Namespace: &n, RequestId: next()}},
		}
		for _, c := range cmds {
			r.send(c)
			sent++
		}
	}
	// Commands naming producers and consumers that do not exist.
	for _, c := range []*pb.BaseCommand{
		{Type: pb.BaseCommand_CLOSE_PRODUCER.Enum(), CloseProducer: &pb.CommandCloseProducer{ProducerId: ptr(uint64(1 << 40)), RequestId: next()}},
		{Type: pb.BaseCommand_UNSUBSCRIBE.Enum(), Unsubscribe: &pb.CommandUnsubscribe{ConsumerId: ptr(uint64(1 << 40)), RequestId: next()}},
		{Type: pb.BaseCommand_GET_LAST_MESSAGE_ID.Enum(), GetLastMessageId: &pb.CommandGetLastMessageId{ConsumerId: ptr(uint64(1 << 40)), RequestId: next()}},
		{Type: pb.BaseCommand_SEEK.Enum(), Seek: &pb.CommandSeek{ConsumerId: ptr(uint64(1 << 40)), RequestId: next()}},
	} {
		r.send(c)
		sent++
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	var texts []string
	for {
		f := r.next()
		if f.Type == pb.BaseCommand_PONG {
			break
		}
		for _, m := range []string{f.Cmd.GetError().GetMessage(), f.Cmd.GetSendError().GetMessage(), f.Cmd.GetLookupTopicResponse().GetMessage(),
			f.Cmd.GetPartitionMetadataResponse().GetMessage(), f.Cmd.GetGetSchemaResponse().GetErrorMessage()} {
			if m != "" {
				texts = append(texts, fmt.Sprintf("%s: %s", f.Type, m))
			}
		}
	}
	if len(texts) < len(names) {
		t.Fatalf("only %d error answers to %d bad commands: %q", len(texts), sent, texts)
	}
	for _, s := range texts {
		// A client's own topic name may be echoed; anything else that
		// looks like a path came from inside.
		byLen := slices.Clone(names)
		slices.SortFunc(byLen, func(a, b string) int { return len(b) - len(a) })
		for _, n := range byLen {
			s = strings.ReplaceAll(s, n, "<name>")
		}
		if pulsarproto.NamesInternalPath(s) || strings.Contains(s, "/admin/") || strings.Contains(s, "/managed-ledgers") || strings.Contains(s, "broken/") {
			t.Errorf("error answer names an internal path: %q", s)
		}
	}
}
