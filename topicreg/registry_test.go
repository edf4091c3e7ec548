package topicreg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// fixture is a registry over two stores (the cluster's and the
// configuration store), bootstrapped, so a test sees which store a
// write lands in.
type fixture struct {
	r             *Registry
	store, config *memmeta.Store
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	store, config := memmeta.New(), memmeta.New()
	r := New(store, config, policy.NewStore(config, "c1"), "c1")
	if err := r.Bootstrap(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return fixture{r, store, config}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func value(t *testing.T, s metadata.Store, key string) string {
	t.Helper()
	b, _, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return string(b)
}

func TestBootstrapAndClusters(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if err := f.r.Bootstrap(ctx); err != nil {
		t.Fatalf("second bootstrap: %v", err)
	}
	for _, ns := range []string{"public/default", "pulsar/system"} {
		if ok, err := f.r.NamespaceExists(ctx, ns); err != nil || !ok {
			t.Fatalf("namespace %s after bootstrap: %v %v", ns, ok, err)
		}
	}
	if ok, err := f.r.NamespaceExists(ctx, "public/nope"); err != nil || ok {
		t.Fatalf("public/nope: %v %v", ok, err)
	}
	if err := f.r.EnsureCluster(ctx, policy.ClusterData{ServiceURL: "http://a:8080"}); err != nil {
		t.Fatal(err)
	}
	cs, err := f.r.Clusters(ctx)
	if err != nil || !slices.Equal(cs, []string{"c1"}) {
		t.Fatalf("clusters %v %v", cs, err)
	}
	if ok, _ := f.store.Exists(ctx, "/admin/clusters/c1"); ok {
		t.Fatal("cluster registered in the cluster's store, not the configuration store")
	}
}

func TestPartitionedLayout(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	topic := "persistent://public/default/a%b"
	if err := f.r.CreatePartitioned(ctx, topic, PartitionedMetadata{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	key := "/admin/partitioned-topics/public/default/persistent/a%25b"
	if got := value(t, f.config, key); got != `{"partitions":3}` {
		t.Fatalf("stored %s", got)
	}
	if ok, _ := f.store.Exists(ctx, key); ok {
		t.Fatal("partitioned metadata written to the cluster's store")
	}
	if err := f.r.CreatePartitioned(ctx, topic, PartitionedMetadata{Partitions: 5}); err != ErrAlreadyExists {
		t.Fatalf("second create: %v", err)
	}
	if err := f.r.CreatePartitioned(ctx, topic+"-partition-1", PartitionedMetadata{Partitions: 2}); !errors.Is(err, ErrInvalidTopicName) {
		t.Fatalf("create of a partition: %v", err)
	}
	if err := f.r.CreatePartitioned(ctx, "a/b/c/d", PartitionedMetadata{Partitions: 2}); !errors.Is(err, ErrInvalidTopicName) {
		t.Fatalf("create of a bad name: %v", err)
	}
	if n, err := f.r.Partitions(ctx, topic); n != 3 || err != nil {
		t.Fatalf("partitions %d %v", n, err)
	}
	if n, err := f.r.Partitions(ctx, "persistent://public/default/other"); n != 0 || err != nil {
		t.Fatalf("partitions of a plain topic %d %v", n, err)
	}
	parts, err := f.r.PartitionsOf(ctx, topic)
	want := []string{topic + "-partition-0", topic + "-partition-1", topic + "-partition-2"}
	if err != nil || !slices.Equal(parts, want) {
		t.Fatalf("partitions of %v %v", parts, err)
	}
	if parts, err := f.r.PartitionsOf(ctx, want[0]); parts != nil || err != nil {
		t.Fatalf("partitions of a partition %v %v", parts, err)
	}
	for name, want := range map[string]bool{want[2]: true, topic + "-partition-3": false, topic: false} {
		tn, _ := pulsarproto.ParseTopicName(name)
		if got := f.r.PartitionOfPartitioned(ctx, tn); got != want {
			t.Errorf("PartitionOfPartitioned(%s) = %v", name, got)
		}
	}
	if m, ok, err := f.r.PartitionedMetadata(ctx, want[0]); ok || err != nil || m.Partitions != 0 {
		t.Fatalf("metadata of a partition %v %v %v", m, ok, err)
	}
	got, err := f.r.PartitionedTopics(ctx, "public/default", "persistent")
	if err != nil || !slices.Equal(got, []string{topic}) {
		t.Fatalf("partitioned topics %v %v", got, err)
	}
	if got, err := f.r.PartitionedTopics(ctx, "public/default", "non-persistent"); err != nil || len(got) != 0 || got == nil {
		t.Fatalf("partitioned topics of an empty domain %#v %v", got, err)
	}
}

func TestUpdatePartitioned(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	topic := "persistent://public/default/u"
	if err := f.r.CreatePartitioned(ctx, topic, PartitionedMetadata{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	// A write between f's read and its compare-and-set makes the
	// update run f again, over the new value.
	calls := 0
	err := f.r.UpdatePartitioned(ctx, topic, func(m *PartitionedMetadata) error {
		calls++
		if calls == 1 {
			if _, err := f.config.Put(ctx, "/admin/partitioned-topics/public/default/persistent/u", []byte(`{"partitions":4}`), metadata.AnyVersion); err != nil {
				return err
			}
		}
		m.Partitions++
		m.Properties = map[string]string{"k": "v"}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("update: %v after %d calls", err, calls)
	}
	m, ok, err := f.r.PartitionedMetadata(ctx, topic)
	if err != nil || !ok || m.Partitions != 5 || m.Properties["k"] != "v" {
		t.Fatalf("after update %+v %v %v", m, ok, err)
	}
	if got := value(t, f.config, "/admin/partitioned-topics/public/default/persistent/u"); got != `{"partitions":5,"properties":{"k":"v"}}` {
		t.Fatalf("stored %s", got)
	}
	refused := errors.New("refused")
	if err := f.r.UpdatePartitioned(ctx, topic, func(*PartitionedMetadata) error { return refused }); err != refused {
		t.Fatalf("f's error: %v", err)
	}
	for _, name := range []string{"persistent://public/default/missing", topic + "-partition-0"} {
		err := f.r.UpdatePartitioned(ctx, name, func(*PartitionedMetadata) error { return nil })
		if !errors.Is(err, ErrTopicNotFound) || err.Error() != "Partitioned topic does not exist" {
			t.Fatalf("update of %s: %v", name, err)
		}
	}
	if err := f.r.DeletePartitionedMetadata(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if err := f.r.DeletePartitionedMetadata(ctx, topic); err != ErrTopicNotFound {
		t.Fatalf("second delete: %v", err)
	}
	if n, err := f.r.Partitions(ctx, topic); n != 0 || err != nil {
		t.Fatalf("partitions after delete %d %v", n, err)
	}
}

func TestTopicNodes(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	topic := "persistent://public/default/n%1"
	key := "/admin/topics/public/default/persistent/n%251"
	tn, _ := pulsarproto.ParseTopicName(topic)
	if TopicKey(tn) != key {
		t.Fatalf("TopicKey %s", TopicKey(tn))
	}
	if _, err := f.r.TopicNode(ctx, topic); !errors.Is(err, ErrTopicNotFound) || err.Error() != "Topic not found" {
		t.Fatalf("node of a missing topic: %v", err)
	}
	if created, ok, err := f.r.NodeCreated(ctx, topic); created != 0 || ok || err != nil {
		t.Fatalf("NodeCreated of a missing topic %d %v %v", created, ok, err)
	}
	if err := f.r.EnsureNode(ctx, topic, 5); err != nil {
		t.Fatal(err)
	}
	if got := value(t, f.store, key); got != `{"created":5}` {
		t.Fatalf("stored %s", got)
	}
	if err := f.r.EnsureNode(ctx, topic, 9); err != nil {
		t.Fatalf("ensure of an existing node: %v", err)
	}
	if created, ok, err := f.r.NodeCreated(ctx, topic); created != 5 || !ok || err != nil {
		t.Fatalf("NodeCreated %d %v %v", created, ok, err)
	}
	err := f.r.CreateNode(ctx, topic, TopicNode{})
	if !errors.Is(err, ErrAlreadyExists) || err.Error() != "This topic already exists" {
		t.Fatalf("second create: %v", err)
	}
	if err := f.r.CreateNode(ctx, "non-persistent://public/default/np", TopicNode{}); !errors.Is(err, ErrInvalidTopicName) {
		t.Fatalf("create of a non-persistent topic's node: %v", err)
	}
	if err := f.r.UpdateTopicNode(ctx, topic, func(n *TopicNode) error {
		n.Properties = map[string]string{"a": "1"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	n, err := f.r.TopicNode(ctx, topic)
	if err != nil || n.Created != 5 || n.Properties["a"] != "1" {
		t.Fatalf("node %+v %v", n, err)
	}
	// A node stored empty (a topic created before nodes kept their
	// creation time) reads as the zero TopicNode.
	if _, err := f.store.Put(ctx, "/admin/topics/public/default/persistent/old", nil, metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	if n, err := f.r.TopicNode(ctx, "old"); err != nil || n.Created != 0 || n.Properties != nil {
		t.Fatalf("empty node %+v %v", n, err)
	}
	if ok, err := f.r.NodeExists(ctx, "old"); !ok || err != nil {
		t.Fatalf("exists %v %v", ok, err)
	}
	if err := f.r.DeleteNode(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if err := f.r.DeleteNode(ctx, topic); !errors.Is(err, ErrTopicNotFound) || err.Error() != "Topic not found" {
		t.Fatalf("second delete: %v", err)
	}
	if err := f.r.UpdateTopicNode(ctx, topic, func(*TopicNode) error { return nil }); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("update of a deleted node: %v", err)
	}
}

func TestAppendTopics(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	for _, name := range []string{"b", "a%x"} {
		if err := f.r.CreateNode(ctx, name, TopicNode{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.r.CreatePartitioned(ctx, "p", PartitionedMetadata{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if err := f.r.CreatePartitioned(ctx, "non-persistent://public/default/q", PartitionedMetadata{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	const pre = "persistent://public/default/"
	out, err := f.r.AppendTopics(ctx, []string{"x"}, "public/default", "persistent")
	want := []string{"x", pre + "a%x", pre + "b", pre + "p-partition-0", pre + "p-partition-1"}
	if err != nil || !slices.Equal(out, want) {
		t.Fatalf("persistent topics %v %v", out, err)
	}
	out, err = f.r.AppendTopics(ctx, nil, "public/default", "non-persistent")
	if err != nil || !slices.Equal(out, []string{"non-persistent://public/default/q-partition-0"}) {
		t.Fatalf("non-persistent topics %v %v", out, err)
	}
	if out, err := f.r.AppendTopics(ctx, nil, "public/empty", "persistent"); err != nil || len(out) != 0 {
		t.Fatalf("empty namespace %v %v", out, err)
	}
	// A listing that would pass MaxListedTopics is refused, counting
	// what out holds already.
	out, err = f.r.AppendTopics(ctx, make([]string, MaxListedTopics-3), "public/default", "persistent")
	wantErr := fmt.Sprintf("namespace public/default has more than %d topics to list", MaxListedTopics)
	if !errors.Is(err, ErrPreconditionFailed) || err.Error() != wantErr {
		t.Fatalf("listing past the bound: %v", err)
	}
	if len(out) != MaxListedTopics-1 {
		t.Fatalf("listing past the bound built %d names", len(out))
	}
}

// TestTopicPolicyKey: a topic's policy key is its partitioned topic's
// for a partition, with the local name escaped as the registry's keys
// are; a name that does not parse is ErrInvalidTopicName.
func TestTopicPolicyKey(t *testing.T) {
	for name, want := range map[string]string{
		"persistent://t/ns/x":             "t/ns/persistent/x",
		"persistent://t/ns/x-partition-3": "t/ns/persistent/x",
		"non-persistent://t/ns/a%b":       "t/ns/non-persistent/a%25b",
		"y":                               "public/default/persistent/y",
	} {
		if got, err := TopicPolicyKey(name); err != nil || got != want {
			t.Errorf("TopicPolicyKey(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := TopicPolicyKey("persistent://only/two"); !errors.Is(err, ErrInvalidTopicName) {
		t.Errorf("a bad name: %v, want ErrInvalidTopicName", err)
	}
}
