package policy

import (
	"context"
	"strings"
	"sync"

	"github.com/magnetar-mq/magnetar/metadata"
)

// WatchNamespace makes writes to namespace ns's policies (and to the
// topic overrides of its topics) made through other processes reach the
// subscribers at once instead of at the next Refresh, when the store's
// metadata.Store supports watches (ZooKeeper). It is idempotent; the
// watches end with ctx.
func (s *Store) WatchNamespace(ctx context.Context, ns string) {
	w, ok := s.meta.(metadata.Watcher)
	if !ok || !strings.Contains(ns, "/") {
		return
	}
	if _, loaded := s.watched.LoadOrStore(ns, struct{}{}); loaded {
		return
	}
	reload := func(metadata.Event) { s.Reload(ns) }
	if err := w.Watch(ctx, Path+"/"+ns, reload); err != nil {
		s.watched.Delete(ns)
	}
}

// WatchTopic watches the topic-level overrides of topic (see
// WatchNamespace); topic is a partition's parent name.
func (s *Store) WatchTopic(ctx context.Context, topic string) {
	w, ok := s.meta.(metadata.Watcher)
	if !ok {
		return
	}
	key, err := TopicKeyOf(topic)
	if err != nil {
		return
	}
	node := topicNode(key)
	if _, loaded := s.watched.LoadOrStore(node, struct{}{}); loaded {
		return
	}
	_, rest, _ := strings.Cut(topic, "://")
	parts := strings.SplitN(rest, "/", 3)
	ns := parts[0] + "/" + parts[1]
	if err := w.Watch(ctx, node, func(metadata.Event) { s.Reload(ns) }); err != nil {
		s.watched.Delete(node)
	}
}

// Reload drops the cached policies of ns and the cached topic overrides,
// then notifies the subscribers with ns.
func (s *Store) Reload(ns string) {
	s.mu.Lock()
	delete(s.mu.cache, ns)
	s.dropTopicsLocked()
	s.mu.gen++
	s.mu.Unlock()
	s.notify(ns)
}

// watchSet is the set of watched nodes (namespaces and topic-policy keys).
type watchSet = sync.Map
