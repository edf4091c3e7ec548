package broker

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// observer is a feature with the observing hooks (geo-replication's
// seams): it counts the entries stored (data and markers apart) and the
// policy refreshes, and records what replicated subscriptions' loops show it.
type observer struct {
	data, markers, policies atomic.Int64

	mu    sync.Mutex
	read  map[string][]int32 // subscription -> marker types read
	moved map[string]int     // subscription -> MarkDeleteMoved calls
}

func (*observer) Name() string { return "observer" }

func (o *observer) Stored(_ Topic, marker bool) {
	if marker {
		o.markers.Add(1)
	} else {
		o.data.Add(1)
	}
}

func (o *observer) PolicyApplied(Topic) { o.policies.Add(1) }

func (o *observer) MarkerRead(l SubLoop, marker int32, data []byte) {
	if e, err := pulsarproto.ParseEntry(data); err != nil || len(e.Payload) == 0 {
		panic("MarkerRead without the stored entry")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.read[l.Name()] = append(o.read[l.Name()], marker)
}

func (o *observer) MarkDeleteMoved(l SubLoop) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.moved[l.Name()]++
}

// TestObserverHooks: StoreObserver sees every stored entry once, a
// producer's as data and a feature's (Topic.Append) as a marker;
// PolicyObserver hears a loaded topic's policy refreshed after a change;
// the snapshot tells replicated subscriptions; and
// ReplicatedSubscriptions is called on replicated subscriptions only: the
// marker read (never delivered) and the mark-delete moving as consumers
// acknowledge.
func TestObserverHooks(t *testing.T) {
	o := &observer{read: map[string][]int32{}, moved: map[string]int{}}
	tb := startWithFeatures(t, func(b *Broker) error { return b.Use(o) })
	if err := tb.Use(&observer{}); err == nil {
		t.Fatal("a second registration after Start was accepted")
	}
	topic := "persistent://public/default/" + newTopicName("observe")
	cl := tb.client(t)
	earliest := pulsar.SubscriptionPositionEarliest
	plain := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "plain", SubscriptionInitialPosition: earliest})
	repl := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "repl", SubscriptionInitialPosition: earliest,
		ReplicateSubscriptionState: true})
	sendAsyncAll(t, mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true}), 3, payloadMsg)
	waitUntil(t, "3 data entries observed", func() bool { return o.data.Load() == 3 })

	tv, err := tb.Topic(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := proto.Marshal(&pb.MessageMetadata{ProducerName: proto.String("marker"), SequenceId: proto.Uint64(0),
		PublishTime: proto.Uint64(uint64(time.Now().UnixMilli())), MarkerType: proto.Int32(12)})
	if err != nil {
		t.Fatal(err)
	}
	buf := pulsarproto.AppendEntry(make([]byte, mledger.EntryHeadroom), meta, []byte("snapshot"))
	stored := make(chan error, 1)
	if err := tv.Append(buf, mledger.EntryHeadroom, func(_ storage.Position, err error) { stored <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-stored; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the marker observed", func() bool { return o.markers.Load() == 1 })
	if n := o.data.Load(); n != 3 {
		t.Fatalf("%d data entries observed, want 3", n)
	}
	for _, c := range []pulsar.Consumer{plain, repl} {
		for _, m := range receiveN(t, c, 3) {
			if err := c.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitUntil(t, "both subscriptions caught up", func() bool {
		return subBacklog(t, tb.Broker, topic, "plain") == 0 && subBacklog(t, tb.Broker, topic, "repl") == 0
	})
	o.mu.Lock()
	read, moved := o.read, o.moved
	if len(read["repl"]) != 1 || read["repl"][0] != 12 || len(read["plain"]) != 0 {
		t.Fatalf("markers read %v: want the replicated subscription's one (type 12) only", read)
	}
	if moved["repl"] == 0 || moved["plain"] != 0 {
		t.Fatalf("MarkDeleteMoved calls %v: want the replicated subscription's only", moved)
	}
	o.mu.Unlock()

	st, err := topicStats(tb.Broker, ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Subscriptions["repl"].IsReplicated || st.Subscriptions["plain"].IsReplicated {
		t.Fatalf("replicated flags: repl %v, plain %v", st.Subscriptions["repl"].IsReplicated, st.Subscriptions["plain"].IsReplicated)
	}

	before := o.policies.Load()
	ttl := 3600
	if err := tb.Policies().Update(ctxT(t), "public/default", func(p *policy.Policies) error {
		p.MessageTTLInSeconds = &ttl
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A PolicyWatcher (package enforcement, not registered here) calls
	// RefreshPolicy on a loaded topic when the store announces a change;
	// the test stands in for it.
	if tv.RefreshPolicy() {
		t.Fatal("a TTL change unloaded the topic")
	}
	if o.policies.Load() == before {
		t.Fatal("the policy refresh did not reach the PolicyObserver")
	}
	if got := tv.EffectivePolicy().MessageTTLSeconds; got != 3600 {
		t.Fatalf("effective TTL %d after the observer heard the change, want 3600", got)
	}
}
