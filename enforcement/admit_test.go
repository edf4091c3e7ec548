package enforcement_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestEncryptionRequiredOnTheWire: on a namespace requiring encryption
// a SEND without encryption_keys gets SEND_ERROR MetadataError
// "Messages must be encrypted" and stores nothing; one with keys is
// stored; an encryption_algo alone is not enough. A PRODUCER with
// encrypted=false gets ERROR MetadataError "Encryption is required in
// <topic>".
func TestEncryptionRequiredOnTheWire(t *testing.T) {
	tb := brokertest.Start(t, brokertest.Options{})
	ctx := context.Background()
	if err := tb.Policies().CreateNamespace(ctx, "public/enc", &policy.Policies{NamespaceExtras: policy.NamespaceExtras{EncryptionRequired: true}}); err != nil {
		t.Fatal(err)
	}
	r := brokertest.Dial(t, tb)
	topic := "persistent://public/enc/wire"
	const pid = 1
	r.Producer(topic, pid)
	entry := func(seq uint64, keys bool, algo bool) []byte {
		md := &pb.MessageMetadata{ProducerName: proto.String("raw"), SequenceId: &seq, PublishTime: proto.Uint64(uint64(time.Now().UnixMilli()))}
		if keys {
			md.EncryptionKeys = []*pb.EncryptionKeys{{Key: proto.String("k"), Value: []byte{1, 2, 3}}}
		}
		if algo {
			md.EncryptionAlgo = proto.String("RSA")
		}
		mb, err := proto.Marshal(md)
		if err != nil {
			t.Fatal(err)
		}
		return pulsarproto.AppendEntry(nil, mb, []byte("payload"))
	}
	for seq, c := range []struct{ keys, algo, ok bool }{{false, false, false}, {false, true, false}, {true, true, true}, {true, false, true}} {
		r.Write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: uint64(seq)}, entry(uint64(seq), c.keys, c.algo)))
		f := r.Next()
		switch {
		case c.ok && (f.Type != pb.BaseCommand_SEND_RECEIPT || f.Cmd.SendReceipt.GetSequenceId() != uint64(seq)):
			t.Fatalf("encrypted send %d answered %s %v", seq, f.Type, f.Cmd.SendError)
		case !c.ok && (f.Type != pb.BaseCommand_SEND_ERROR || f.Cmd.SendError.GetError() != pb.ServerError_MetadataError ||
			f.Cmd.SendError.GetMessage() != "Messages must be encrypted"):
			t.Fatalf("unencrypted send %d answered %s %v", seq, f.Type, f.Cmd.SendError)
		}
	}
	st, err := tb.Admin().Reads.TopicStats(ctx, topic)
	if err != nil || st.MsgInCounter != 2 {
		t.Fatalf("stored %d messages (%v), want the 2 encrypted ones", st.MsgInCounter, err)
	}
	// A producer that declares itself unencrypted is refused at
	// creation, one that declares encryption is accepted.
	for _, enc := range []bool{false, true} {
		rc := brokertest.Dial(t, tb)
		rc.Send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
			Topic: proto.String(topic), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(1), Encrypted: proto.Bool(enc),
		}})
		f := rc.Next()
		switch {
		case enc && f.Type != pb.BaseCommand_PRODUCER_SUCCESS:
			t.Fatalf("encrypted producer answered %s", f.Type)
		case !enc && (f.Type != pb.BaseCommand_ERROR || f.Cmd.Error.GetError() != pb.ServerError_MetadataError ||
			f.Cmd.Error.GetMessage() != "Encryption is required in "+topic):
			t.Fatalf("unencrypted producer answered %s %v", f.Type, f.Cmd.Error)
		}
	}
}

// subsSeen is an Admission asked after the Enforcer: it records the
// subscription counts of the subscriptions the Enforcer admitted, and
// yields the processor a while to let any other SUBSCRIBE that could
// run alongside it do so.
type subsSeen struct {
	mu   sync.Mutex
	seen []int
}

func (*subsSeen) Name() string                                        { return "test subscription counts" }
func (*subsSeen) AdmitTopics(context.Context, broker.NewTopics) error { return nil }
func (*subsSeen) AdmitProducer(broker.Topic, *pb.CommandProducer) *broker.SendError {
	return nil
}
func (*subsSeen) AdmitConsumer(broker.Topic, *pb.CommandSubscribe) *broker.SendError { return nil }
func (*subsSeen) AdmitSubscriber(broker.Topic, int) *broker.SendError                { return nil }
func (*subsSeen) AdmitSend(broker.Topic, *broker.Entry, int, bool) *broker.SendError {
	return nil
}
func (s *subsSeen) AdmitSubscription(_ broker.Topic, subs int, _ bool) *broker.SendError {
	s.mu.Lock()
	s.seen = append(s.seen, subs)
	s.mu.Unlock()
	for range 1000 {
		runtime.Gosched()
	}
	return nil
}

// TestConcurrentSubscribesAtMaxSubscriptions: with
// maxSubscriptionsPerTopic = limit, SUBSCRIBEs to distinct new
// subscriptions sent at once on separate connections create exactly
// limit subscriptions; the others are refused with NotAllowedError. The
// count is asked under the lock that creates subscriptions, so each
// admitted SUBSCRIBE saw the ones admitted before it: the counts are 0,
// 1, 2, ... (a count read outside that lock lets several see the same
// one and pass the limit together). Run it with -race.
func TestConcurrentSubscribesAtMaxSubscriptions(t *testing.T) {
	const limit, tries = 3, 12
	seen := &subsSeen{}
	tb := brokertest.Start(t, brokertest.Options{
		Config:   func(c *brokerconf.Config) { c.Delivery.MaxSubscriptionsPerTopic = limit },
		Features: func(b *broker.Broker) error { return b.Use(seen) },
	})
	topic := brokertest.Topic("maxsubs-race")
	if err := tb.Admin().Topics.CreateTopic(brokertest.Ctx(t), topic); err != nil {
		t.Fatal(err)
	}
	conns := make([]*brokertest.Raw, tries)
	for i := range conns {
		conns[i] = brokertest.Dial(t, tb)
	}
	type answer struct {
		typ  pb.BaseCommand_Type
		code pb.ServerError
		msg  string
	}
	answers := make([]answer, tries)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r.Send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
				Topic: proto.String(topic), Subscription: proto.String(fmt.Sprintf("s%d", i)),
				SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(1),
			}})
			f := r.Next()
			answers[i] = answer{typ: f.Type}
			if f.Cmd.Error != nil {
				answers[i].code, answers[i].msg = f.Cmd.Error.GetError(), f.Cmd.Error.GetMessage()
			}
		}()
	}
	close(start)
	wg.Wait()
	ok := 0
	for i, a := range answers {
		switch {
		case a.typ == pb.BaseCommand_SUCCESS:
			ok++
		case a.typ == pb.BaseCommand_ERROR && a.code == pb.ServerError_NotAllowedError &&
			a.msg == "Exceed the maximum number of subscriptions of the topic: "+topic:
		default:
			t.Errorf("SUBSCRIBE s%d answered %s %s %q", i, a.typ, a.code, a.msg)
		}
	}
	if ok != limit {
		t.Fatalf("%d of %d concurrent SUBSCRIBEs succeeded, want the limit %d", ok, tries, limit)
	}
	if want := []int{0, 1, 2}; !slices.Equal(seen.seen, want) {
		t.Fatalf("admitted subscriptions saw counts %v, want %v", seen.seen, want)
	}
	st, err := tb.Admin().Reads.TopicStats(brokertest.Ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Subscriptions) != limit {
		t.Fatalf("topic has %d subscriptions, want %d", len(st.Subscriptions), limit)
	}
}
