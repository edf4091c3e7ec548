package policy

import (
	"context"
	"math"
	"sync"
	"testing"
)

func TestResolveTopicLayerAndRates(t *testing.T) {
	d := Defaults{Cluster: "c1", PublishRate: PublishRate{PublishThrottlingRateInMsg: 10},
		InactiveTopic:                 InactiveTopicPolicies{DeleteWhileInactive: true, MaxInactiveDurationSeconds: 60, InactiveTopicDeleteMode: DeleteWhenNoSubscriptions},
		SubscriptionExpirationMinutes: 7}
	ns := &Policies{
		PublishMaxMessageRate: map[string]PublishRate{"c1": {PublishThrottlingRateInMsg: 100}, "other": {PublishThrottlingRateInMsg: 5}},
		TopicDispatchRate:     map[string]DispatchRate{"c1": {DispatchThrottlingRateInMsg: 50, RatePeriodInSecond: 1}},
		ClusterSubscribeRate:  map[string]SubscribeRate{"elsewhere": {SubscribeThrottlingRatePerConsumer: 3, RatePeriodInSecond: 30}},
		MaxProducersPerTopic:  ptr(4),
	}
	tp := &TopicPolicies{PublishRate: &PublishRate{PublishThrottlingRateInMsg: 7}, MaxProducerPerTopic: ptr(1)}
	r := Resolve(d, tp.Layer("c1"), ns)
	if r.PublishRate.PublishThrottlingRateInMsg != 7 || r.MaxProducers != 1 {
		t.Fatalf("topic layer lost: %+v", r)
	}
	if r.DispatchRate.DispatchThrottlingRateInMsg != 50 {
		t.Fatalf("namespace dispatch rate of this cluster not applied: %+v", r.DispatchRate)
	}
	// A namespace written under another cluster name: its only entry.
	if r.SubscribeRate.SubscribeThrottlingRatePerConsumer != 3 {
		t.Fatalf("single-entry map not used: %+v", r.SubscribeRate)
	}
	if !r.InactiveTopic.DeleteWhileInactive || r.SubscriptionExpirationMinutes != 7 {
		t.Fatalf("broker defaults lost: %+v", r)
	}
	r = Resolve(d, (*TopicPolicies)(nil).Layer("c1"), ns)
	if r.PublishRate.PublishThrottlingRateInMsg != 100 || r.MaxProducers != 4 {
		t.Fatalf("namespace values not applied without a topic layer: %+v", r)
	}
	if r = Resolve(d); r.PublishRate.PublishThrottlingRateInMsg != 10 {
		t.Fatalf("broker default publish rate lost: %+v", r.PublishRate)
	}
}

func TestRateValidationBounds(t *testing.T) {
	for _, p := range []PublishRate{{-2, 0}, {0, -2}, {math.MaxInt32 + 1, 0}} {
		if p.Validate() == nil {
			t.Errorf("publish rate %+v accepted", p)
		}
	}
	if (PublishRate{math.MaxInt32, math.MaxInt64}).Validate() != nil {
		t.Error("largest publish rate refused")
	}
	for _, d := range []DispatchRate{{DispatchThrottlingRateInMsg: -2}, {RatePeriodInSecond: -1}, {RatePeriodInSecond: 86401}} {
		if d.Normalize() == nil {
			t.Errorf("dispatch rate %+v accepted", d)
		}
	}
	d := DispatchRate{DispatchThrottlingRateInMsg: 10}
	if d.Normalize() != nil || d.RatePeriodInSecond != 1 {
		t.Errorf("default period not filled: %+v", d)
	}
	if m, _ := (DispatchRate{DispatchThrottlingRateInMsg: 10, RatePeriodInSecond: 5}).PerSecond(); m != 2 {
		t.Errorf("10 per 5 s = %v/s", m)
	}
	s := SubscribeRate{SubscribeThrottlingRatePerConsumer: 1}
	if s.Normalize() != nil || s.RatePeriodInSecond != 30 {
		t.Errorf("default subscribe period not filled: %+v", s)
	}
	for _, p := range []InactiveTopicPolicies{{InactiveTopicDeleteMode: "sometimes"}, {MaxInactiveDurationSeconds: -1}} {
		if p.Normalize() == nil {
			t.Errorf("inactive policy %+v accepted", p)
		}
	}
}

func TestTopicPoliciesStore(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.CreateTenant(ctx, "t", TenantInfo{}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateNamespace(ctx, "t/n", nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notified []string
	s.Subscribe(func(ns string) { mu.Lock(); notified = append(notified, ns); mu.Unlock() })
	key := TopicKey("persistent", "t", "n", "x")
	if tp, err := s.GetTopic(ctx, key); err != nil || tp != nil {
		t.Fatalf("unset topic policies = %+v, %v", tp, err)
	}
	if err := s.UpdateTopic(ctx, key, func(tp *TopicPolicies) error { tp.MessageTTLInSeconds = ptr(9); return nil }); err != nil {
		t.Fatal(err)
	}
	tp, err := s.GetTopic(ctx, key)
	if err != nil || tp == nil || *tp.MessageTTLInSeconds != 9 {
		t.Fatalf("after update: %+v, %v", tp, err)
	}
	mu.Lock()
	if len(notified) != 1 || notified[0] != "t/n" {
		t.Fatalf("subscribers told %v, want [t/n]", notified)
	}
	mu.Unlock()
	// A refused mutation changes nothing.
	if err := s.UpdateTopic(ctx, key, func(tp *TopicPolicies) error { tp.MessageTTLInSeconds = ptr(1); return errBad }); err == nil {
		t.Fatal("refused mutation reported success")
	}
	if tp, _ := s.GetTopic(ctx, key); *tp.MessageTTLInSeconds != 9 {
		t.Fatal("refused mutation was stored")
	}
	// Emptied: the document goes away.
	if err := s.UpdateTopic(ctx, key, func(tp *TopicPolicies) error { tp.MessageTTLInSeconds = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.meta.Exists(ctx, topicNode(key)); ok {
		t.Fatal("empty topic policies document kept")
	}
	if tp, err := s.GetTopic(ctx, key); err != nil || tp != nil {
		t.Fatalf("after emptying: %+v, %v", tp, err)
	}
}

type badErr struct{}

func (badErr) Error() string { return "bad" }

var errBad = badErr{}
