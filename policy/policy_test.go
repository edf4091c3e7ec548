package policy

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	meta, err := embedded.Open(filepath.Join(t.TempDir(), "meta"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	return NewStore(meta, "c1")
}

func ptr[T any](v T) *T { return &v }

func TestResolvePrecedence(t *testing.T) {
	d := Defaults{Deduplication: true, AutoTopicCreation: true}
	if r := Resolve(d); !r.Deduplication || !r.AutoCreate || r.MessageTTLSeconds != 0 || r.Retention != nil || r.MaxProducers != 0 {
		t.Fatalf("defaults only: %+v", r)
	}
	ns := &Policies{
		MessageTTLInSeconds:  ptr(60),
		DeduplicationEnabled: ptr(false),
		MaxProducersPerTopic: ptr(3),
		RetentionPolicies:    &RetentionPolicies{RetentionTimeInMinutes: -1, RetentionSizeInMB: 5},
		BacklogQuotaMap:      map[string]BacklogQuota{QuotaStorage: {LimitSize: 10, Policy: QuotaHold}},
		AutoTopicCreationOverride: &AutoTopicCreation{Allow: true, TopicType: "partitioned",
			DefaultNumPartitions: ptr(4)},
	}
	topic := &Policies{MessageTTLInSeconds: ptr(5), MaxConsumersPerTopic: ptr(0)}
	r := Resolve(d, topic, nil, ns)
	if r.MessageTTLSeconds != 5 {
		t.Errorf("TTL %d: the topic layer must win", r.MessageTTLSeconds)
	}
	if r.Deduplication {
		t.Error("namespace dedup=false must override the broker default")
	}
	if r.MaxProducers != 3 || r.MaxConsumers != 0 {
		t.Errorf("limits %d/%d", r.MaxProducers, r.MaxConsumers)
	}
	if r.Retention == nil || r.Retention.RetentionSizeInMB != 5 || r.AutoPartitions != 4 || !r.AutoCreate {
		t.Errorf("resolved %+v", r)
	}
	// The resolved value does not alias the documents.
	ns.BacklogQuotaMap[QuotaStorage] = BacklogQuota{LimitSize: 99}
	ns.RetentionPolicies.RetentionSizeInMB = 99
	if r.BacklogQuotas[QuotaStorage].LimitSize != 10 || r.Retention.RetentionSizeInMB != 5 {
		t.Error("Resolved aliases its layers")
	}
	if !SameRetention(r, Resolve(d, ns2())) || SameRetention(r, Resolve(d)) {
		t.Error("SameRetention")
	}
	off := Resolve(d, &Policies{AutoTopicCreationOverride: &AutoTopicCreation{Allow: false}})
	if off.AutoCreate || off.AutoPartitions != 0 {
		t.Errorf("disallowed auto creation: %+v", off)
	}
}

// TestResolveBrokerAutoPartitions: the broker's allowAutoTopicCreationType
// partitioned and defaultNumPartitions apply where no namespace override
// does; an override of either type replaces them.
func TestResolveBrokerAutoPartitions(t *testing.T) {
	d := Defaults{AutoTopicCreation: true}
	d.AutoTopicPartitioned, d.DefaultNumPartitions = true, 3
	if r := Resolve(d); !r.AutoCreate || r.AutoPartitions != 3 {
		t.Errorf("broker default: %v %d", r.AutoCreate, r.AutoPartitions)
	}
	np := &Policies{AutoTopicCreationOverride: &AutoTopicCreation{Allow: true, TopicType: "non-partitioned"}}
	if r := Resolve(d, np); !r.AutoCreate || r.AutoPartitions != 0 {
		t.Errorf("non-partitioned override: %v %d", r.AutoCreate, r.AutoPartitions)
	}
	p5 := &Policies{AutoTopicCreationOverride: &AutoTopicCreation{Allow: true, TopicType: "partitioned", DefaultNumPartitions: ptr(5)}}
	if r := Resolve(d, p5); r.AutoPartitions != 5 {
		t.Errorf("partitioned override: %d", r.AutoPartitions)
	}
	d.DefaultNumPartitions = 0
	if r := Resolve(d); r.AutoPartitions != 1 {
		t.Errorf("defaultNumPartitions unset: %d, want Pulsar's 1", r.AutoPartitions)
	}
	d.AutoTopicPartitioned = false
	if r := Resolve(d); r.AutoPartitions != 0 {
		t.Errorf("non-partitioned: %d", r.AutoPartitions)
	}
}

func ns2() *Policies {
	return &Policies{RetentionPolicies: &RetentionPolicies{RetentionTimeInMinutes: -1, RetentionSizeInMB: 5}}
}

func TestParseBacklogQuota(t *testing.T) {
	for body, want := range map[string]BacklogQuota{
		`{"limitSize":1000,"limitTime":-1,"policy":"producer_request_hold"}`: {1000, -1, QuotaHold},
		`{"limit":"500","policy":"consumer_backlog_eviction"}`:               {500, 0, QuotaEviction},
		`{"limit":9223372036854775807,"policy":"producer_exception"}`:        {1<<63 - 1, 0, QuotaException},
	} {
		got, err := ParseBacklogQuota([]byte(body))
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", body, got, err, want)
		}
	}
	for _, bad := range []string{`{"limit":"x","policy":"producer_exception"}`, `{"limitSize":1,"policy":"drop"}`,
		`{"limitSize":9223372036854775808,"policy":"producer_exception"}`, `not json`} {
		if _, err := ParseBacklogQuota([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestStoreTenantsNamespacesAndNotifications(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var mu sync.Mutex
	var seen []string
	cancel := s.Subscribe(func(ns string) { mu.Lock(); seen = append(seen, ns); mu.Unlock() })
	if err := s.CreateNamespace(ctx, "t/ns", nil); !errors.Is(err, ErrTenantNotFound) {
		t.Fatalf("namespace of a missing tenant: %v", err)
	}
	if err := s.CreateTenant(ctx, "bad/name", TenantInfo{}); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("bad tenant name: %v", err)
	}
	if err := s.CreateTenant(ctx, "t", TenantInfo{AllowedClusters: []string{"c1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTenant(ctx, "t", TenantInfo{}); !errors.Is(err, ErrExists) {
		t.Fatalf("tenant twice: %v", err)
	}
	if err := s.CreateNamespace(ctx, "t/ns", nil); err != nil {
		t.Fatal(err)
	}
	p, err := s.Get(ctx, "t/ns")
	if err != nil || len(p.ReplicationClusters) != 1 || p.ReplicationClusters[0] != "c1" || p.Bundles.NumBundles != 4 {
		t.Fatalf("new namespace policies %+v %v", p, err)
	}
	if err := s.Update(ctx, "t/ns", func(p *Policies) error { p.MessageTTLInSeconds = ptr(7); return nil }); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.Get(ctx, "t/ns"); p.MessageTTLInSeconds == nil || *p.MessageTTLInSeconds != 7 {
		t.Fatalf("after update %+v", p)
	}
	err = s.Update(ctx, "t/ns", func(p *Policies) error { return errors.New("no") })
	var bad *BadValueError
	if !errors.As(err, &bad) {
		t.Fatalf("refused mutation: %v", err)
	}
	if err := s.Update(ctx, "t/none", func(*Policies) error { return nil }); !errors.Is(err, ErrNamespaceNotFound) {
		t.Fatalf("update of a missing namespace: %v", err)
	}
	if err := s.DeleteTenant(ctx, "t"); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("delete of a tenant with namespaces: %v", err)
	}
	if err := s.DeleteNamespace(ctx, "t/ns"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.NamespaceExists(ctx, "t/ns"); ok {
		t.Fatal("namespace still exists")
	}
	if err := s.DeleteTenant(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	s.Refresh()
	cancel()
	_ = s.Update(ctx, "t/ns", func(*Policies) error { return nil })
	mu.Lock()
	defer mu.Unlock()
	want := []string{"t/ns", "t/ns", "t/ns", ""} // create, update, delete, refresh
	if len(seen) != len(want) {
		t.Fatalf("notifications %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("notifications %q, want %q", seen, want)
		}
	}
}

// TestStoreConcurrentUpdates: compare-and-set loses no update.
func TestStoreConcurrentUpdates(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.CreateTenant(ctx, "t", TenantInfo{}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateNamespace(ctx, "t/ns", nil); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			err := s.Update(ctx, "t/ns", func(p *Policies) error {
				v := 0
				if p.MaxProducersPerTopic != nil {
					v = *p.MaxProducersPerTopic
				}
				p.MaxProducersPerTopic = ptr(v + 1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	p, err := s.Get(ctx, "t/ns")
	if err != nil || *p.MaxProducersPerTopic != n {
		t.Fatalf("counter %v %v, want %d", *p.MaxProducersPerTopic, err, n)
	}
}

// TestResolveTopic: a topic's layer wins over its namespace's, which
// wins over the defaults; a topic layer that cannot be read is skipped,
// with its error returned beside the namespace's resolution.
func TestResolveTopic(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.CreateTenant(ctx, "t", TenantInfo{AllowedClusters: []string{"c1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateNamespace(ctx, "t/ns", &Policies{MessageTTLInSeconds: ptr(60), MaxProducersPerTopic: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	d := Defaults{Cluster: "c1", MaxUnackedPerConsumer: 7}
	key, other := TopicKey("persistent", "t", "ns", "x"), TopicKey("persistent", "t", "ns", "y")
	if err := s.UpdateTopic(ctx, key, func(tp *TopicPolicies) error { tp.MessageTTLInSeconds = ptr(5); return nil }); err != nil {
		t.Fatal(err)
	}
	r, err := s.ResolveTopic(ctx, d, "t/ns", key)
	if err != nil || r.MessageTTLSeconds != 5 || r.MaxProducers != 3 || r.MaxUnackedPerConsumer != 7 {
		t.Fatalf("topic x: %+v, %v; want TTL 5 (topic), 3 producers (namespace), 7 unacked (default)", r, err)
	}
	if r, err := s.ResolveTopic(ctx, d, "t/ns", other); err != nil || r.MessageTTLSeconds != 60 {
		t.Fatalf("topic y without a layer: TTL %d, %v; want the namespace's 60", r.MessageTTLSeconds, err)
	}
	s.ForgetTopic(other)
	if _, err := s.meta.Put(ctx, topicNode(other), []byte("{not json"), metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	r, err = s.ResolveTopic(ctx, d, "t/ns", other)
	if err == nil || r == nil || r.MessageTTLSeconds != 60 {
		t.Fatalf("unreadable topic layer: %+v, %v; want the namespace's TTL and an error", r, err)
	}
}
