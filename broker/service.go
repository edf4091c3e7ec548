package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// The methods of this file are the broker's administration surface,
// on the role objects of roles.go: package admin reaches them through
// role interfaces it declares itself (admin/roles.go). Topic names are anything ParseTopicName accepts; a
// method on one topic acts on a non-partitioned topic or one partition
// (callers fan out over partitions). Errors wrap ErrTopicNotFound,
// ErrNamespaceNotFound, ErrSubscriptionNotFound, ErrAlreadyExists,
// ErrInvalidTopicName, ErrNotAllowed or ErrPreconditionFailed; their text
// is the reason to give the client. Every method is safe for concurrent
// use.

// MessageID identifies an entry (and a message in it). LedgerID and
// EntryID both negative mean Earliest, both math.MaxInt64 Latest.
type MessageID struct {
	LedgerID, EntryID int64
	Partition         int
	// BatchIndex is the last message's index in a batch entry, -1 when
	// the entry is not a batch.
	BatchIndex int32
}

// position maps id to a cursor position, honouring the sentinels.
func (id MessageID) position() position {
	switch {
	case id.LedgerID < 0 && id.EntryID < 0:
		return position(mledger.Earliest)
	case id.LedgerID == math.MaxInt64 && id.EntryID == math.MaxInt64:
		return position(mledger.Latest)
	}
	return position{LedgerID: id.LedgerID, EntryID: id.EntryID}
}

// ClusterName is the cluster this broker belongs to.
func (n Node) ClusterName() string { return n.b.cfg.ClusterName }

// ServiceURL and WebURL are the advertised pulsar:// and http:// URLs.
func (n Node) ServiceURL() string { return n.b.net.serviceURL() }

// WebURL is the advertised http:// URL.
func (n Node) WebURL() string { return n.b.net.webURL() }

// ServiceURLTLS is the pulsar+ssl:// URL handed out by lookups ("" when
// there is no TLS listener).
func (n Node) ServiceURLTLS() string { return n.b.net.serviceURLTLS() }

// WebURLTLS is the https:// URL handed out by lookups ("" if none).
func (n Node) WebURLTLS() string { return n.b.net.webURLTLS() }

// Clusters lists the registered clusters.
func (n Node) Clusters(ctx context.Context) ([]string, error) { return n.b.reg.clusters(ctx) }

// Bookies lists the storage nodes (empty without Deps.Bookies).
func (n Node) Bookies() []BookieStatus {
	list := []BookieStatus{}
	if n.b.deps.Bookies != nil {
		list = append(list, n.b.deps.Bookies.Bookies()...)
	}
	return list
}

// Policies is the broker's policy store (Broker.Policies).
func (n Node) Policies() *policy.Store { return n.b.policies }

// Policies is the tenant, namespace and policy store the broker
// enforces; with a PolicyWatcher (package enforcement), writes through
// it apply to loaded topics at once.
func (b *Broker) Policies() *policy.Store { return b.policies }

// TopicPolicyKey returns the policy.Store key of a topic's topic-level
// policies (a partition's are its partitioned topic's).
func TopicPolicyKey(name string) (string, error) {
	tn, err := parseTopicName(name)
	if err != nil {
		return "", err
	}
	return topicPolicyKey(tn), nil
}

// MaxPartitionsPerTopic is the broker's
// maxNumPartitionsPerPartitionedTopic (0: only the int32 range).
func (n Node) MaxPartitionsPerTopic() int { return int(max(n.b.tun.maxPartitions.Load(), 0)) }

// checkPartitions refuses a partition count outside 1..the broker's
// limit (1..2^31-1 without one) with ErrPreconditionFailed and Pulsar's
// wording (for an update, "Desired partitions ...").
func (a TopicAdmin) checkPartitions(n int, update bool) error {
	b := a.b
	limit := b.Node().MaxPartitionsPerTopic()
	switch {
	case n <= 0:
		return reason(ErrPreconditionFailed, "Number of partitions should be more than 0")
	case n > math.MaxInt32:
		return reason(ErrPreconditionFailed, fmt.Sprintf("Number of partitions %d is above %d", n, math.MaxInt32))
	case limit > 0 && n > limit && update:
		return reason(ErrPreconditionFailed, fmt.Sprintf("Desired partitions %d can't be greater than the maximum partitions per topic %d.", n, limit))
	case limit > 0 && n > limit:
		return reason(ErrPreconditionFailed, fmt.Sprintf("Number of partitions should be less than or equal to %d", limit))
	}
	return nil
}

// TopicsOfNamespace lists created topics (partitions expanded) of ns
// ("tenant/ns") in the given domains.
func (a TopicAdmin) TopicsOfNamespace(ctx context.Context, ns string, persistent, nonPersistent bool) ([]string, error) {
	b := a.b
	return b.topicsOfNamespace(ctx, ns, persistent, nonPersistent)
}

// PartitionedTopics lists the partitioned topics of ns in domain.
func (a TopicAdmin) PartitionedTopics(ctx context.Context, ns, domain string) ([]string, error) {
	b := a.b
	return b.reg.partitionedTopics(ctx, ns, domain)
}

// Partitions returns a partitioned topic's partition count (0: not
// partitioned).
func (a TopicAdmin) Partitions(ctx context.Context, topic string) (int, error) {
	b := a.b
	tn, err := parseTopicName(topic)
	if err != nil {
		return 0, err
	}
	return b.reg.partitions(ctx, tn)
}

// AutoCreatePartitioned creates topic as partitioned if its
// namespace's auto-creation policy asks for it; it returns the
// partition count (0: not created).
func (a TopicAdmin) AutoCreatePartitioned(ctx context.Context, topic string) int {
	tn, err := parseTopicName(topic)
	if err != nil || tn.IsPartition() {
		return 0
	}
	n, _ := a.autoCreatePartitioned(ctx, tn)
	return n
}

// autoCreatePartitioned creates tn as a partitioned topic when its
// namespace's auto-creation override asks for partitioned topics and tn
// does not exist yet; it returns the partition count (0: not created),
// and an Admission's refusal (ErrTooManyTopics, limits.go) if that is
// why it was not created.
func (a TopicAdmin) autoCreatePartitioned(ctx context.Context, tn topicName) (int, error) {
	b := a.b
	pol := b.resolvePolicies(tn)
	allow, n := pol.AutoCreate, pol.AutoPartitions
	if !allow || n <= 0 {
		return 0, nil
	}
	if err := a.checkPartitions(n, false); err != nil {
		b.log.Info("partitioned auto-creation refused", "topic", tn.String(), "err", err)
		return 0, nil
	}
	if ok, err := a.topicExists(ctx, tn); err != nil || ok {
		return 0, nil
	}
	if err := b.ext.admitTopics(ctx, tn, n, b.resolvePolicies); err != nil {
		return 0, err
	}
	err := b.reg.setPartitions(ctx, tn, PartitionedMetadata{Partitions: n}, true)
	if err != nil && !errors.Is(err, ErrAlreadyExists) {
		return 0, nil
	}
	got, err := b.reg.partitions(ctx, tn)
	if err != nil {
		return 0, nil
	}
	return got, nil
}

// CreatePartitionedTopic registers a partitioned topic; creating an
// existing one with the same count is a no-op, another count fails with
// ErrAlreadyExists.
func (a TopicAdmin) CreatePartitionedTopic(ctx context.Context, name string, m PartitionedMetadata) error {
	b := a.b
	tn, err := parseTopicName(name)
	if err != nil {
		return err
	}
	if tn.IsPartition() {
		return fmt.Errorf("%w: %s is a partition", ErrInvalidTopicName, tn)
	}
	if err := a.checkPartitions(m.Partitions, false); err != nil {
		return err
	}
	if err := a.requireNamespace(ctx, tn); err != nil {
		return err
	}
	if n, err := b.reg.partitions(ctx, tn); err != nil {
		return err
	} else if n == 0 {
		if err := b.ext.admitTopics(ctx, tn, m.Partitions, b.resolvePolicies); err != nil {
			return err
		}
	}
	err = b.reg.setPartitions(ctx, tn, m, true)
	if errors.Is(err, ErrAlreadyExists) {
		if n, gerr := b.reg.partitions(ctx, tn); gerr == nil && n == m.Partitions {
			return nil
		}
		return reason(ErrAlreadyExists, "This topic already exists")
	}
	return err
}

// UpdatePartitionedTopic raises the partition count (never lowers).
func (a TopicAdmin) UpdatePartitionedTopic(ctx context.Context, topic string, partitions int) error {
	b := a.b
	tn, err := parseTopicName(topic)
	if err != nil {
		return err
	}
	if err := a.checkPartitions(partitions, true); err != nil {
		return err
	}
	cur, err := b.reg.partitions(ctx, tn)
	if err != nil {
		return err
	}
	if cur == 0 {
		return reason(ErrTopicNotFound, "Partitioned topic does not exist")
	}
	if partitions < cur {
		return reason(ErrPreconditionFailed, "The number of partitions can only be increased")
	}
	m, _, err := a.partitionedMeta(ctx, tn) // keep the topic's properties
	if err != nil {
		return err
	}
	m.Partitions = partitions
	return b.reg.setPartitions(ctx, tn, m, false)
}

// DeletePartitionedTopic deletes every partition and the partitioned
// metadata, then tells the DeletionObservers (the schema registry
// deletes the topic's schema).
func (a TopicAdmin) DeletePartitionedTopic(ctx context.Context, topic string) error {
	b := a.b
	tn, err := parseTopicName(topic)
	if err != nil {
		return err
	}
	n, err := b.reg.partitions(ctx, tn)
	if err != nil {
		return err
	}
	if n == 0 {
		return reason(ErrTopicNotFound, "Partitioned topic does not exist")
	}
	for i := 0; i < n; i++ {
		if err := a.DeleteTopic(ctx, tn.Partition(i).String(), true); err != nil && !errors.Is(err, ErrTopicNotFound) {
			return err
		}
	}
	if err := b.reg.deletePartitioned(ctx, tn); err != nil && !errors.Is(err, ErrTopicNotFound) {
		return err
	}
	if err := b.policies.DeleteTopic(ctx, topicPolicyKey(tn)); err != nil {
		b.log.Warn("delete topic policies", "topic", tn.String(), "err", err)
	}
	b.ext.topicDeleted(ctx, tn)
	return nil
}

// requireNamespace fails with ErrNamespaceNotFound unless tn's namespace
// exists.
func (a TopicAdmin) requireNamespace(ctx context.Context, tn topicName) error {
	b := a.b
	ok, err := b.reg.namespaceExists(ctx, tn.NamespaceName())
	if err != nil {
		return err
	}
	if !ok {
		return reason(ErrNamespaceNotFound, "Namespace does not exist")
	}
	return nil
}

// CreateTopic creates a non-partitioned topic (ErrAlreadyExists).
func (a TopicAdmin) CreateTopic(ctx context.Context, topic string) error {
	return a.CreateTopicWithProperties(ctx, topic, nil)
}

// CreateTopicWithProperties creates a non-partitioned topic storing
// props with it (non-persistent topics take none: ErrPreconditionFailed;
// topic_properties.go).
func (a TopicAdmin) CreateTopicWithProperties(ctx context.Context, topic string, props map[string]string) error {
	b := a.b
	data, err := encodeTopicNode(props, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	tn, err := parseTopicName(topic)
	if err != nil {
		return err
	}
	if err := a.requireNamespace(ctx, tn); err != nil {
		return err
	}
	if n, err := b.reg.partitions(ctx, tn); err != nil {
		return err
	} else if n > 0 {
		return reason(ErrAlreadyExists, "This topic already exists")
	}
	if !tn.IsPersistent() {
		if len(props) > 0 {
			return reason(ErrPreconditionFailed, "Properties are kept for persistent topics only")
		}
		_, err := b.getTopic(ctx, tn, true)
		return err
	}
	if ok, err := b.deps.Metadata.Exists(ctx, topicKey(tn)); err != nil {
		return err
	} else if !ok {
		if err := b.ext.admitTopics(ctx, tn, 1, b.resolvePolicies); err != nil {
			return err
		}
	}
	_, err = b.deps.Metadata.Put(ctx, topicKey(tn), data, metadata.NotExists)
	if errors.Is(err, metadata.ErrExists) {
		return reason(ErrAlreadyExists, "This topic already exists")
	}
	return err
}

// TopicExists reports whether topic is created (persistent) or loaded
// (non-persistent).
func (a TopicAdmin) TopicExists(ctx context.Context, topic string) (bool, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return false, err
	}
	return a.topicExists(ctx, tn)
}

// topicExists reports whether tn is a created non-partitioned topic (or
// partition), or a loaded non-persistent one.
func (a TopicAdmin) topicExists(ctx context.Context, tn topicName) (bool, error) {
	b := a.b
	if !tn.IsPersistent() {
		return b.lookupTopic(tn.String()) != nil, nil
	}
	return b.deps.Metadata.Exists(ctx, topicKey(tn))
}

// DeleteTopic deletes a non-partitioned topic (or one partition): its
// producers and consumers are disconnected, then its registration is
// removed, the DeletionObservers told, and its managed ledger deleted
// (cursors, ledgers, metadata: deleteTopicStorage), so the bookies
// reclaim its space.
// Without force a topic with producers or consumers is refused.
func (a TopicAdmin) DeleteTopic(ctx context.Context, name string, force bool) error {
	b := a.b
	tn, err := parseTopicName(name)
	if err != nil {
		return err
	}
	if !force {
		if t := b.lookupTopic(tn.String()); t != nil && topicInUse(t) {
			return reason(ErrPreconditionFailed, "Topic has active producers/subscriptions")
		}
	}
	b.unloadTopic(tn.String())
	if !tn.IsPartition() {
		if err := b.policies.DeleteTopic(ctx, topicPolicyKey(tn)); err != nil {
			b.log.Warn("delete topic policies", "topic", tn.String(), "err", err)
		}
	}
	if !tn.IsPersistent() {
		b.ext.topicDeleted(ctx, tn)
		return nil
	}
	err = b.deps.Metadata.Delete(ctx, topicKey(tn), -1)
	if err != nil {
		if ok, _ := b.deps.Metadata.Exists(ctx, topicKey(tn)); !ok {
			return reason(ErrTopicNotFound, "Topic not found")
		}
		return err
	}
	b.ext.topicDeleted(ctx, tn)
	return b.deps.deleteTopicStorage(ctx, tn.String())
}

// topicInUse reports whether t has producers or connected consumers.
func topicInUse(t *topic) bool {
	t.mu.Lock()
	n := len(t.mu.producers)
	t.mu.Unlock()
	if n > 0 {
		return true
	}
	for _, s := range *t.subList.Load() {
		s.call(func() { n += len(s.consumers) })
	}
	return n > 0
}

// loadedOrLoad returns the topic, loading it if it exists (never
// creating it).
func (b *Broker) loadedOrLoad(ctx context.Context, topic string) (*topic, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return nil, err
	}
	if t := b.lookupTopic(tn.String()); t != nil && !t.isClosed() {
		return t, nil
	}
	t, err := b.getTopic(ctx, tn, false)
	if errors.Is(err, ErrTopicNotFound) {
		return nil, reason(ErrTopicNotFound, "Topic not found")
	}
	if errors.Is(err, ErrNamespaceNotFound) {
		return nil, reason(ErrNamespaceNotFound, "Namespace does not exist")
	}
	return t, err
}

// TopicStats returns the stats of a topic, loading it if it exists.
func (a TopicReader) TopicStats(ctx context.Context, name string) (TopicStats, error) {
	b := a.b
	t, err := b.loadedOrLoad(ctx, name)
	if err != nil {
		return TopicStats{}, err
	}
	return t.stats(), nil
}

// InternalStats is Pulsar's PersistentTopicInternalStats (subset).
type InternalStats struct {
	EntriesAddedCounter int64 `json:"entriesAddedCounter"`
	NumberOfEntries     int64 `json:"numberOfEntries"`
	TotalSize           int64 `json:"totalSize"`
	// OffloadedSize and BookieSize split TotalSize (Magnetar): bytes in
	// completed offloads, bytes still on the bookies.
	OffloadedSize        int64                          `json:"offloadedSize"`
	BookieSize           int64                          `json:"bookieSize"`
	CurrentLedgerEntries int64                          `json:"currentLedgerEntries"`
	CurrentLedgerSize    int64                          `json:"currentLedgerSize"`
	LastConfirmedEntry   string                         `json:"lastConfirmedEntry"`
	State                string                         `json:"state"`
	Ledgers              []InternalLedgerInfo           `json:"ledgers"`
	Cursors              map[string]InternalCursorStats `json:"cursors"`
	// Compaction state (package compact); absent if never compacted.
	CompactedLedger         *InternalLedgerInfo `json:"compactedLedger,omitempty"`
	CompactionHorizon       string              `json:"compactionHorizon,omitempty"`
	PendingCompactionLedger *int64              `json:"pendingCompactionLedger,omitempty"`
}

// InternalLedgerInfo is one ledger of InternalStats.
type InternalLedgerInfo struct {
	LedgerID  int64 `json:"ledgerId"`
	Entries   int64 `json:"entries"`
	Size      int64 `json:"size"`
	Timestamp int64 `json:"timestamp"`
	Offloaded bool  `json:"offloaded"`
	// UnderReplicated is Pulsar's field (always false here).
	UnderReplicated bool `json:"underReplicated"`
	// BookkeeperDeleted (Magnetar): the bookie copy of the offloaded
	// ledger is gone.
	BookkeeperDeleted bool `json:"bookkeeperDeleted"`
}

// InternalCursorStats is one cursor of InternalStats.
type InternalCursorStats struct {
	MarkDeletePosition                       string `json:"markDeletePosition"`
	ReadPosition                             string `json:"readPosition"`
	CursorLedger                             int64  `json:"cursorLedger"`
	State                                    string `json:"state"`
	NumberOfEntriesSinceFirstNotAckedMessage int64  `json:"numberOfEntriesSinceFirstNotAckedMessage"`
	TotalNonContiguousDeletedMessagesRange   int64  `json:"totalNonContiguousDeletedMessagesRange"`
	MessagesConsumedCounter                  int64  `json:"messagesConsumedCounter"`
	Durable                                  bool   `json:"durable"`
	BacklogMessages                          int64  `json:"backlogMessages"`
}

// InternalStats returns Pulsar's internal stats of a topic (managed
// ledger and cursors).
func (a TopicReader) InternalStats(ctx context.Context, topic string) (InternalStats, error) {
	b := a.b
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return InternalStats{}, err
	}
	if !t.persistent() {
		// As Pulsar's non-persistent topic: no storage, one empty
		// cursor entry per subscription.
		out := InternalStats{EntriesAddedCounter: t.msgIn.Load(), Ledgers: []InternalLedgerInfo{}, Cursors: map[string]InternalCursorStats{}}
		for _, s := range *t.subList.Load() {
			out.Cursors[s.name] = InternalCursorStats{}
		}
		return out, nil
	}
	out := internalStatsOf(t.ml.Stats())
	for _, h := range b.ext.stats {
		h.AddInternalStats(ctx, Topic{t}, &out)
	}
	return out, nil
}

// internalStatsOf is Pulsar's PersistentTopicInternalStats of a managed
// ledger.
func internalStatsOf(s mledger.Stats) InternalStats {
	out := InternalStats{
		EntriesAddedCounter: s.EntriesAddedCounter,
		NumberOfEntries:     s.NumberOfEntries,
		TotalSize:           s.TotalSize,
		OffloadedSize:       s.OffloadedSize,
		BookieSize:          s.BookieSize,
		LastConfirmedEntry:  toPos(s.LastConfirmed).String(),
		State:               "LedgerOpened",
		Ledgers:             []InternalLedgerInfo{},
		Cursors:             map[string]InternalCursorStats{},
	}
	if s.Terminated {
		out.State = "Terminated"
	}
	for _, l := range s.Ledgers {
		out.Ledgers = append(out.Ledgers, InternalLedgerInfo{LedgerID: l.LedgerID, Entries: l.Entries, Size: l.Size, Timestamp: l.Timestamp,
			Offloaded: l.Offload != nil && l.Offload.Complete, UnderReplicated: false,
			BookkeeperDeleted: l.Offload != nil && l.Offload.BookkeeperDeleted})
	}
	if n := len(s.Ledgers); n > 0 {
		out.CurrentLedgerEntries, out.CurrentLedgerSize = s.Ledgers[n-1].Entries, s.Ledgers[n-1].Size
	}
	for _, c := range s.Cursors {
		out.Cursors[c.Name] = InternalCursorStats{
			MarkDeletePosition:                       toPos(c.MarkDelete).String(),
			ReadPosition:                             toPos(c.ReadPosition).String(),
			CursorLedger:                             c.CursorLedger,
			State:                                    "Open",
			NumberOfEntriesSinceFirstNotAckedMessage: c.BacklogEntries,
			TotalNonContiguousDeletedMessagesRange:   c.IndividuallyDeletedCount,
			Durable:                                  c.Durable,
			BacklogMessages:                          c.BacklogMessages,
		}
	}
	return out
}

// LastMessageID returns the id of the topic's last message.
func (a TopicReader) LastMessageID(ctx context.Context, topic string) (MessageID, error) {
	b := a.b
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return MessageID{}, err
	}
	pos, bi, _ := t.lastMessage()
	return MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.partition, BatchIndex: bi}, nil
}

// Terminate refuses further publishes and returns the last message id.
func (a TopicLifecycle) Terminate(ctx context.Context, topic string) (MessageID, error) {
	b := a.b
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return MessageID{}, err
	}
	if !t.persistent() {
		return MessageID{}, reason(ErrNotAllowed, "Termination of a non-persistent topic is not allowed")
	}
	// Close the producers before the ledger refuses adds: a client must
	// see CLOSE_PRODUCER first (its reconnect is then refused with
	// TopicTerminated and fails what it has pending with that), never a
	// SEND_ERROR TopicTerminated before it, which makes pulsar-client-go
	// forget the producer so that its pending sends time out. Adds of the
	// closed producers that still reach the terminated ledger are dropped
	// unanswered (publishFailed); a SEND on a closed producer closes the
	// connection, as in Pulsar.
	t.mu.Lock()
	t.mu.terminated = true
	ps := make([]*producer, 0, len(t.mu.producers)+len(t.mu.waiting))
	for _, pr := range t.mu.producers {
		ps = append(ps, pr)
	}
	ps = append(ps, t.mu.waiting...)
	t.mu.Unlock()
	for _, pr := range ps {
		t.removeProducer(pr)
		pr.sink.closeProducer(pr)
	}
	pos, err := t.ml.Terminate()
	if err != nil && !errors.Is(err, ErrTerminated) {
		t.mu.Lock()
		t.mu.terminated = false // producers may come back
		t.mu.Unlock()
		return MessageID{}, err
	}
	t.held.drop(heldBy(nil))
	return MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.partition, BatchIndex: -1}, nil
}

// ReadEntry returns the stored entry (a Pulsar batch) at id.
func (a TopicReader) ReadEntry(ctx context.Context, topic string, id MessageID) ([]byte, error) {
	b := a.b
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return nil, err
	}
	if !t.persistent() {
		return nil, reason(ErrNotAllowed, "not supported on non-persistent topics")
	}
	data, err := t.ml.ReadEntry(position{LedgerID: id.LedgerID, EntryID: id.EntryID})
	if err != nil {
		return nil, entryReadError(t.log, err)
	}
	return data, nil
}

// Subscriptions lists a topic's subscriptions.
func (a SubscriptionAdmin) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	b := a.b
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, s := range *t.subList.Load() {
		names = append(names, s.name)
	}
	return names, nil
}

// CreateSubscription adds a durable subscription positioned at id
// (Earliest, Latest or the entry to read first).
func (a SubscriptionAdmin) CreateSubscription(ctx context.Context, topic, name string, id MessageID) error {
	b := a.b
	if err := pulsarproto.CheckSubscriptionName(name); err != nil {
		return reason(ErrPreconditionFailed, err.Error())
	}
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return err
	}
	defer b.cursorsMoved(t)
	if strings.HasPrefix(name, ReplicatorPrefix+".") {
		return reason(ErrPreconditionFailed, "Subscription name "+name+" is reserved for replication")
	}
	pos := id.position()
	if !t.persistent() {
		return reason(ErrNotAllowed, "Create subscription on non-persistent topic is not supported")
	}
	t.mu.Lock()
	existing := t.mu.subs[name] != nil
	t.mu.Unlock()
	if existing {
		return reason(ErrAlreadyExists, "Subscription already exists for topic")
	}
	initial := initialLatest
	if position(mledger.Earliest) == pos {
		initial = initialEarliest
	}
	cur, err := t.ml.OpenCursor(name, initial)
	if err != nil {
		return err
	}
	if pos != position(mledger.Earliest) && pos != position(mledger.Latest) {
		if err := cur.Seek(pos); err != nil {
			return reason(ErrPreconditionFailed, "cannot position the subscription: "+err.Error())
		}
	}
	s := newSubscription(name, t.full, SubExclusive, t.partition, cur, dispatchEntryMeta, &t.b.tun.dispatchBatch, t.pol.unackedLimits, t.log)
	s.delayFn = t.pol.delayedDelivery
	s.consistentHashing = t.b.cfg.KeySharedUseConsistentHashing
	t.mu.Lock()
	if t.mu.subs[name] != nil {
		t.mu.Unlock()
		s.close()
		return reason(ErrAlreadyExists, "Subscription already exists for topic")
	}
	t.mu.subs[name] = s
	t.publishSubsLocked()
	t.limits.install(s)
	t.mu.Unlock()
	return nil
}

// DeleteSubscription deletes a subscription; without force it refuses
// one with connected consumers (ErrPreconditionFailed).
func (a SubscriptionAdmin) DeleteSubscription(ctx context.Context, topic, sub string, force bool) error {
	b := a.b
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return err
	}
	defer b.cursorsMoved(t)
	err = t.deleteSubscription(sub, force)
	var es *errSubscribe
	switch {
	case err == nil:
		return nil
	case errors.As(err, &es) && es.code == codeSubscriptionNotFound:
		return reason(ErrSubscriptionNotFound, "Subscription not found")
	case errors.As(err, &es):
		return reason(ErrPreconditionFailed, es.msg)
	}
	return err
}

// durableSub resolves a durable subscription of a loaded topic.
func (a SubscriptionAdmin) durableSub(ctx context.Context, topic, sub string) (*topic, *subscription, *cursorAdapter, error) {
	b := a.b
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return nil, nil, nil, err
	}
	t.mu.Lock()
	s := t.mu.subs[sub]
	t.mu.Unlock()
	if s == nil {
		return t, nil, nil, reason(ErrSubscriptionNotFound, "Subscription not found")
	}
	ca, ok := s.cur.(*cursorAdapter)
	if !ok {
		return t, nil, nil, reason(ErrNotAllowed, "operation not supported on this subscription")
	}
	return t, s, ca, nil
}

// SkipMessages skips n entries of the backlog (n < 0: all of it); the
// CursorObservers hear of it (a held producer may resume).
func (a SubscriptionAdmin) SkipMessages(ctx context.Context, topic, sub string, n int64) error {
	b := a.b
	t, s, ca, err := a.durableSub(ctx, topic, sub)
	if err != nil {
		return err
	}
	defer b.cursorsMoved(t)
	return skipBacklog(s, ca, n)
}

// ExpireMessages acknowledges the messages published more than secs
// ago, on sub or (sub == "") every subscription.
func (a SubscriptionAdmin) ExpireMessages(ctx context.Context, topic, sub string, secs int64) error {
	b := a.b
	if sub == "" {
		t, err := b.loadedOrLoad(ctx, topic)
		if err != nil {
			return err
		}
		defer b.cursorsMoved(t)
		for _, s := range *t.subList.Load() {
			if err := expireBacklog(s, secs, t.b.ext.system); err != nil {
				return err
			}
		}
		return nil
	}
	t, s, _, err := a.durableSub(ctx, topic, sub)
	if err != nil {
		return err
	}
	defer b.cursorsMoved(t)
	return expireBacklog(s, secs, t.b.ext.system)
}

// ResetCursor moves the subscription to id (or, byTime, to the first
// message published at or after tsMillis) and disconnects its
// consumers.
func (a SubscriptionAdmin) ResetCursor(ctx context.Context, topic, sub string, id MessageID, byTime bool, tsMillis int64) error {
	b := a.b
	t, s, _, err := a.durableSub(ctx, topic, sub)
	if err != nil {
		return err
	}
	defer b.cursorsMoved(t)
	done := make(chan struct{})
	t.seek(s, id.position(), byTime, tsMillis, func(e error) { err = e; close(done) })
	<-done
	return err
}

// PeekMessage returns the n-th (1-based) unacknowledged entry of the
// subscription's backlog.
func (a SubscriptionAdmin) PeekMessage(ctx context.Context, topic, sub string, n int64) (MessageID, []byte, error) {
	t, _, ca, err := a.durableSub(ctx, topic, sub)
	if err != nil {
		return MessageID{}, nil, err
	}
	ml := ca.ml
	pos := ca.c.MarkDeletePosition()
	ls := ml.Stats().Ledgers
	// Walk forward from mark-delete over unacknowledged entries.
	for n > 0 {
		next, ok := nextPosition(ls, pos)
		if !ok {
			return MessageID{}, nil, reason(ErrTopicNotFound, "Message not found")
		}
		pos = next
		if !ca.c.IsAcked(pos) {
			n--
		}
	}
	data, err := ml.ReadEntry(ctx, pos)
	if err != nil {
		return MessageID{}, nil, entryReadError(t.log, err)
	}
	return MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.partition, BatchIndex: -1}, data.Data, nil
}

// nextPosition returns the entry after p among ledgers ls.
func nextPosition(ls []mledger.LedgerInfo, p mledger.Position) (mledger.Position, bool) {
	for _, l := range ls {
		switch {
		case l.LedgerID < p.LedgerID:
			continue
		case l.LedgerID == p.LedgerID:
			if p.EntryID+1 < l.Entries {
				return mledger.Position{LedgerID: l.LedgerID, EntryID: p.EntryID + 1}, true
			}
		default:
			if l.Entries > 0 {
				return mledger.Position{LedgerID: l.LedgerID, EntryID: 0}, true
			}
		}
	}
	return mledger.Position{}, false
}

// SetReplicatedSubscription turns a durable subscription's
// replicated state on or off (docs/geo-replication.md).
func (a SubscriptionAdmin) SetReplicatedSubscription(ctx context.Context, topic, sub string, replicated bool) error {
	b := a.b
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return err
	}
	if !t.persistent() {
		return reason(ErrNotAllowed, "Replicated subscriptions need a persistent topic")
	}
	t.mu.Lock()
	s := t.mu.subs[sub]
	t.mu.Unlock()
	if s == nil {
		return reason(ErrSubscriptionNotFound, "Subscription not found")
	}
	if !s.cur.Durable() {
		return reason(ErrPreconditionFailed, "A non-durable subscription cannot be replicated")
	}
	return s.markReplicated(replicated)
}
