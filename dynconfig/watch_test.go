package dynconfig

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/policy"
)

type call struct {
	v   string
	set bool
}

// TestWatch: a watcher hears an override stored before it registered,
// every change made through this Config or another over the same store,
// and the removal; once stopped it hears nothing.
func TestWatch(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	a := New(st, policy.NewStore(st, "c"), Options{})
	b := New(st, policy.NewStore(st, "c"), Options{})
	for _, c := range []*Config{a, b} {
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	if err := a.Update(ctx, "dispatcherMaxReadBatchSize", "7"); err != nil {
		t.Fatal(err)
	}
	calls := make(chan call, 16)
	stop := a.Watch("dispatcherMaxReadBatchSize", func(v string, set bool) { calls <- call{v, set} })
	next := func() call {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no call")
			return call{}
		}
	}
	if c := next(); c != (call{"7", true}) {
		t.Fatalf("at Watch: %+v", c)
	}
	// Another key's change is not this watcher's.
	if err := a.Update(ctx, "maxTenants", "3"); err != nil {
		t.Fatal(err)
	}
	if err := b.Update(ctx, "dispatcherMaxReadBatchSize", "9"); err != nil {
		t.Fatal(err)
	}
	if c := next(); c != (call{"9", true}) {
		t.Fatalf("after another broker's update: %+v", c)
	}
	if err := a.Delete(ctx, "dispatcherMaxReadBatchSize"); err != nil {
		t.Fatal(err)
	}
	if c := next(); c != (call{"", false}) {
		t.Fatalf("after Delete: %+v", c)
	}
	stop()
	if err := a.Update(ctx, "dispatcherMaxReadBatchSize", "11"); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-calls:
		t.Fatalf("call after stop: %+v", c)
	default:
	}
}

// TestEveryPulsarDynamicKeyAccepted: a key Pulsar marks dynamic is
// listed and accepted with a value of its type, stored and answered by
// Values and Runtime, whether or not Magnetar reads it (except the ones
// Magnetar reads only at start); a value of another type is refused.
func TestEveryPulsarDynamicKeyAccepted(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	c := New(st, policy.NewStore(st, "c"), Options{})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	names := c.Names()
	for _, k := range []string{"brokerShutdownTimeoutMs", "dispatcherMaxReadBatchSize", "loadBalancerSheddingIntervalMinutes", "maxNumPartitionsPerPartitionedTopic", "brokerDeleteInactiveTopicsFrequencySeconds"} {
		if !slices.Contains(names, k) {
			t.Fatalf("%s not listed", k)
		}
	}
	good := map[kind]string{kBool: "false", kInt: "5", kLong: "5", kDouble: "0.5", kString: "x", kList: "a,b"}
	for _, s := range pulsarDynamic {
		v, ok := good[s.kind]
		if s.kind == kEnum {
			v, ok = enums[s.name][0], true
		}
		if !ok {
			t.Fatalf("%s: kind %d has no sample", s.name, s.kind)
		}
		err := c.Update(ctx, s.name, v)
		if ck, ok := checks[s.name]; ok && errors.Is(ck(v), errStartOnly) {
			if !errors.Is(err, ErrNotDynamic) {
				t.Errorf("%s (start only): %v", s.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s=%s: %v", s.name, v, err)
			continue
		}
		if s.kind == kInt || s.kind == kLong || s.kind == kDouble {
			if err := c.Update(ctx, s.name, "many"); !errors.Is(err, ErrBadValue) {
				t.Errorf("%s=many: %v", s.name, err)
			}
		}
	}
	vals, err := c.Values(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if vals["brokerShutdownTimeoutMs"] != "5" || c.Runtime()["brokerShutdownTimeoutMs"] != "5" {
		t.Fatalf("brokerShutdownTimeoutMs not stored: %v", vals["brokerShutdownTimeoutMs"])
	}
	for k, v := range map[string]string{
		"dispatcherMaxReadBatchSize":                 "0",
		"brokerDeleteInactiveTopicsFrequencySeconds": "0",
		"loadBalancerSheddingIntervalMinutes":        "0",
		"defaultNumPartitions":                       "0",
		"allowAutoTopicCreationType":                 "both",
		"maxNumPartitionsPerPartitionedTopic":        "3000000000",
	} {
		if err := c.Update(ctx, k, v); !errors.Is(err, ErrBadValue) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	// 0 and negative are Pulsar's "no limit" here.
	for _, v := range []string{"0", "-1"} {
		if err := c.Update(ctx, "maxNumPartitionsPerPartitionedTopic", v); err != nil {
			t.Errorf("maxNumPartitionsPerPartitionedTopic=%s: %v", v, err)
		}
	}
}

// TestInactiveDurationFollowsFrequency: when the configuration leaves
// the maximum inactivity unset, it is the check frequency in force, an
// overridden one too (Pulsar's getter); an override of its own wins.
func TestInactiveDurationFollowsFrequency(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	c := New(st, policy.NewStore(st, "c"), Options{InactiveFollowsFrequency: true})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	max := func() int {
		d := policy.Defaults{InactiveTopic: policy.InactiveTopicPolicies{MaxInactiveDurationSeconds: 60}}
		c.overlay(&d)
		return d.InactiveTopic.MaxInactiveDurationSeconds
	}
	if err := c.Update(ctx, "brokerDeleteInactiveTopicsFrequencySeconds", "5"); err != nil {
		t.Fatal(err)
	}
	if got := max(); got != 5 {
		t.Fatalf("max inactivity %d, want the new frequency 5", got)
	}
	if err := c.Update(ctx, "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds", "30"); err != nil {
		t.Fatal(err)
	}
	if got := max(); got != 30 {
		t.Fatalf("max inactivity %d, want its own override 30", got)
	}
	d := New(st, policy.NewStore(st, "c"), Options{})
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Delete(ctx, "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds"); err != nil {
		t.Fatal(err)
	}
	x := policy.Defaults{InactiveTopic: policy.InactiveTopicPolicies{MaxInactiveDurationSeconds: 60}}
	d.overlay(&x)
	if x.InactiveTopic.MaxInactiveDurationSeconds != 60 {
		t.Fatalf("a configuration that sets it keeps its own: %d", x.InactiveTopic.MaxInactiveDurationSeconds)
	}
}

// TestAuditListsEveryKey: docs/dynamic-config.md has a row for every key
// Pulsar marks dynamic, and no other.
func TestAuditListsEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/dynamic-config.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if k, ok := strings.CutPrefix(line, "| `"); ok {
			k, _, _ = strings.Cut(k, "`")
			rows[k] = true
		}
	}
	for _, s := range pulsarDynamic {
		if !rows[s.name] {
			t.Errorf("docs/dynamic-config.md has no row for %s", s.name)
		}
		delete(rows, s.name)
	}
	for k := range rows {
		t.Errorf("docs/dynamic-config.md has a row for %s, which Pulsar does not mark dynamic", k)
	}
}
