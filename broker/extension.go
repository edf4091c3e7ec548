package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// The core's extension points. A feature (transactions, broker entry
// metadata, ...) lives in a package of its own that imports broker, never
// the other way round: it implements some of the interfaces below and is
// registered with Broker.Use before Start. doc.go ("Extension points")
// states, for each hook, which goroutine calls it, the locks held and what
// it may do.

// Feature is a broker extension. Besides Name it implements one or more of
// PublishInterceptor, SendInterceptor, DispatchFilter, AckHook,
// TopicHook, LedgerHook, TopicTicker, AttachHook, DeletionObserver, CommandSource,
// BundleObserver, Lifecycle, CompactedReads, TopicPinner,
// SystemSubscriptions, PolicyWatcher, CursorObserver and Admission
// (limits.go), StoreObserver, PolicyObserver, ReplicatedSubscriptions,
// DedupRecovery and PublishLatencyObserver;
// Use finds them by type assertion, once, and registers every one it
// finds: a PublishInterceptor meant for single entries (Entry.Attach)
// must be a type of its own, or it is registered broker-wide too.
// Packages outside the core find interfaces of their own among
// Broker.Features (the stats sources of package topicstats).
type Feature interface {
	// Name names the feature in logs and errors.
	Name() string
}

// PublishInterceptor sees every entry the core appends to a persistent
// topic's managed ledger on behalf of a producer (broker-wide, registered
// with Use), or one entry (attached to it by a SendInterceptor with
// Entry.Attach).
type PublishInterceptor interface {
	// BeforeAdd runs right before e is appended to t's ledger, after
	// deduplication and backlog quotas, on the goroutine that publishes
	// (a connection reader, or one releasing held sends). For one topic,
	// broker-wide BeforeAdd calls are serialised and in append order (the
	// topic's add order is held across them and the append). It may
	// replace e's bytes (Entry.SetData). It must not block, take topic
	// locks or call back into the topic.
	BeforeAdd(t Topic, e *Entry)
	// AfterAdd runs in the managed ledger's callback once the append
	// completed (err nil: stored at pos), in append order, before the
	// producer is answered. It takes only leaf locks and never blocks.
	AfterAdd(t Topic, e *Entry, pos storage.Position, err error)
}

// SendInterceptor sees each SEND before the core publishes it, on the
// connection's reader goroutine, after the frame's checksum and the
// producer were checked and before deduplication and quotas. It may
// rewrite the entry (Entry.SetData), attach a PublishInterceptor to it
// (Entry.Attach), or refuse it by returning a *SendError (the core answers
// SEND_ERROR and stores nothing). A SEND carrying a transaction id must
// be claimed (an interceptor attached a hook to its entry), else the core
// refuses it with NotAllowed: transactions are then off.
//
// It must not wait for storage writes; bounded one-time setup on the
// topic (transactions create the topic's buffer on its first
// transactional SEND, one metadata write) is allowed.
type SendInterceptor interface {
	InterceptSend(p Producer, cmd *pb.CommandSend, e *Entry) error
}

// SendError refuses a SEND with a ServerError code and message.
type SendError struct {
	Code pb.ServerError
	Msg  string
}

func (e *SendError) Error() string { return e.Msg }

// DispatchFilter decides which stored entries are never delivered. The
// read bound, the other half of the dispatch seam, is set per topic with
// Topic.SetReadBound.
type DispatchFilter interface {
	// SkipEntry reports whether an entry of t (not a marker: markers are
	// always skipped) is never delivered: subscriptions acknowledge it
	// as they read it, and GET_LAST_MESSAGE_ID steps over it. It runs on
	// subscription loops and on connection readers; it must not block or
	// take topic or subscription locks. m is nil for an entry whose
	// metadata does not parse.
	SkipEntry(t Topic, m *pulsarproto.Metadata) bool
}

// AckHook takes part in acknowledgements.
type AckHook interface {
	// InterceptAck runs on the connection's reader goroutine for each
	// ACK of an attached consumer. It reports whether it took the ACK;
	// it then answers it (AckRequest.Reply) and the core does nothing
	// more. Work on the subscription's state goes through
	// Subscription.Do. An ACK carrying a transaction id that no hook took
	// is refused with NotAllowed.
	InterceptAck(r *AckRequest) bool
	// HeldEntry runs on the subscription's loop for each entry dispatch
	// reads that is not skipped, and for each entry a pass takes from
	// the replay set: true withholds the entry (the hook keeps
	// w and answers for it: it is neither delivered nor acknowledged now;
	// SubLoop.Redeliver puts it back). It must not block.
	HeldEntry(s SubLoop, w Withheld) bool
}

// TopicHook follows the life of every loaded topic (persistent or not).
type TopicHook interface {
	// LoadTopic runs while t loads: after its managed ledger and
	// subscriptions are open, before anyone can publish to it or attach
	// to it. It may do storage and metadata I/O. An error fails the load
	// (the client retries). TopicSlot.Set is allowed here only.
	LoadTopic(ctx context.Context, t Topic) error
	// CloseTopic runs when t closes (unload, delete, shutdown) after its
	// producers and consumers were detached and its subscriptions
	// stopped, before its managed ledger is closed. No topic lock is held.
	CloseTopic(t Topic)
}

// LedgerHook sees a persistent topic's managed ledger right after it
// opened at load, before anything reads or writes it (deduplication
// recovery, the subscriptions' cursors): tiered storage hands it its
// offload policy here. It runs on the loading goroutine, no lock held;
// the topic's effective policy is set. It must not block.
type LedgerHook interface {
	LedgerOpened(t Topic)
}

// TopicTicker is called for every loaded topic on the stats loop, every
// Config.StatsUpdateInterval. It must return quickly; no lock is held.
type TopicTicker interface {
	TickTopic(t Topic)
}

// AttachHook takes part in attaching producers (PRODUCER) and consumers
// (SUBSCRIBE): the schema registry checks the client's schema here. Both
// run on the connection's reader goroutine, in frame order, once the
// topic is loaded and the core's own checks (policies, encryption,
// subscribe rate) passed, before the producer or consumer is added; ctx
// bounds the request. They may do metadata I/O; they must not publish or
// take topic locks. A refusal is an *AttachError (its code and message
// go to the client; any other error is answered ServiceNotReady), and
// nothing is attached.
type AttachHook interface {
	// AttachProducer returns the schema version PRODUCER_SUCCESS reports
	// (nil: none; the first hook's non-nil version is reported).
	AttachProducer(ctx context.Context, t Topic, cmd *pb.CommandProducer) (schemaVersion []byte, err error)
	AttachConsumer(ctx context.Context, t Topic, cmd *pb.CommandSubscribe) error
}

// AttachError refuses a producer or consumer with a ServerError code and
// message.
type AttachError struct {
	Code pb.ServerError
	Msg  string
}

func (e *AttachError) Error() string { return e.Msg }

// DeletionObserver hears that a topic was deleted (the admin API, or the
// deletion of an inactive topic) once its metadata is gone: each
// partition, then the partitioned topic itself. It runs on the deleting
// goroutine, with no lock held, and may do metadata I/O bounded by ctx;
// it cannot fail the deletion (it logs what it could not do).
type DeletionObserver interface {
	TopicDeleted(ctx context.Context, name pulsarproto.TopicName)
}

// BundleObserver hears that this broker no longer serves a bundle (unload,
// lost session): its topics are already closed.
type BundleObserver interface {
	BundleReleased(key string)
}

// Lifecycle is a feature with work of its own. Start runs in Broker.Start
// once the metadata is bootstrapped, the listeners are bound and the
// cluster membership (if any) is up, before the first connection is
// accepted; an error fails Start. Close runs in Broker.Close after every
// connection stopped and before the topics close.
type Lifecycle interface {
	Start(ctx context.Context) error
	Close()
}

// CompactedReads serves read_compacted subscriptions (the compaction
// feature). Without it they read the topic as any other subscription.
type CompactedReads interface {
	// CompactedCursor returns the cursor a read_compacted subscription of
	// t reads through, built over c, the subscription's cursor on t's
	// ledger (nil: c as it is). It runs where the subscription is
	// created, or on its loop when an existing one without consumers
	// switches; the cursor it returns is the loop's alone afterwards. A
	// returned cursor may implement LastReadableCursor, and Unwrap()
	// Cursor (returning c).
	CompactedCursor(t Topic, c storage.Cursor) storage.Cursor
}

// LastReadableCursor is a cursor that reads a view of its topic (the
// compacted one): GET_LAST_MESSAGE_ID asks it, off the subscription's
// loop, for the last message its subscription can get when lac is the
// topic's last entry (applies false: lac is readable as it is).
type LastReadableCursor interface {
	LastReadable(lac storage.Position) (pos storage.Position, batchIndex int32, ok, applies bool)
}

// TopicPinner keeps a topic loaded: Topic.IdleUnloadable is false, and
// the idle unloader leaves t alone, while Pinned(t) (a compaction
// running). Called on the unloader's goroutines; it must be quick and
// take no topic lock.
type TopicPinner interface {
	Pinned(t Topic) bool
}

// SystemSubscriptions names subscriptions a feature keeps for its own
// use (the compaction cursor): message TTL and backlog-quota eviction
// leave them alone.
type SystemSubscriptions interface {
	SystemSubscriptions() []string
}

// DedupRecovery rebuilds a persistent topic's deduplication state at
// load (the deduplication snapshots, package dedupsnap); without one the
// core reads the last Config.DedupRecoveryEntries entries.
type DedupRecovery interface {
	// DedupCursor names the cursor the feature keeps on every
	// deduplicating topic: the core loads no subscription for it.
	DedupCursor() string
	// RecoverDedup runs while a deduplicating t loads, before its
	// subscriptions load and anyone can publish, and returns the highest
	// stored sequence id per producer name. It may do storage I/O. An
	// error fails the load (the client retries).
	RecoverDedup(ctx context.Context, t Topic) (map[string]uint64, error)
}

// StoreObserver hears that an entry was stored on a persistent topic: a
// producer's (marker false, unless it is a marker a replicator producer
// brought) or one a feature appended (Topic.Append: marker true). It runs
// in the managed ledger's callback, in append order, after the topic's
// subscriptions were woken; it must not block or take topic locks.
type StoreObserver interface {
	Stored(t Topic, marker bool)
}

// PolicyObserver hears that a loaded topic's effective policy was
// resolved again (its namespace's or its own policies changed, or the
// periodic refresh) and applied by the core, on the goroutine that
// refreshed it, no lock held. It is not called for the policy a topic
// loads with (TopicHook.LoadTopic sees that one).
type PolicyObserver interface {
	PolicyApplied(t Topic)
}

// PublishLatencyObserver hears, for every entry a producer stored on a
// persistent topic, the time from its SEND handed to the topic to the
// storage callback that makes it acknowledgeable (the metrics'
// magnetar_broker_publish_latency_seconds). It runs in the managed
// ledger's callback; it must not block or take locks beyond a leaf one.
type PublishLatencyObserver interface {
	ObservePublishLatency(d time.Duration)
}

// observePublish tells the PublishLatencyObservers how long the entry
// published at start took to be stored.
func (x *extensions) observePublish(start time.Time) {
	if len(x.latency) == 0 {
		return
	}
	d := time.Since(start)
	for _, h := range x.latency {
		h.ObservePublishLatency(d)
	}
}

// ReplicatedSubscriptions carries the positions of replicated
// subscriptions to other clusters (geo-replication). The core keeps
// whether a subscription is replicated (Subscription.Replicated,
// persisted with its cursor) and calls the feature, on the
// subscription's loop, for replicated subscriptions of persistent topics
// only. At most one feature serves it.
type ReplicatedSubscriptions interface {
	// MarkerRead runs for each marker entry (marker_type) the
	// subscription's dispatch reads, once the core acknowledged it
	// (markers are never delivered). data is the stored entry.
	MarkerRead(l SubLoop, marker int32, data []byte)
	// MarkDeleteMoved runs after acknowledgements that may have moved
	// the subscription's mark-delete position.
	MarkDeleteMoved(l SubLoop)
}

// CommandSource serves binary-protocol commands the core does not.
type CommandSource interface {
	Commands() []Command
}

// Command is one command type served by a feature.
type Command struct {
	Type pb.BaseCommand_Type
	// SuperUserOnly and Access are the command's authorization rule,
	// which the CommandAuthorizer applies when authorization is on
	// (access.go; package brokerauthz). SuperUserOnly: a command from a
	// connection whose roles are not all superusers is refused with
	// AuthorizationError and never reaches Handle.
	SuperUserOnly bool
	// Access, if set, names the topic the command acts on and what the
	// connection's roles need there: a command from a connection one of
	// whose roles lacks it is refused with AuthorizationError and never
	// reaches Handle. A topic name that does not parse is left to
	// Handle.
	Access func(cmd *pb.BaseCommand) (topic string, need TopicPermission)
	// Handle runs on the connection's reader goroutine, in frame order.
	// It must not block: work that waits (storage, metadata, another
	// broker) runs on a goroutine of its own and answers with Conn.Send.
	// A non-nil error closes the connection (a protocol violation).
	Handle func(c Conn, cmd *pb.BaseCommand) error
}

// TopicPermission is what a command needs on its topic (Command.Access).
type TopicPermission int

const (
	// PermitLookup: looking the topic up (its producers, consumers and
	// tenant admins may).
	PermitLookup TopicPermission = iota + 1
	// PermitProduce: producing to the topic.
	PermitProduce
)

// extensions are the registered features' hooks, fixed at Start.
type extensions struct {
	all     []Feature // in Use order
	names   []string
	publish []PublishInterceptor
	send    []SendInterceptor
	filters []DispatchFilter
	acks    []AckHook
	topics  []TopicHook
	// topicNames names the features of topics, for errors.
	topicNames []string
	tickers    []TopicTicker
	ledgers    []LedgerHook
	attach     []AttachHook
	deletions  []DeletionObserver
	bundles    []BundleObserver
	lifecycle  []Lifecycle
	commands   map[pb.BaseCommand_Type]Command
	compacted  CompactedReads
	pinners    []TopicPinner
	system     map[string]bool // SystemSubscriptions
	policy     PolicyWatcher   // limits.go
	admission  []Admission     // limits.go
	cursors    []CursorObserver
	stored     []StoreObserver
	policyObs  []PolicyObserver
	latency    []PublishLatencyObserver
	replSubs   ReplicatedSubscriptions
	dedup      DedupRecovery
	access     CommandAuthorizer // access.go
	// topicSlots and subSlots count the slots handed out.
	topicSlots, subSlots int
}

// ErrStarted reports a registration after Start.
var ErrStarted = errors.New("broker: already started")

// Use registers feature f. It must be called before Start; a command type
// registered twice, or one the core serves itself, is an error.
func (b *Broker) Use(f Feature) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.started {
		return fmt.Errorf("%w: feature %s registered after Start", ErrStarted, f.Name())
	}
	x := &b.ext
	if _, ok := f.(CompactedReads); ok && x.compacted != nil {
		return fmt.Errorf("%w: feature %s serves read_compacted, already served", ErrBadConfig, f.Name())
	}
	if _, ok := f.(PolicyWatcher); ok && x.policy != nil {
		return fmt.Errorf("%w: feature %s watches policies, already watched", ErrBadConfig, f.Name())
	}
	if _, ok := f.(CommandAuthorizer); ok && x.access != nil {
		return fmt.Errorf("%w: feature %s authorizes commands, already authorized", ErrBadConfig, f.Name())
	}
	if _, ok := f.(ReplicatedSubscriptions); ok && x.replSubs != nil {
		return fmt.Errorf("%w: feature %s serves replicated subscriptions, already served", ErrBadConfig, f.Name())
	}
	var cmds []Command
	if cs, ok := f.(CommandSource); ok {
		cmds = cs.Commands()
		seen := map[pb.BaseCommand_Type]bool{}
		for _, c := range cmds {
			switch {
			case CommandRoute(c.Type) == RouteCore || CommandRoute(c.Type) == RouteAuthorized:
				return fmt.Errorf("%w: feature %s serves %s, which the core serves", ErrBadConfig, f.Name(), c.Type)
			case CommandRoute(c.Type) != RouteFeature:
				return fmt.Errorf("%w: feature %s serves %s, which is not a request", ErrBadConfig, f.Name(), c.Type)
			case seen[c.Type] || x.commands[c.Type].Handle != nil:
				return fmt.Errorf("%w: feature %s serves %s, already registered", ErrBadConfig, f.Name(), c.Type)
			case c.Handle == nil:
				return fmt.Errorf("%w: feature %s: %s has no handler", ErrBadConfig, f.Name(), c.Type)
			}
			seen[c.Type] = true
		}
	}
	for _, c := range cmds {
		if x.commands == nil {
			x.commands = map[pb.BaseCommand_Type]Command{}
		}
		x.commands[c.Type] = c
	}
	x.all = append(x.all, f)
	x.names = append(x.names, f.Name())
	collect(f, &x.publish)
	collect(f, &x.send)
	collect(f, &x.filters)
	collect(f, &x.acks)
	if h, ok := f.(TopicHook); ok {
		x.topics = append(x.topics, h)
		x.topicNames = append(x.topicNames, f.Name())
	}
	collect(f, &x.tickers)
	collect(f, &x.ledgers)
	collect(f, &x.attach)
	collect(f, &x.deletions)
	collect(f, &x.bundles)
	setOne(f, &x.compacted)
	collect(f, &x.pinners)
	if h, ok := f.(SystemSubscriptions); ok {
		for _, n := range h.SystemSubscriptions() {
			if x.system == nil {
				x.system = map[string]bool{}
			}
			x.system[n] = true
		}
	}
	setOne(f, &x.policy)
	collect(f, &x.admission)
	collect(f, &x.cursors)
	collect(f, &x.stored)
	collect(f, &x.policyObs)
	collect(f, &x.latency)
	setOne(f, &x.replSubs)
	setOne(f, &x.dedup)
	setOne(f, &x.access)
	collect(f, &x.lifecycle)
	return nil
}

// Features returns the registered features, in Use order (fixed once
// the broker started).
func (b *Broker) Features() []Feature {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.ext.all)
}

// TopicSlot is one feature's value on each loaded topic (nil until set).
// Get it with NewTopicSlot before Start.
type TopicSlot[T any] struct{ i int }

// NewTopicSlot reserves a per-topic slot on b. It must be called before
// Start.
func NewTopicSlot[T any](b *Broker) TopicSlot[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.started {
		panic("BUG: broker: NewTopicSlot after Start")
	}
	b.ext.topicSlots++
	return TopicSlot[T]{i: b.ext.topicSlots - 1}
}

// Get returns t's value, or nil. Safe from any goroutine once t is
// loaded.
func (s TopicSlot[T]) Get(t Topic) *T {
	if s.i >= len(t.t.slots) {
		return nil
	}
	v, _ := t.t.slots[s.i].(*T)
	return v
}

// Set stores t's value. Only TopicHook.LoadTopic may call it (the topic
// is not yet visible to other goroutines).
func (s TopicSlot[T]) Set(t Topic, v *T) {
	if t.t.slots == nil {
		t.t.slots = make([]any, t.t.b.ext.topicSlots)
	}
	t.t.slots[s.i] = v
}

// SubSlot is one feature's value on each subscription, owned by the
// subscription's loop (nil until set).
type SubSlot[T any] struct{ i int }

// NewSubSlot reserves a per-subscription slot on b. It must be called
// before Start.
func NewSubSlot[T any](b *Broker) SubSlot[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.started {
		panic("BUG: broker: NewSubSlot after Start")
	}
	b.ext.subSlots++
	return SubSlot[T]{i: b.ext.subSlots - 1}
}

// Get returns the subscription's value, or nil (loop only).
func (s SubSlot[T]) Get(l SubLoop) *T {
	if s.i >= len(l.s.slots) {
		return nil
	}
	v, _ := l.s.slots[s.i].(*T)
	return v
}

// Set stores the subscription's value (loop only).
func (s SubSlot[T]) Set(l SubLoop, v *T) {
	if s.i >= len(l.s.slots) {
		l.s.slots = append(l.s.slots, make([]any, s.i+1-len(l.s.slots))...)
	}
	l.s.slots[s.i] = v
}

// attachProducer runs the AttachHooks for a PRODUCER on t: the schema
// version to report, or a refusal's code and message (ok false).
func (x *extensions) attachProducer(ctx context.Context, t *topic, m *pb.CommandProducer) (version []byte, code int32, msg string, ok bool) {
	for _, h := range x.attach {
		v, err := h.AttachProducer(ctx, Topic{t}, m)
		if err != nil {
			code, msg := attachRefusal(err)
			return nil, code, msg, false
		}
		if version == nil {
			version = v
		}
	}
	return version, 0, "", true
}

// attachConsumer runs the AttachHooks for a SUBSCRIBE on t.
func (x *extensions) attachConsumer(ctx context.Context, t *topic, m *pb.CommandSubscribe) (code int32, msg string, ok bool) {
	for _, h := range x.attach {
		if err := h.AttachConsumer(ctx, Topic{t}, m); err != nil {
			code, msg := attachRefusal(err)
			return code, msg, false
		}
	}
	return 0, "", true
}

func attachRefusal(err error) (int32, string) {
	var ae *AttachError
	if errors.As(err, &ae) {
		return int32(ae.Code), ae.Msg
	}
	return codeServiceNotReady, err.Error()
}

// topicDeleted tells the DeletionObservers that tn was deleted.
func (x *extensions) topicDeleted(ctx context.Context, tn topicName) {
	for _, h := range x.deletions {
		h.TopicDeleted(ctx, tn)
	}
}

// loadTopic runs the TopicHooks' LoadTopic on a loading topic.
func (x *extensions) loadTopic(ctx context.Context, t *topic) error {
	for i, h := range x.topics {
		if err := h.LoadTopic(ctx, Topic{t}); err != nil {
			return fmt.Errorf("broker: load %s: %s: %w", t.name.String(), x.topicNames[i], err)
		}
	}
	return nil
}

// entryStored tells the StoreObservers that an entry was stored on t.
func (x *extensions) entryStored(t *topic, marker bool) {
	for _, h := range x.stored {
		h.Stored(Topic{t}, marker)
	}
}

// skipEntry reports whether one of filters (a topic's DispatchFilters)
// skips an entry of t (md nil: its metadata did not parse).
func skipEntry(filters []DispatchFilter, t Topic, md *pulsarproto.Metadata) bool {
	for _, f := range filters {
		if f.SkipEntry(t, md) {
			return true
		}
	}
	return false
}

// collect appends f to *list when f implements the list's hook type.
func collect[T any](f Feature, list *[]T) {
	if h, ok := f.(T); ok {
		*list = append(*list, h)
	}
}

// setOne sets *one to f when f implements its hook type (Use has refused
// a second feature of the kinds only one may serve).
func setOne[T any](f Feature, one *T) {
	if h, ok := f.(T); ok {
		*one = h
	}
}
