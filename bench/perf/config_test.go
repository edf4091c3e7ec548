package perf

import (
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/pulsarclient"
)

func TestProduceConfigValidate(t *testing.T) {
	ok := func() ProduceConfig {
		c := ProduceConfig{Common: Common{Topics: []string{"t"}}}
		c.EnsureDefaults()
		return c
	}
	good := ok()
	if err := good.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if good.ServiceURL != "pulsar://127.0.0.1:6650" || good.Size != 1024 || good.MaxPending != 1000 {
		t.Fatalf("defaults = %+v", good)
	}
	bad := map[string]func(*ProduceConfig){
		"no topic":          func(c *ProduceConfig) { c.Topics = nil },
		"empty topic":       func(c *ProduceConfig) { c.Topics = []string{" "} },
		"bad url":           func(c *ProduceConfig) { c.ServiceURL = "http://x" },
		"negative rate":     func(c *ProduceConfig) { c.Rate = -1 },
		"zero size":         func(c *ProduceConfig) { c.Size = -5 },
		"bad compression":   func(c *ProduceConfig) { c.Compression = "brotli" },
		"partitions no url": func(c *ProduceConfig) { c.Partitions = 4 },
		"negative msgs":     func(c *ProduceConfig) { c.NumMessages = -1 },
		"negative pending":  func(c *ProduceConfig) { c.MaxPending = -1 },
	}
	for name, mut := range bad {
		c := ok()
		mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestConsumeConfigValidate(t *testing.T) {
	ok := func() ConsumeConfig {
		c := ConsumeConfig{Common: Common{Topics: []string{"a", "b"}}}
		c.EnsureDefaults()
		return c
	}
	good := ok()
	if err := good.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	shared := ok()
	shared.SubscriptionType, shared.NumConsumers = "shared", 4
	if err := shared.Validate(); err != nil {
		t.Fatalf("shared with 4 consumers: %v", err)
	}
	bad := map[string]func(*ConsumeConfig){
		"exclusive with 2":  func(c *ConsumeConfig) { c.NumConsumers = 2 },
		"bad type":          func(c *ConsumeConfig) { c.SubscriptionType = "broadcast" },
		"bad position":      func(c *ConsumeConfig) { c.Position = "middle" },
		"zero queue":        func(c *ConsumeConfig) { c.ReceiverQueueSize = -1 },
		"negative idle":     func(c *ConsumeConfig) { c.IdleTimeout = -1 },
		"negative duration": func(c *ConsumeConfig) { c.Duration = -1 },
	}
	for name, mut := range bad {
		c := ok()
		mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestParsers(t *testing.T) {
	if v, _ := ParseCompression("ZSTD"); v != pulsarclient.ZSTD {
		t.Errorf("zstd -> %v", v)
	}
	if v, _ := ParseSubscriptionType("Key-Shared"); v != pulsarclient.KeyShared {
		t.Errorf("key-shared -> %v", v)
	}
	if v, _ := ParsePosition("earliest"); v != pulsarclient.SubscriptionPositionEarliest {
		t.Errorf("earliest -> %v", v)
	}
	for in, want := range map[string]string{
		"t":                             "persistent/public/default/t",
		"persistent://a/b/c":            "persistent/a/b/c",
		"non-persistent://public/ns/x1": "non-persistent/public/ns/x1",
	} {
		if got, err := adminTopicPath(in); err != nil || got != want {
			t.Errorf("adminTopicPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"a/b", "persistent://a//c"} {
		if _, err := adminTopicPath(in); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("adminTopicPath(%q) = %v, want ErrInvalidConfig", in, err)
		}
	}
}
