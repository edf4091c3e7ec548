package enforcement_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/enforcement"
	"github.com/magnetar-mq/magnetar/policy"
)

// The kit registers the Enforcer on every broker it starts (as the
// binary does); tests add features of their own with Options.Features.

// onLoad is a feature that runs fn while a topic loads (after the
// Enforcer's LoadTopic, before the topic is visible).
type onLoad struct{ fn func(broker.Topic) }

func (onLoad) Name() string { return "test load hook" }
func (f onLoad) LoadTopic(_ context.Context, t broker.Topic) error {
	f.fn(t)
	return nil
}
func (onLoad) CloseTopic(broker.Topic) {}

// TestPolicyChangeDuringTopicLoad changes the namespace's policies in
// the window where a loading topic has resolved its policy but is not
// yet listed among the loaded topics, so the change's notification
// passes it by. The load must still end with the new policy: a TTL is
// applied in place, a retention change reopens the topic with it.
func TestPolicyChangeDuringTopicLoad(t *testing.T) {
	const ns = "public/default"
	cases := []struct {
		name   string
		mutate func(*policy.Policies) error
		check  func(*policy.Resolved) bool
	}{
		{"ttl", func(p *policy.Policies) error {
			ttl := 7
			p.MessageTTLInSeconds = &ttl
			return nil
		}, func(r *policy.Resolved) bool { return r.MessageTTLSeconds == 7 }},
		{"retention", func(p *policy.Policies) error {
			p.RetentionPolicies = &policy.RetentionPolicies{RetentionTimeInMinutes: 11, RetentionSizeInMB: 13}
			return nil
		}, func(r *policy.Resolved) bool {
			return r.Retention != nil && r.Retention.RetentionTimeInMinutes == 11 && r.Retention.RetentionSizeInMB == 13
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic := brokertest.Topic("polrace-" + c.name)
			var fired atomic.Int64
			b := brokertest.Start(t, brokertest.Options{Features: func(br *broker.Broker) error {
				return br.Use(onLoad{func(tv broker.Topic) {
					if tv.Name() != topic || fired.Add(1) > 1 {
						return
					}
					if err := br.Policies().Update(context.Background(), ns, c.mutate); err != nil {
						t.Error(err)
					}
				}})
			}})
			ctx := brokertest.Ctx(t)
			if err := b.Admin().Topics.CreateTopic(ctx, topic); err != nil {
				t.Fatal(err)
			}
			tv, err := b.Topic(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			if n := fired.Load(); n < 1 {
				t.Fatal("the load hook did not run")
			}
			if !c.check(tv.EffectivePolicy()) {
				t.Fatalf("topic kept the policies resolved before the change: %+v", *tv.EffectivePolicy())
			}
			if tv.Closed() {
				t.Fatal("the load returned a closed topic")
			}
			// The topic the broker lists is the one returned.
			again, err := b.Topic(ctx, topic)
			if err != nil || again != tv {
				t.Fatalf("loaded topic %v (%v), returned %v", again, err, tv)
			}
		})
	}
}

// sysSub keeps a subscription "sys" of its own on every persistent
// topic, as compaction keeps its cursor.
type sysSub struct{}

func (sysSub) Name() string                  { return "test system subscription" }
func (sysSub) SystemSubscriptions() []string { return []string{"sys"} }
func (sysSub) CloseTopic(broker.Topic)       {}
func (sysSub) LoadTopic(_ context.Context, t broker.Topic) error {
	if !t.Persistent() {
		return nil
	}
	_, err := t.OpenSubscription("sys")
	return err
}

// TestQuotaLeavesSystemSubscriptions: a feature's own subscription with
// a backlog neither counts as the slowest consumer (a storage quota is
// not exceeded by it, eviction does not skip it) nor expires by TTL.
func TestQuotaLeavesSystemSubscriptions(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{Features: func(br *broker.Broker) error { return br.Use(sysSub{}) }})
	topic := brokertest.Topic("sys")
	cl := b.Client(t)
	cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "user", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	brokertest.SendAll(t, brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true}), 3, brokertest.Msg)
	for _, m := range brokertest.Receive(t, cons, 2) {
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	tv, err := b.Topic(brokertest.Ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	backlogs := func() map[string]int64 {
		out := map[string]int64{}
		for _, s := range tv.Subscriptions() {
			out[s.Name()], _ = s.Backlog()
		}
		return out
	}
	brokertest.WaitFor(t, "the acks", func() bool { bl := backlogs(); return bl["user"] == 1 && bl["sys"] == 3 })
	slow, found, _, avg := enforcement.Slowest(tv)
	if !found || slow.Name() != "user" {
		t.Fatalf("slowest subscription %q (found %v), want user", slow.Name(), found)
	}
	pol := &policy.Resolved{BacklogQuotas: map[string]policy.BacklogQuota{
		policy.QuotaStorage: {LimitSize: avg + 1, Policy: policy.QuotaEviction}}}
	if enforcement.Exceeded(tv, pol) {
		t.Fatal("a quota over one entry is exceeded by the feature's subscription")
	}
	pol.BacklogQuotas[policy.QuotaStorage] = policy.BacklogQuota{LimitSize: 1, Policy: policy.QuotaEviction}
	enforcement.ApplyEviction(tv, pol)
	if got := backlogs(); got["user"] != 0 || got["sys"] != 3 {
		t.Fatalf("backlogs after eviction %v, want user 0, sys 3", got)
	}
	for _, s := range tv.Subscriptions() {
		if err := tv.ExpireMessages(s, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := backlogs(); got["sys"] != 3 {
		t.Fatalf("the feature's subscription expired: backlogs %v", got)
	}
}

// TestTTLExpiresOnTheCheck: a namespace TTL set on a loaded topic is
// applied by the periodic check without any admin call: the backlog of
// messages older than the TTL is acknowledged and counted as expired.
func TestTTLExpiresOnTheCheck(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	topic := brokertest.Topic("ttl")
	cl := b.Client(t)
	brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	brokertest.SendAll(t, brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true}), 5, brokertest.Msg)
	ttl := 1
	if err := b.Policies().Update(brokertest.Ctx(t), "public/default", func(p *policy.Policies) error {
		p.MessageTTLInSeconds = &ttl
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	brokertest.WaitFor(t, "expiry", func() bool {
		st, err := b.Admin().Reads.TopicStats(brokertest.Ctx(t), topic)
		return err == nil && st.Subscriptions["s"].MsgBacklog == 0 && st.Subscriptions["s"].TotalMsgExpired == 5
	})
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("expired after %v: sooner than the TTL allows", d)
	}
}
