package georep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// Replication is geo-replication, a feature of one broker (Enable).
type Replication struct {
	b     *broker.Broker
	local string // this cluster's name
	log   *slog.Logger
	topic broker.TopicSlot[topicState]
	subs  broker.SubSlot[subState]

	// ctx ends when the broker closes: the policy watches the topics
	// start live as long.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var (
	_ broker.TopicHook               = (*Replication)(nil)
	_ broker.StoreObserver           = (*Replication)(nil)
	_ broker.PolicyObserver          = (*Replication)(nil)
	_ topicstats.Source              = (*Replication)(nil)
	_ broker.TopicPinner             = (*Replication)(nil)
	_ broker.ReplicatedSubscriptions = (*Replication)(nil)
	_ broker.Lifecycle               = (*Replication)(nil)
)

// replicatedTopicsInterval is how often a single-node broker loads the
// topics of the namespaces replicated from its cluster (Lifecycle).
const replicatedTopicsInterval = 10 * time.Second

// Enable registers geo-replication on b, before Start. Register it after
// the features that bound reads (transactions: Topic.SetReadBound), so
// that a topic's replicators start reading once the bound is set.
func Enable(b *broker.Broker) (*Replication, error) {
	f := &Replication{b: b, local: b.Config().ClusterName, log: b.Logger(),
		topic: broker.NewTopicSlot[topicState](b), subs: broker.NewSubSlot[subState](b)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	if err := b.Use(f); err != nil {
		f.cancel()
		return nil, err
	}
	return f, nil
}

// brokerCredentials are the broker's own credentials a replicator
// presents when the remote ClusterData names none: Pulsar's replication
// client takes brokerClientAuthenticationPlugin/Parameters when
// authentication is enabled (nil otherwise). They are read at every
// connection, so a dynamic update applies to the next one.
func (f *Replication) brokerCredentials() (*auth.ClientAuth, error) {
	sec := f.b.Security()
	if sec == nil || !sec.Config.AuthenticationEnabled {
		return nil, nil
	}
	ca, err := sec.Client.Auth()
	if err != nil {
		return nil, fmt.Errorf("replication: brokerClientAuthenticationPlugin: %w", err)
	}
	return ca, nil
}

// Name implements broker.Feature.
func (*Replication) Name() string { return "geo-replication" }

// LoadTopic starts the replicators of a persistent topic and deletes the
// cursors of the clusters it no longer replicates to
// (broker.TopicHook).
func (f *Replication) LoadTopic(_ context.Context, t broker.Topic) error {
	if !t.Persistent() {
		return nil
	}
	st := newTopicState(f, t)
	f.topic.Set(t, st)
	st.dropStaleCursors()
	st.check()
	return nil
}

// CloseTopic stops the topic's replicators; their cursors stay
// (broker.TopicHook).
func (f *Replication) CloseTopic(t broker.Topic) {
	if st := f.topic.Get(t); st != nil {
		st.stop()
	}
}

// Stored wakes the topic's replicators (broker.StoreObserver).
func (f *Replication) Stored(t broker.Topic, marker bool) {
	st := f.topic.Get(t)
	if st == nil {
		return
	}
	if !marker {
		st.dataIn.Add(1)
	}
	st.wake()
}

// PolicyApplied starts and stops replicators as the topic's replication
// clusters change (broker.PolicyObserver).
func (f *Replication) PolicyApplied(t broker.Topic) {
	if st := f.topic.Get(t); st != nil {
		st.check()
	}
}

// AddTopicStats fills TopicStats.Replication (topicstats.Source).
func (f *Replication) AddTopicStats(t broker.Topic, ts *topicstats.TopicStats) {
	if st := f.topic.Get(t); st != nil {
		st.addStats(ts)
	}
}

// Pinned keeps a topic with replicators loaded (broker.TopicPinner).
func (f *Replication) Pinned(t broker.Topic) bool {
	st := f.topic.Get(t)
	return st != nil && st.busy()
}

// Start loads, on a single-node broker, the topics of the namespaces
// replicated from this cluster, now and every replicatedTopicsInterval
// (broker.Lifecycle).
func (f *Replication) Start(context.Context) error {
	if f.b.Ownership() != nil {
		return nil // in a cluster the bundle owners load their topics on lookup
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		tk := time.NewTicker(replicatedTopicsInterval)
		defer tk.Stop()
		for {
			ctx, cancel := context.WithTimeout(f.ctx, replicatedTopicsInterval)
			f.loadReplicatedTopics(ctx)
			cancel()
			select {
			case <-f.ctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
	return nil
}

// Close stops the loop Start began and ends the policy watches
// (broker.Lifecycle); the topics' replicators stop as the topics close.
func (f *Replication) Close() {
	f.cancel()
	f.wg.Wait()
}

// loadReplicatedTopics loads the persistent topics of the namespaces
// replicated from this cluster, so that their replicators run (and drain
// a backlog left by a restart) without waiting for a client to touch
// them, as a Pulsar broker loads a replicated namespace's topics when it
// takes the bundle.
func (f *Replication) loadReplicatedTopics(ctx context.Context) {
	ps := f.b.Policies()
	tenants, err := ps.Tenants(ctx)
	if err != nil {
		return
	}
	for _, tenant := range tenants {
		nss, err := ps.Namespaces(ctx, tenant)
		if err != nil {
			continue
		}
		for _, ns := range nss {
			p, err := ps.Get(ctx, ns)
			if err != nil || len(p.ReplicationClusters) < 2 || !slices.Contains(p.ReplicationClusters, f.local) {
				continue
			}
			topics, err := f.b.Registry().TopicsOfNamespace(ctx, ns, true, false)
			if err != nil {
				continue
			}
			for _, name := range topics {
				if _, err := f.b.Topic(ctx, name); err != nil && !errors.Is(err, broker.ErrTopicNotFound) {
					f.log.Debug("load replicated topic", "topic", name, "err", err)
				}
			}
		}
	}
}
