package brokerconf

import (
	"errors"
	"testing"
	"time"
)

func TestHistoryConfig(t *testing.T) {
	for _, c := range []struct {
		interval time.Duration
		length   int
		wantLen  int
		bad      bool
	}{
		{0, 0, 180, false},
		{time.Second, 0, 900, false},
		{time.Minute, 0, 15, false},
		{time.Hour, 0, 2, false},
		{-1, 0, 0, false}, // off
		{time.Millisecond, 0, 0, true},
		{time.Second, MaxHistoryLength + 1, 0, true},
	} {
		cfg := Config{HistoryInterval: c.interval, HistoryLength: c.length}
		cfg.EnsureDefaults()
		err := cfg.Validate()
		if (err != nil) != c.bad {
			t.Errorf("interval %s length %d: err %v, want error %v", c.interval, c.length, err, c.bad)
		}
		if !c.bad && cfg.HistoryLength != c.wantLen {
			t.Errorf("interval %s: length %d, want %d", c.interval, cfg.HistoryLength, c.wantLen)
		}
	}
}

// TestDefaultsValid: the zero value plus EnsureDefaults is valid, with
// the documented defaults; each broken field is refused with ErrInvalid.
func TestDefaultsValid(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if c.ServiceAddr != ":6650" || c.HTTPAddr != ":8080" || c.MaxMessageSize != 5<<20 ||
		c.IdleTimeout != 75*time.Second || c.MaxUnackedPerConsumer != DefaultMaxUnackedPerConsumer ||
		c.DeleteInactiveTopicsMaxInactiveDuration != c.DeleteInactiveTopicsFrequency || c.Logger == nil {
		t.Fatalf("defaults: %+v", c)
	}
	for name, breakIt := range map[string]func(*Config){
		"message size":   func(c *Config) { c.MaxMessageSize = 512 },
		"outbound":       func(c *Config) { c.MaxOutboundBytes = c.MaxMessageSize - 1 },
		"dispatch batch": func(c *Config) { c.DispatchBatch = -1 },
		"rate":           func(c *Config) { c.DispatchThrottlingRatePerReplicatorInByte = -1 },
		"inactive mode":  func(c *Config) { c.DeleteInactiveTopicsMode = "never" },
		"interval":       func(c *Config) { c.StatsUpdateInterval = -time.Second },
	} {
		c := Config{}
		c.EnsureDefaults()
		breakIt(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
}

// TestPolicyDefaults: the configuration's policy layer carries its rate,
// inactive-topic and unacked settings in policy's terms (negative
// unacked limits, unlimited, are policy's 0).
func TestPolicyDefaults(t *testing.T) {
	c := Config{DisableAutoTopicCreation: true, MaxPublishRatePerTopicInMessages: 10,
		DispatchThrottlingRatePerSubscriptionInByte: 1 << 20, MaxUnackedPerConsumer: -1,
		DeleteInactiveTopicsMaxInactiveDuration: 90 * time.Second, SubscribeThrottlingRatePerConsumer: 3}
	c.EnsureDefaults()
	d := c.PolicyDefaults()
	switch {
	case d.AutoTopicCreation || d.Cluster != "standalone" || d.MaxMessageSize != 5<<20:
		t.Fatalf("creation/cluster/size: %+v", d)
	case d.PublishRate.PublishThrottlingRateInMsg != 10 || d.SubscriptionDispatchRate.DispatchThrottlingRateInByte != 1<<20 ||
		d.SubscriptionDispatchRate.RatePeriodInSecond != 1:
		t.Fatalf("rates: %+v %+v", d.PublishRate, d.SubscriptionDispatchRate)
	case d.SubscribeRate.SubscribeThrottlingRatePerConsumer != 3 || d.SubscribeRate.RatePeriodInSecond != 30:
		t.Fatalf("subscribe rate: %+v", d.SubscribeRate)
	case !d.InactiveTopic.DeleteWhileInactive || d.InactiveTopic.MaxInactiveDurationSeconds != 90 ||
		d.InactiveTopic.InactiveTopicDeleteMode != "delete_when_no_subscriptions":
		t.Fatalf("inactive topics: %+v", d.InactiveTopic)
	case d.MaxUnackedPerConsumer != 0 || d.MaxUnackedPerSubscription != DefaultMaxUnackedPerSubscription:
		t.Fatalf("unacked: %d %d", d.MaxUnackedPerConsumer, d.MaxUnackedPerSubscription)
	}
}
