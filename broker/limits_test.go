package broker

import (
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// The core's side of the limits (limits.go, held.go), driven by stand-ins
// for package enforcement: limitsFeature puts Limits on topics and hears
// of admin cursor moves; policyFollower refreshes the loaded topics on
// every policy store change. The real feature is tested in package
// enforcement.

// limitsFeature puts limits(t) on every topic as it loads (nil: none)
// and calls moved on CursorsMoved.
type limitsFeature struct {
	limits func(Topic) *Limits
	moved  func(Topic)
}

func (*limitsFeature) Name() string { return "test limits" }

func (f *limitsFeature) LoadTopic(_ context.Context, t Topic) error {
	if f.limits != nil {
		t.SetLimits(f.limits(t))
	}
	return nil
}

func (*limitsFeature) CloseTopic(Topic) {}

func (f *limitsFeature) CursorsMoved(t Topic) {
	if f.moved != nil {
		f.moved(t)
	}
}

// startLimited starts a broker with f registered.
func startLimited(t *testing.T, f *limitsFeature, more ...func(*Broker) error) *testBroker {
	t.Helper()
	use := append([]func(*Broker) error{func(b *Broker) error { return b.Use(f) }}, more...)
	return startBrokerOpts(t, brokerOpts{use: use})
}

// policyFollower is a PolicyWatcher that refreshes every loaded topic on
// every policy store change.
type policyFollower struct {
	b       *Broker
	version atomic.Uint64
	cancel  func()
}

func (*policyFollower) Name() string                 { return "test policy follower" }
func (p *policyFollower) PolicyVersion() uint64      { return p.version.Load() }
func (p *policyFollower) RefreshPolicy(t Topic) bool { return t.RefreshPolicy() }
func (p *policyFollower) Close()                     { p.cancel() }
func (p *policyFollower) Start(context.Context) (err error) {
	p.cancel = p.b.Policies().Subscribe(func(string) {
		p.version.Add(1)
		p.b.EachTopic(func(t Topic) bool { t.RefreshPolicy(); return true })
	})
	return nil
}

// followPolicies registers a policyFollower (startBrokerMeta's use).
func followPolicies(b *Broker) error { return b.Use(&policyFollower{b: b}) }

// holdGate is a Quota that holds every SEND and refuses every producer
// while hold is set; an admin cursor move clears it and releases.
type holdGate struct{ hold atomic.Bool }

func (g *holdGate) AdmitProducer() *SendError {
	if g.hold.Load() {
		return &SendError{Code: pb.ServerError_ProducerBlockedQuotaExceededError, Msg: "held"}
	}
	return nil
}

func (g *holdGate) AdmitSend() (bool, *SendError) { return g.hold.Load(), nil }

// startHolding starts a broker whose persistent topics have g as their
// Quota, with the topic created and a durable subscription "slow".
func startHolding(t *testing.T, topic string) (*testBroker, *holdGate) {
	t.Helper()
	g := &holdGate{}
	tb := startLimited(t, &limitsFeature{
		limits: func(Topic) *Limits { return &Limits{Quota: g} },
		moved: func(t Topic) {
			g.hold.Store(false)
			t.ReleaseHeld()
		},
	})
	if err := tb.Registry().Register(ctxT(t), topic, topicreg.TopicNode{}); err != nil {
		t.Fatal(err)
	}
	if err := createSubscription(tb.Broker, ctxT(t), topic, "slow", earliest); err != nil {
		t.Fatal(err)
	}
	return tb, g
}

// heldOn is the number of sends held on topic.
func heldOn(t testing.TB, tb *testBroker, topic string) int {
	v, err := tb.Topic(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return v.HeldSends()
}

// TestQuotaRefusals: a Quota's refusal of a PRODUCER is answered with its
// code and message; its refusal of a SEND disconnects the producer
// (CLOSE_PRODUCER), then answers the SEND with its code, and stores
// nothing.
func TestQuotaRefusals(t *testing.T) {
	var refuse atomic.Bool
	q := quotaFunc(func() (bool, *SendError) {
		if refuse.Load() {
			return false, &SendError{Code: pb.ServerError_NotAllowedError, Msg: "over quota"}
		}
		return false, nil
	})
	tb := startLimited(t, &limitsFeature{limits: func(Topic) *Limits { return &Limits{Quota: q} }})
	topic := newTopicName("quota")
	r := dialRaw(t, tb, true)
	pid := r.producer(topic)
	r.sendOK(pid, 0)
	refuse.Store(true)
	r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: 1}, testEntry(1, "x")))
	if f := r.next(); f.Type != pb.BaseCommand_CLOSE_PRODUCER {
		t.Fatalf("refused SEND: first answer %s, want CLOSE_PRODUCER", f.Type)
	}
	f := r.next()
	if f.Type != pb.BaseCommand_SEND_ERROR || f.Cmd.SendError.GetError() != pb.ServerError_NotAllowedError || f.Cmd.SendError.GetMessage() != "over quota" {
		t.Fatalf("refused SEND answered %s %v", f.Type, f.Cmd.SendError)
	}
	rc := dialRaw(t, tb, true)
	rc.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr(topic), ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(1)),
	}})
	if f := rc.next(); f.Type != pb.BaseCommand_ERROR || f.Cmd.Error.GetError() != pb.ServerError_ProducerBlockedQuotaExceededException ||
		f.Cmd.Error.GetMessage() != "refused producer" {
		t.Fatalf("refused PRODUCER answered %s %v", f.Type, f.Cmd.Error)
	}
	st, err := topicStats(tb.Broker, ctxT(t), topic)
	if err != nil || st.MsgInCounter != 1 {
		t.Fatalf("stored %d messages (%v), want 1", st.MsgInCounter, err)
	}
}

// quotaFunc is a Quota that refuses producers while its SENDs are
// refused.
type quotaFunc func() (bool, *SendError)

func (f quotaFunc) AdmitSend() (bool, *SendError) { return f() }
func (f quotaFunc) AdmitProducer() *SendError {
	if _, e := f(); e != nil {
		return &SendError{Code: pb.ServerError_ProducerBlockedQuotaExceededException, Msg: "refused producer"}
	}
	return nil
}

// countingLimiter records what is counted against it and owes debt
// until its release.
type countingLimiter struct {
	mu     sync.Mutex
	msgs   int
	bytes  int
	takes  int
	debt   time.Duration // returned by the next Take, then 0
	closed atomic.Bool   // Wait reports a debt while closed
}

func (l *countingLimiter) Take(_ time.Time, msgs, bytes int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs += msgs
	l.bytes += bytes
	l.takes++
	d := l.debt
	l.debt = 0
	return d
}

func (l *countingLimiter) Wait(time.Time) time.Duration {
	if l.closed.Load() {
		return 20 * time.Millisecond
	}
	return 0
}

func (l *countingLimiter) Budget(time.Time) int {
	if l.closed.Load() {
		return 0
	}
	return math.MaxInt
}

func (l *countingLimiter) counted() (takes, msgs, bytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.takes, l.msgs, l.bytes
}

// TestPublishLimiterPausesReads: every SEND is counted on the publish
// limiter (messages, payload bytes); a SEND that leaves it in debt
// stops the connection's reads for the debt (the next frame waits) and
// is counted in publishRateLimitedTimes.
func TestPublishLimiterPausesReads(t *testing.T) {
	lim := &countingLimiter{}
	tb := startLimited(t, &limitsFeature{limits: func(Topic) *Limits { return &Limits{Publish: lim} }})
	topic := newTopicName("publish-limit")
	r := dialRaw(t, tb, true)
	pid := r.producer(topic)
	e := testEntry(0, "x") // as sendOK sends
	r.sendOK(pid, 0)
	const debt = 300 * time.Millisecond
	lim.mu.Lock()
	lim.debt = debt
	lim.mu.Unlock()
	start := time.Now()
	r.sendOK(pid, 1)
	r.ping() // read after the pause
	if d := time.Since(start); d < debt {
		t.Fatalf("the frame after a SEND in debt was read after %v, want at least %v", d, debt)
	}
	takes, msgs, bytes := lim.counted()
	if takes != 2 || msgs != 2 || bytes != 2*len(e) {
		t.Fatalf("counted %d takes, %d messages, %d bytes; want 2, 2, %d", takes, msgs, bytes, 2*len(e))
	}
	st, err := topicStats(tb.Broker, ctxT(t), topic)
	if err != nil || st.PublishRateLimitedTimes != 1 {
		t.Fatalf("publishRateLimitedTimes %d (%v), want 1", st.PublishRateLimitedTimes, err)
	}
}

// TestDispatchLimiters: a subscription dispatches nothing while its
// topic's or its own limiter is in debt, and resumes by itself once they
// allow; what it sends is counted on both. Every subscription gets its
// own limiter from Limits.Subscription: those loaded with the topic,
// those created by SUBSCRIBE and by the admin API, and all of them again
// when the limits are set anew.
func TestDispatchLimiters(t *testing.T) {
	topicLim := &countingLimiter{}
	var mu sync.Mutex
	subLims := map[string]*countingLimiter{}
	asked := map[string]int{}
	limits := func(Topic) *Limits {
		return &Limits{Dispatch: topicLim, Subscription: func(name string) Limiter {
			mu.Lock()
			defer mu.Unlock()
			asked[name]++
			if subLims[name] == nil {
				subLims[name] = &countingLimiter{}
			}
			return subLims[name]
		}}
	}
	tb := startLimited(t, &limitsFeature{limits: limits})
	topic := newTopicName("dispatch-limit")
	if err := tb.Registry().Register(ctxT(t), topic, topicreg.TopicNode{}); err != nil {
		t.Fatal(err)
	}
	if err := createSubscription(tb.Broker, ctxT(t), topic, "admin", earliest); err != nil {
		t.Fatal(err)
	}
	p := dialRaw(t, tb, true)
	pid := p.producer(topic)
	entries := mixedEntries(4)[:3]
	p.sendAll(pid, 0, entries)
	p.receipts(0, len(entries))

	topicLim.closed.Store(true)
	c := dialRaw(t, tb, true)
	c.subscribeEarliest(topic, "s")
	c.ping()
	mu.Lock()
	sl := subLims["s"]
	mu.Unlock()
	if sl == nil {
		t.Fatal("the SUBSCRIBEd subscription has no limiter of its own")
	}
	if takes, _, _ := topicLim.counted(); takes != 0 {
		t.Fatalf("%d entries dispatched while the topic's limiter was in debt", takes)
	}
	topicLim.closed.Store(false)
	c.expectMessages(entries)
	want := 0
	for _, e := range entries {
		want += len(e)
	}
	waitUntil(t, "dispatch counted", func() bool { _, m, b := sl.counted(); return m == len(entries) && b == want })
	if _, m, b := topicLim.counted(); m != len(entries) || b != want {
		t.Fatalf("topic limiter counted %d messages, %d bytes; want %d, %d", m, b, len(entries), want)
	}

	// The subscription's own limiter stops it too. A limiter is asked
	// before a read, as Pulsar does: the dispatch that sent the three
	// may still be between its check and a read that would find the
	// next entry. A stats call runs on the subscription's loop after it.
	if _, err := topicStats(tb.Broker, ctxT(t), topic); err != nil {
		t.Fatal(err)
	}
	sl.closed.Store(true)
	p.sendAll(pid, 3, entries[:1])
	p.receipts(3, 1)
	c.ping()
	if _, m, _ := sl.counted(); m != len(entries) {
		t.Fatalf("dispatched while the subscription's limiter was in debt: %d", m)
	}
	sl.closed.Store(false)
	c.expectMessages(entries[:1])

	v, err := tb.Topic(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	v.SetLimits(limits(v))
	mu.Lock()
	defer mu.Unlock()
	if asked["admin"] != 2 || asked["s"] != 2 {
		t.Fatalf("limiters asked %v, want each subscription twice (created, limits set)", asked)
	}
}

// TestSubscribeLimit: Limits.Subscribe sees each SUBSCRIBE's consumer
// identity (name@host); false refuses it with TooManyRequests.
func TestSubscribeLimit(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	tb := startLimited(t, &limitsFeature{limits: func(Topic) *Limits {
		return &Limits{Subscribe: func(id string) bool {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, id)
			return len(seen) == 1
		}}
	}})
	topic := newTopicName("subscribe-limit")
	for i, want := range []pb.BaseCommand_Type{pb.BaseCommand_SUCCESS, pb.BaseCommand_ERROR} {
		r := dialRaw(t, tb, true)
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
			Topic: ptr(topic), Subscription: ptr("s"), SubType: pb.CommandSubscribe_Shared.Enum(),
			ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(1)), ConsumerName: ptr("c"),
		}})
		f := r.next()
		if f.Type != want || (want == pb.BaseCommand_ERROR && f.Cmd.Error.GetError() != pb.ServerError_TooManyRequests) {
			t.Fatalf("SUBSCRIBE %d answered %s %v, want %s", i, f.Type, f.Cmd.Error, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "c@127.0.0.1" {
		t.Fatalf("identities %q, want c@127.0.0.1 twice", seen)
	}
}

// TestSecondPolicyWatcherRefused: one feature watches the policies.
func TestSecondPolicyWatcherRefused(t *testing.T) {
	b, err := New(brokerconf.Config{}, Deps{Metadata: memmeta.New(), OpenLedger: func(context.Context, string) (storage.ManagedLedger, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := followPolicies(b); err != nil {
		t.Fatal(err)
	}
	if err := followPolicies(b); err == nil || !strings.Contains(err.Error(), "already watched") {
		t.Fatalf("second watcher: %v", err)
	}
}
