package dynconfig

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/policy"
)

func openStore(t *testing.T) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "metadata.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestUpdateAppliesOnEveryBrokerAndAfterRestart: an override written
// through one broker's Config changes that broker's defaults before
// Update returns (and notifies the policy store's subscribers), reaches
// another broker over the same store through its watch, and applies to
// a broker started afterwards; Delete brings the file's value back.
func TestUpdateAppliesOnEveryBrokerAndAfterRestart(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	polA, polB := policy.NewStore(st, "c"), policy.NewStore(st, "c")
	var refreshed atomic.Int32
	polA.Subscribe(func(ns string) {
		if ns == "" {
			refreshed.Add(1)
		}
	})
	a := New(st, polA, Options{Static: map[string]string{"dispatchThrottlingRatePerTopicInMsg": "0", "clusterName": "c"}})
	b := New(st, polB, Options{})
	for _, c := range []*Config{a, b} {
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	base := policy.Defaults{DispatchRate: policy.DispatchRate{DispatchThrottlingRateInMsg: 5}}
	if err := a.Update(ctx, "dispatchThrottlingRatePerTopicInMsg", "777"); err != nil {
		t.Fatal(err)
	}
	if got := polA.OverlayDefaults(base).DispatchRate.DispatchThrottlingRateInMsg; got != 777 {
		t.Fatalf("broker A's default after Update: %d", got)
	}
	if refreshed.Load() == 0 {
		t.Fatal("loaded topics were not told to resolve again")
	}
	deadline := time.Now().Add(10 * time.Second)
	for polB.OverlayDefaults(base).DispatchRate.DispatchThrottlingRateInMsg != 777 {
		if time.Now().After(deadline) {
			t.Fatal("broker B never applied the override")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rt := a.Runtime(); rt["dispatchThrottlingRatePerTopicInMsg"] != "777" || rt["clusterName"] != "c" {
		t.Fatalf("runtime: %v", rt)
	}
	// A broker started later reads it.
	polC := policy.NewStore(st, "c")
	c := New(st, polC, Options{})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := polC.OverlayDefaults(base).DispatchRate.DispatchThrottlingRateInMsg; got != 777 {
		t.Fatalf("restarted broker's default: %d", got)
	}
	if err := a.Delete(ctx, "dispatchThrottlingRatePerTopicInMsg"); err != nil {
		t.Fatal(err)
	}
	if got := polA.OverlayDefaults(base).DispatchRate.DispatchThrottlingRateInMsg; got != 5 {
		t.Fatalf("after Delete: %d, want the configuration's 5", got)
	}
	if v, _ := a.Values(ctx); len(v) != 0 {
		t.Fatalf("overrides after Delete: %v", v)
	}
}

// TestRefusals: keys that are not dynamic (or unknown) and bad values.
func TestRefusals(t *testing.T) {
	st := openStore(t)
	c := New(st, policy.NewStore(st, "c"), Options{})
	ctx := context.Background()
	for _, k := range []string{"maxUnackedMessagesPerConsumer", "clusterName", "no-such-key"} {
		if err := c.Update(ctx, k, "1"); !errors.Is(err, ErrNotDynamic) {
			t.Errorf("Update %s: %v", k, err)
		}
		if err := c.Delete(ctx, k); !errors.Is(err, ErrNotDynamic) {
			t.Errorf("Delete %s: %v", k, err)
		}
	}
	for k, v := range map[string]string{
		"dispatchThrottlingRatePerTopicInMsg":    "lots",
		"subscribeRatePeriodPerConsumerInSecond": "0",
		"brokerDeleteInactiveTopicsMode":         "sometimes",
		"maxPublishRatePerTopicInMessages":       "99999999999999",
		"maxTopicsPerNamespace":                  "ten",
	} {
		if err := c.Update(ctx, k, v); !errors.Is(err, ErrBadValue) {
			t.Errorf("Update %s=%s: %v", k, v, err)
		}
	}
	// A negative rate is "no limit", as in the configuration file.
	if err := c.Update(ctx, "maxPublishRatePerTopicInBytes", "-1"); err != nil {
		t.Fatal(err)
	}
	d := policy.Defaults{PublishRate: policy.PublishRate{PublishThrottlingRateInByte: 10}}
	c.overlay(&d)
	if d.PublishRate.PublishThrottlingRateInByte != 0 {
		t.Fatalf("-1 applied as %d", d.PublishRate.PublishThrottlingRateInByte)
	}
}

// TestFlagsReadAsPulsarReadsThem: a boolean key takes any value, as
// Pulsar's (Java's Boolean.valueOf): "true" in any case is true, any other
// value false; the value is kept as given.
func TestFlagsReadAsPulsarReadsThem(t *testing.T) {
	st := openStore(t)
	c := New(st, policy.NewStore(st, "c"), Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		value string
		allow bool
	}{{"TRUE", true}, {"true", true}, {"false", false}, {`{"key/123":"https://example.com/"}`, false}, {"yes", false}} {
		if err := c.Update(ctx, "allowAutoSubscriptionCreation", tc.value); err != nil {
			t.Fatalf("%s: %v", tc.value, err)
		}
		if err := c.Update(ctx, "allowAutoTopicCreation", tc.value); err != nil {
			t.Fatalf("%s: %v", tc.value, err)
		}
		d := policy.Defaults{AutoTopicCreation: !tc.allow}
		d.DisableAutoSubscriptionCreation = tc.allow
		c.overlay(&d)
		if d.DisableAutoSubscriptionCreation == tc.allow || d.AutoTopicCreation != tc.allow {
			t.Errorf("%s applied as auto-subscription %v, auto-topic %v; want %v", tc.value, !d.DisableAutoSubscriptionCreation, d.AutoTopicCreation, tc.allow)
		}
		if v, _ := c.Values(ctx); v["allowAutoSubscriptionCreation"] != tc.value {
			t.Errorf("stored %q, want %q", v["allowAutoSubscriptionCreation"], tc.value)
		}
	}
}
