package broker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// probe is a feature using every kind of hook, recording what the core
// calls.
type probe struct {
	slot TopicSlot[probeTopic]

	mu             sync.Mutex
	loaded, closed []string
	ticks          atomic.Int64
	started        atomic.Int64
	stopped        atomic.Int64
	skipped        atomic.Int64
}

type probeTopic struct{ name string }

func (*probe) Name() string { return "probe" }

func (p *probe) LoadTopic(_ context.Context, t Topic) error {
	if strings.HasSuffix(t.Name(), "-refused") {
		return errors.New("refused by the probe")
	}
	p.slot.Set(t, &probeTopic{name: t.Name()})
	p.mu.Lock()
	p.loaded = append(p.loaded, t.Name())
	p.mu.Unlock()
	return nil
}

func (p *probe) CloseTopic(t Topic) {
	p.mu.Lock()
	p.closed = append(p.closed, t.Name())
	p.mu.Unlock()
}

func (p *probe) TickTopic(t Topic) {
	if p.slot.Get(t) != nil {
		p.ticks.Add(1)
	}
}

// SkipEntry skips the messages of producer "skip".
func (p *probe) SkipEntry(t Topic, md *pulsarproto.Metadata) bool {
	if p.slot.Get(t) == nil {
		panic("SkipEntry on a topic the probe did not load")
	}
	if md != nil && string(md.ProducerName) == "skip" {
		p.skipped.Add(1)
		return true
	}
	return false
}

func (p *probe) Start(context.Context) error { p.started.Add(1); return nil }
func (p *probe) Close()                      { p.stopped.Add(1) }

// Commands serves WATCH_TOPIC_LIST (a type the core does not serve; the
// generated code here has no body for it) with a PONG.
func (p *probe) Commands() []Command {
	return []Command{{Type: pb.BaseCommand_WATCH_TOPIC_LIST, Handle: func(c Conn, cmd *pb.BaseCommand) error {
		c.Send(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
		return nil
	}}}
}

func startWithFeatures(t *testing.T, use func(b *Broker) error) *testBroker {
	t.Helper()
	meta := memmeta.New()
	f, err := mledger.NewFactory(mledger.Options{Ledgers: memstore.New(), Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(brokerconf.Config{ServiceAddr: "127.0.0.1:0", HTTPAddr: "-", AdvertisedHost: "127.0.0.1", MaxMessageSize: 1 << 20,
		StatsUpdateInterval: 20 * time.Millisecond}, Deps{Metadata: meta, OpenLedger: storage.Opener(f, mledger.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	if err := use(b); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); f.Close() })
	return &testBroker{Broker: b, url: "pulsar://" + b.ServiceAddr(), factory: f, meta: meta}
}

// TestFeatureHooks: a registered feature's hooks run where the core
// promises: LoadTopic before the topic is usable (its error fails the
// load), its slot readable from the other hooks, ticks on the stats
// loop, entries it skips acknowledged and never delivered, its command
// served, Start and Close once each, CloseTopic at unload.
func TestFeatureHooks(t *testing.T) {
	p := &probe{}
	tb := startWithFeatures(t, func(b *Broker) error {
		p.slot = NewTopicSlot[probeTopic](b)
		return b.Use(p)
	})
	if p.started.Load() != 1 {
		t.Fatalf("Start ran %d times", p.started.Load())
	}
	if err := tb.Use(&probe{}); !errors.Is(err, ErrStarted) {
		t.Fatalf("Use after Start: %v, want ErrStarted", err)
	}
	topic := "persistent://public/default/" + newTopicName("probe")
	cl := tb.client(t)
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	keep := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "keep", DisableBatching: true})
	skip := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "skip", DisableBatching: true})
	sendAsyncAll(t, skip, 3, payloadMsg)
	sendAsyncAll(t, keep, 2, payloadMsg)
	got := receiveN(t, cons, 2)
	for _, m := range got {
		if m.ProducerName() != "keep" {
			t.Fatalf("delivered a message of %q", m.ProducerName())
		}
		cons.Ack(m)
	}
	if n := p.skipped.Load(); n != 3 {
		t.Fatalf("skipped %d entries, want 3", n)
	}
	waitUntil(t, "the skipped entries acknowledged", func() bool { return subBacklog(t, tb.Broker, topic, "s") == 0 })
	waitUntil(t, "a tick", func() bool { return p.ticks.Load() > 0 })

	r := dialRaw(t, tb, true)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr(topic + "-refused"), ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(1))}})
	if f := r.next(); f.Type != pb.BaseCommand_ERROR || !strings.Contains(f.Cmd.Error.GetMessage(), "refused by the probe") {
		t.Fatalf("PRODUCER on a topic whose LoadTopic failed answered %s %v", f.Type, f.Cmd)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_WATCH_TOPIC_LIST.Enum()})
	if f := r.next(); f.Type != pb.BaseCommand_PONG {
		t.Fatalf("WATCH_TOPIC_LIST answered %s %v", f.Type, f.Cmd)
	}

	if ok, err := tb.UnloadTopic(topic); !ok || err != nil {
		t.Fatalf("unload: %v %v", ok, err)
	}
	p.mu.Lock()
	loaded, closed := append([]string(nil), p.loaded...), append([]string(nil), p.closed...)
	p.mu.Unlock()
	if len(loaded) == 0 || loaded[0] != topic {
		t.Fatalf("loaded %v, want %s first", loaded, topic)
	}
	if !containsString(closed, topic) || !containsString(closed, topic+"-refused") {
		t.Fatalf("closed %v, want %s and the refused topic", closed, topic)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if p.stopped.Load() != 1 {
		t.Fatalf("Close ran %d times", p.stopped.Load())
	}
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestUseRefuses: a feature may not serve a command the core serves, an
// answer, nor one another feature serves.
func TestUseRefuses(t *testing.T) {
	b, err := New(brokerconf.Config{}, Deps{Metadata: memmeta.New(), OpenLedger: func(context.Context, string) (storage.ManagedLedger, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	core := commandFeature{Command{Type: pb.BaseCommand_SEND, Handle: func(Conn, *pb.BaseCommand) error { return nil }}}
	if err := b.Use(core); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("a feature serving SEND: %v, want ErrBadConfig", err)
	}
	answer := commandFeature{Command{Type: pb.BaseCommand_LOOKUP_RESPONSE, Handle: func(Conn, *pb.BaseCommand) error { return nil }}}
	if err := b.Use(answer); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("a feature serving LOOKUP_RESPONSE: %v, want ErrBadConfig", err)
	}
	w := commandFeature{Command{Type: pb.BaseCommand_WATCH_TOPIC_LIST, Handle: func(Conn, *pb.BaseCommand) error { return nil }}}
	if err := b.Use(w); err != nil {
		t.Fatal(err)
	}
	if err := b.Use(w); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("WATCH_TOPIC_LIST registered twice: %v, want ErrBadConfig", err)
	}
}

type commandFeature struct{ c Command }

func (commandFeature) Name() string          { return "commands" }
func (f commandFeature) Commands() []Command { return []Command{f.c} }

// gate is a feature with an AttachHook and a DeletionObserver: it refuses
// producers named "refuse" (AttachError) and "fail" (a plain error),
// subscriptions named "closed", reports version 9 to producer "ok" (a
// pulsar-client-go producer without a schema cannot take a version), and
// records deleted topics.
type gate struct {
	mu      sync.Mutex
	deleted []string
}

func (*gate) Name() string { return "gate" }

func (*gate) AttachProducer(_ context.Context, t Topic, m *pb.CommandProducer) ([]byte, error) {
	switch m.GetProducerName() {
	case "refuse":
		return nil, &AttachError{Code: pb.ServerError_NotAllowedError, Msg: "gate: no producer here"}
	case "fail":
		return nil, errors.New("gate: metadata unreachable")
	case "ok":
		return []byte{0, 0, 0, 0, 0, 0, 0, 9}, nil
	}
	return nil, nil
}

func (*gate) AttachConsumer(_ context.Context, t Topic, m *pb.CommandSubscribe) error {
	if m.GetSubscription() == "closed" {
		return &AttachError{Code: pb.ServerError_IncompatibleSchema, Msg: "gate: no consumer on " + t.Name()}
	}
	return nil
}

func (g *gate) TopicDeleted(_ context.Context, tn pulsarproto.TopicName) {
	g.mu.Lock()
	g.deleted = append(g.deleted, tn.String())
	g.mu.Unlock()
}

func (g *gate) deletedNames() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.deleted...)
}

// TestAttachHook: a PRODUCER or SUBSCRIBE the hook refuses is answered
// with its code and message (a plain error with ServiceNotReady) and
// attaches nothing; an accepted producer's PRODUCER_SUCCESS carries the
// version the hook gave.
func TestAttachHook(t *testing.T) {
	tb := startWithFeatures(t, func(b *Broker) error { return b.Use(&gate{}) })
	topic := "persistent://public/default/" + newTopicName("gate")
	r := dialRaw(t, tb, true)
	for i, c := range []struct {
		name string
		code pb.ServerError
		msg  string
	}{{"refuse", pb.ServerError_NotAllowedError, "gate: no producer here"}, {"fail", pb.ServerError_ServiceNotReady, "gate: metadata unreachable"}} {
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
			Topic: ptr(topic), ProducerId: ptr(uint64(i + 1)), RequestId: ptr(uint64(i + 1)), ProducerName: ptr(c.name)}})
		f := r.next()
		if f.Type != pb.BaseCommand_ERROR || f.Cmd.Error.GetError() != c.code || f.Cmd.Error.GetMessage() != c.msg {
			t.Fatalf("producer %q answered %s %v, want %s %q", c.name, f.Type, f.Cmd, c.code, c.msg)
		}
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr(topic), ProducerId: ptr(uint64(5)), RequestId: ptr(uint64(5)), ProducerName: ptr("ok")}})
	if f := r.next(); f.Type != pb.BaseCommand_PRODUCER_SUCCESS || string(f.Cmd.ProducerSuccess.SchemaVersion) != string([]byte{0, 0, 0, 0, 0, 0, 0, 9}) {
		t.Fatalf("accepted producer answered %s %v, want version 9", f.Type, f.Cmd)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr("closed"), SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(6))}})
	if f := r.next(); f.Type != pb.BaseCommand_ERROR || f.Cmd.Error.GetError() != pb.ServerError_IncompatibleSchema ||
		f.Cmd.Error.GetMessage() != "gate: no consumer on "+topic {
		t.Fatalf("refused SUBSCRIBE answered %s %v", f.Type, f.Cmd)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr("open"), SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: ptr(uint64(2)), RequestId: ptr(uint64(7))}})
	if f := r.next(); f.Type != pb.BaseCommand_SUCCESS {
		t.Fatalf("SUBSCRIBE answered %s %v", f.Type, f.Cmd)
	}
	st, err := topicStats(tb.Broker, ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Publishers) != 1 || st.Publishers[0].ProducerName != "ok" {
		t.Fatalf("publishers %+v, want only the accepted one", st.Publishers)
	}
	if _, ok := st.Subscriptions["closed"]; ok || len(st.Subscriptions) != 1 {
		t.Fatalf("subscriptions %v, want only \"open\"", st.Subscriptions)
	}
}

// TestDeletionObserver: the observers hear of every deleted topic (both
// domains; each partition, then the partitioned topic) and of nothing
// that was not deleted.
func TestDeletionObserver(t *testing.T) {
	g := &gate{}
	tb := startWithFeatures(t, func(b *Broker) error { return b.Use(g) })
	ctx := ctxT(t)
	cl := tb.client(t)
	plain := "persistent://public/default/" + newTopicName("del")
	np := "non-persistent://public/default/" + newTopicName("del")
	part := "persistent://public/default/" + newTopicName("delp")
	for _, topic := range []string{plain, np} {
		mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic}).Close()
	}
	if err := tb.Registry().CreatePartitioned(ctx, part, topicreg.PartitionedMetadata{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	mustProducer(t, cl, pulsar.ProducerOptions{Topic: part}).Close()
	if err := tb.Registry().DeleteTopic(ctx, plain+"-never", true); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("deleting a missing topic: %v", err)
	}
	for _, topic := range []string{plain, np} {
		if err := tb.Registry().DeleteTopic(ctx, topic, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{part + "-partition-0", part + "-partition-1"} {
		if err := tb.Registry().DeleteTopic(ctx, p, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Registry().DeletePartitioned(ctx, part); err != nil {
		t.Fatal(err)
	}
	want := []string{plain, np, part + "-partition-0", part + "-partition-1", part}
	if got := g.deletedNames(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("observed deletions %v, want %v", got, want)
	}
}

// sysFeature keeps a subscription of its own on every topic.
type sysFeature struct{}

func (sysFeature) Name() string                  { return "sys" }
func (sysFeature) SystemSubscriptions() []string { return []string{"sys"} }
func (sysFeature) CloseTopic(Topic)              {}
func (sysFeature) LoadTopic(_ context.Context, t Topic) error {
	if !t.Persistent() {
		return nil
	}
	_, err := t.OpenSubscription("sys")
	return err
}

// TestSystemSubscriptionsKept: a feature's own subscription (the
// compactor's cursor) is told apart from a consumer's (backlog quotas
// leave it out of the slowest), and message expiry leaves it alone.
func TestSystemSubscriptionsKept(t *testing.T) {
	tb := startWithFeatures(t, func(b *Broker) error { return b.Use(sysFeature{}) })
	topic := "persistent://public/default/" + newTopicName("sys")
	cl := tb.client(t)
	mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "user", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest}).Close()
	sendAsyncAll(t, mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true}), 3, payloadMsg)
	tp, err := tb.loadedOrLoad(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]*subscription{}
	for _, s := range *tp.subList.Load() {
		subs[s.Name()] = s
	}
	sys, user := subs["sys"], subs["user"]
	if sys == nil || user == nil {
		t.Fatalf("subscriptions %v", subs)
	}
	backlog := func(s *subscription) (n int64) {
		s.Call(func() { n, _ = s.Cursor().Backlog() })
		return n
	}
	if v := (Topic{tp}); !v.SystemSubscription(Subscription{sys}) || v.SystemSubscription(Subscription{user}) {
		t.Fatal("SystemSubscription does not tell the feature's subscription from the consumer's")
	}
	// Expiry takes what was published before now, to the millisecond:
	// let the clock pass the last publish time.
	sent := time.Now().UnixMilli()
	waitUntil(t, "the clock to pass the publish times", func() bool { return time.Now().UnixMilli() > sent })
	for _, s := range []*subscription{sys, user} {
		if err := expireBacklog(s, 0, tp.b.ext.system); err != nil {
			t.Fatal(err)
		}
	}
	if n := backlog(sys); n != 3 {
		t.Fatalf("the feature's subscription backlog %d after expiry, want 3", n)
	}
	if n := backlog(user); n != 0 {
		t.Fatalf("the consumer's subscription backlog %d after expiry, want 0", n)
	}
}

// subHooks is a feature with a DispatchFilter (skipping the messages of
// producer "skip") and an AckHook that takes no ACK and withholds
// nothing, counting the entries dispatch shows it.
type subHooks struct{ held atomic.Int64 }

func (*subHooks) Name() string { return "subhooks" }

func (*subHooks) SkipEntry(_ Topic, md *pulsarproto.Metadata) bool {
	return md != nil && string(md.ProducerName) == "skip"
}

func (*subHooks) InterceptAck(*AckRequest) bool { return false }

func (h *subHooks) HeldEntry(SubLoop, Withheld) bool { h.held.Add(1); return false }

// TestAdminSubscriptionHooked: a subscription the admin API creates is
// set up as one a SUBSCRIBE creates — the features' dispatch filters and
// ack hooks in place at once, not only after the topic reloads (it
// once skipped that step).
func TestAdminSubscriptionHooked(t *testing.T) {
	h := &subHooks{}
	tb := startWithFeatures(t, func(b *Broker) error { return b.Use(h) })
	topic := "persistent://public/default/" + newTopicName("adminsub")
	cl := tb.client(t)
	sendAsyncAll(t, mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "skip", DisableBatching: true}), 3, payloadMsg)
	sendAsyncAll(t, mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "keep", DisableBatching: true}), 2, payloadMsg)
	if err := createSubscription(tb.Broker, ctxT(t), topic, "admin", MessageID{LedgerID: -1, EntryID: -1, BatchIndex: -1}); err != nil {
		t.Fatal(err)
	}
	v, err := tb.Topic(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := v.Subscription("admin")
	if !ok {
		t.Fatal("the created subscription is not on the topic")
	}
	var filters, acks int
	var tv Topic
	s.Call(func(l SubLoop) {
		if e := l.s.ext; e != nil {
			filters, acks = len(e.filters), len(e.acks)
		}
		tv = l.Topic()
	})
	if filters != 1 || acks != 1 || tv.t == nil {
		t.Fatalf("created subscription has %d dispatch filters, %d ack hooks, topic view %v; want 1, 1 and the topic", filters, acks, tv.t != nil)
	}
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "admin"})
	for _, m := range receiveN(t, cons, 2) {
		if m.ProducerName() != "keep" {
			t.Fatalf("delivered a message of %q, which the dispatch filter skips", m.ProducerName())
		}
		cons.Ack(m)
	}
	if n := h.held.Load(); n != 2 {
		t.Fatalf("the ack hook saw %d entries, want the 2 delivered", n)
	}
}
