package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/magnetar-mq/magnetar/broker/dispatch"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// The views features get of the core's topics, subscriptions, producers
// and connections (extension.go). They are small values over the core's
// types: what a feature may do is exactly their methods.

// Topic is a feature's view of one loaded topic. It is safe for
// concurrent use; none of its methods takes topic.mu.
type Topic struct{ t *topic }

// Name returns the topic's canonical name (persistent://t/n/x).
func (v Topic) Name() string { return v.t.name.String() }

// TopicName returns the topic's parsed name.
func (v Topic) TopicName() pulsarproto.TopicName { return v.t.name }

// Persistent reports whether the topic is stored (Ledger is not nil).
func (v Topic) Persistent() bool { return v.t.persistent() }

// Ledger returns the topic's managed ledger (nil for a non-persistent
// topic). Features read from it; they append only through Append.
func (v Topic) Ledger() storage.ManagedLedger { return v.t.ml }

// ReadEntry reads one stored entry. A position no longer stored is
// ErrTopicNotFound ("Message not found"), as the admin API reports it.
func (v Topic) ReadEntry(pos storage.Position) ([]byte, error) {
	data, err := v.t.ml.ReadEntry(pos)
	if err != nil {
		return nil, entryReadError(v.t.log, err)
	}
	return data, nil
}

// entryReadError maps a failed admin read of a topic's entry: an
// unreachable object store (or a missing offloader) is ErrUnavailable
// with a reason that names no endpoint, bucket or path (the cause, which
// may, goes to the log); anything else "Message not found" (the cause,
// which names ledgers and storage layers, is logged at debug level).
func entryReadError(log *slog.Logger, err error) error {
	switch {
	case errors.Is(err, mledger.ErrOffloadStoreUnavailable):
		log.Warn("reading offloaded data failed", "err", err)
		return reason(ErrUnavailable, "Offloaded data cannot be read now: object store unavailable")
	case errors.Is(err, mledger.ErrNoOffloader):
		log.Warn("reading offloaded data failed", "err", err)
		return reason(ErrUnavailable, "Offloaded data cannot be read: no offloader configured")
	}
	log.Debug("admin read of an entry failed", "err", err)
	return reason(ErrTopicNotFound, "Message not found")
}

// Logger returns the broker's logger.
func (v Topic) Logger() *slog.Logger { return v.t.log }

// Closed reports whether the topic was closed (unload, delete, shutdown).
func (v Topic) Closed() bool { return v.t.isClosed() }

// Subscription returns the named subscription of the topic.
func (v Topic) Subscription(name string) (Subscription, bool) {
	v.t.mu.Lock()
	s := v.t.mu.subs.get(name)
	v.t.mu.Unlock()
	return Subscription{s}, s != nil
}

// ErrNoReadBound reports storage that cannot hold readers before a
// position.
var ErrNoReadBound = errors.New("broker: the topic's storage cannot bound reads")

// readBounder is implemented by storage that can hold cursors before a
// position (the mledger adapter).
type readBounder interface {
	SetReadBound(func() (position, bool))
}

// SetReadBound makes every cursor of the topic read, and count backlog,
// only before the position f returns (exclusive; false: no bound). The
// managed ledger calls f under its own lock on every read: f must be
// cheap and lock-free. From then on GET_LAST_MESSAGE_ID names the last
// entry before the bound that is neither a marker nor skipped by a
// DispatchFilter.
func (v Topic) SetReadBound(f func() (storage.Position, bool)) error {
	rb, ok := v.t.ml.(readBounder)
	if !ok {
		return ErrNoReadBound
	}
	rb.SetReadBound(f)
	if f == nil {
		v.t.readBound.Store(nil)
	} else {
		v.t.readBound.Store(&f)
	}
	return nil
}

// Append stores an entry the broker makes itself (a marker): buf[off:]
// with buf[:off] free room of at least mledger.EntryHeadroom. It is
// refused with ErrClosed while the topic stops publishing (unload) or is
// no longer owned; else cb runs once the entry is durable (or failed), in
// append order. Broker-wide PublishInterceptors do not see it (BeforeAdd
// and AfterAdd are for producers' entries); subscriptions are woken once
// it is stored. cb takes only leaf locks.
func (v Topic) Append(buf []byte, off int, cb func(storage.Position, error)) error {
	t := v.t
	if !t.persistent() {
		return fmt.Errorf("%w: %s is not persistent", ErrNotAllowed, t.name.String())
	}
	t.pub.RLock()
	defer t.pub.RUnlock()
	if t.pub.stopped || !t.b.cluster.owns(t) {
		return reason(ErrClosed, "Topic is being unloaded")
	}
	t.adds.Add(1)
	t.ml.AddEntry(buf, off, 1, func(pos position, err error) {
		defer t.adds.Done()
		cb(pos, err)
		if err == nil {
			t.wakeSubs()
			t.b.ext.entryStored(t, true)
		}
	})
	return nil
}

// Wake tells the topic's subscriptions that more entries may be
// deliverable (a transaction ended, a read bound moved).
func (v Topic) Wake() { v.t.wakeSubs() }

// Subscription is a feature's handle on one subscription, usable from
// any goroutine. The zero value is not a subscription.
type Subscription struct{ s *subscription }

// Name returns the subscription's name.
func (v Subscription) Name() string { return v.s.Name() }

// Do runs f on the subscription's loop, asynchronously. It reports false
// if the subscription is closed (f then never runs).
func (v Subscription) Do(f func(SubLoop)) bool {
	s := v.s
	return s.Do(func() { f(SubLoop{s}) })
}

// Call runs f on the subscription's loop and waits for it. It reports
// false if the subscription closed before f ran. Never call it from the
// loop itself, or with topic locks held.
func (v Subscription) Call(f func(SubLoop)) bool {
	s := v.s
	return s.Call(func() { f(SubLoop{s}) })
}

// FlushCursor persists the cursor's acknowledgement state now (nothing
// for a non-durable subscription). Storage I/O: not from the loop.
func (v Subscription) FlushCursor(ctx context.Context) error {
	if v.s.mc == nil {
		return nil
	}
	return v.s.mc.Flush(ctx)
}

// SubLoop is the subscription as its loop goroutine sees it: valid only
// on the loop (inside Subscription.Do and Call, and the hooks that run on
// the loop). Its methods change dispatch state as the core's own acks
// and redeliveries do.
type SubLoop struct{ s *subscription }

// Subscription returns the handle of the subscription.
func (l SubLoop) Subscription() Subscription { return Subscription(l) }

// Name returns the subscription's name.
func (l SubLoop) Name() string { return l.s.Name() }

// TopicName returns the subscription's topic name.
func (l SubLoop) TopicName() string { return l.s.TopicName() }

// Type returns the subscription type.
func (l SubLoop) Type() SubType { return l.s.Type() }

// Logger returns the subscription's logger.
func (l SubLoop) Logger() *slog.Logger { return l.s.Logger() }

// MarkDelete returns the cursor's mark-delete position.
func (l SubLoop) MarkDelete() storage.Position { return l.s.Cursor().MarkDelete() }

// IsAcked reports whether pos is acknowledged.
func (l SubLoop) IsAcked(pos storage.Position) bool { return l.s.Cursor().IsAcked(pos) }

// BatchAckSet returns the still-unacknowledged bits of a partially
// acknowledged batch entry, or nil.
func (l SubLoop) BatchAckSet(pos storage.Position) []int64 { return l.s.Cursor().BatchAckSet(pos) }

// PendingMessages returns the message count of an entry delivered and not
// yet acknowledged (false: not pending).
func (l SubLoop) PendingMessages(pos storage.Position) (int, bool) {
	return l.s.PendingMessages(pos)
}

// Withheld is an entry a feature took out of delivery (SubLoop.Withhold,
// AckHook.HeldEntry); Redeliver puts it back.
type Withheld struct{ e *dispatch.Entry }

// Pos returns the entry's position.
func (w Withheld) Pos() storage.Position { return w.e.Pos() }

// Messages returns the entry's message count.
func (w Withheld) Messages() int { return w.e.Messages() }

// Withhold takes a delivered entry out of its consumer's unacked
// messages (false: pos is not pending). An entry waiting for redelivery
// is withheld when dispatch takes it: AckHook.HeldEntry is asked then.
func (l SubLoop) Withhold(pos storage.Position) (Withheld, bool) {
	e := l.s.Withhold(pos)
	return Withheld{e}, e != nil
}

// Redeliver puts a withheld entry back for delivery (in position order,
// before new entries), unless it was acknowledged meanwhile.
func (l SubLoop) Redeliver(w Withheld) { l.s.Return(w.e) }

// Requeue sends a delivered, unacknowledged entry back for redelivery
// (whole: a partially acknowledged batch goes back with all its
// messages); nothing if pos is not pending.
func (l SubLoop) Requeue(pos storage.Position) { l.s.Requeue(pos) }

// Acks are acknowledgements a feature applies on behalf of the
// subscription (transactions commit their pending acks so); EntryAck
// and BatchAck are their parts (package broker/dispatch's types).
type (
	Acks     = dispatch.Acks
	EntryAck = dispatch.EntryAck
	BatchAck = dispatch.BatchAck
)

// Acknowledge applies a to the cursor and the dispatch state (pending
// entries, replay and redelivery sets, unacked counts, stats) as consumer
// acks do, then dispatches.
func (l SubLoop) Acknowledge(a Acks) { l.s.Acknowledge(a) }

// Dispatch delivers what permits allow now (after unblocking consumers
// whose unacked count fell, as withheld or requeued entries change it).
func (l SubLoop) Dispatch() { l.s.Dispatch() }

// NoteAck records an acknowledgement by r's consumer in the
// subscription's and consumer's stats (last ack time).
func (l SubLoop) NoteAck(r *AckRequest) { l.s.NoteAck(r.cc.c) }

// Producer is a feature's view of one producer.
type Producer struct{ p *producer }

// Topic returns the producer's topic.
func (v Producer) Topic() Topic { return Topic{v.p.topic} }

// Name returns the producer's name.
func (v Producer) Name() string { return v.p.name }

// Conn is a feature's view of one client connection.
type Conn struct{ c *conn }

// Send queues cmd (payload-less) on the connection; safe from any
// goroutine, never blocks. A closed connection drops it.
func (v Conn) Send(cmd *pb.BaseCommand) { v.c.sendSimple(cmd) }

// Logger returns the connection's logger.
func (v Conn) Logger() *slog.Logger { return v.c.log }

// Entry is one entry on its way to storage: the bytes a SEND carried
// (buf[off:], zero-copy: see entryBuf in doc.go) and its
// MessageMetadata, parsed once when the SEND was read and passed down
// every stage of the publish path.
type Entry struct {
	buf []byte
	off int
	// frame is the parsed layout of buf[off:]; md its metadata, valid
	// when mdOK.
	frame pulsarproto.Entry
	md    pulsarproto.Metadata
	mdOK  bool
	hook  PublishInterceptor
	// msgs is the SEND's message count, set when it is published.
	msgs int
}

// Data returns the entry's bytes. They must not be modified.
func (e *Entry) Data() []byte { return e.buf[e.off:] }

// Meta returns the parsed MessageMetadata, or nil when it did not parse
// (such an entry is stored as sent and delivered for the client to
// judge). A SendInterceptor that rewrites the entry updates the fields
// it changed.
func (e *Entry) Meta() *pulsarproto.Metadata {
	if !e.mdOK {
		return nil
	}
	return &e.md
}

// Messages returns the number of messages the entry holds (the SEND's
// num_messages), known once it is published (BeforeAdd on).
func (e *Entry) Messages() int { return max(e.msgs, 1) }

// Sections returns the serialized MessageMetadata and the payload of the
// entry as parsed at SEND (slices of Data).
func (e *Entry) Sections() (metadata, payload []byte) { return e.frame.Metadata, e.frame.Payload }

// SetData replaces the entry's bytes with buf[off:]; buf[:off] is free
// room of at least mledger.EntryHeadroom that storage may overwrite.
// The caller keeps Meta describing the new bytes.
func (e *Entry) SetData(buf []byte, off int) {
	if off < mledger.EntryHeadroom {
		panic("BUG: broker: Entry.SetData without headroom")
	}
	e.buf, e.off = buf, off
	e.frame = pulsarproto.Entry{}
}

// Attach makes h see this entry's append (BeforeAdd, AfterAdd), after the
// broker-wide interceptors. One hook per entry.
func (e *Entry) Attach(h PublishInterceptor) {
	if e.hook != nil {
		panic("BUG: broker: a second hook attached to an entry")
	}
	e.hook = h
}

// AckID is one acknowledged message id of an ACK (package
// broker/dispatch's).
type AckID = dispatch.AckID

// AckRequest is an ACK as an AckHook sees it.
type AckRequest struct {
	Cmd   *pb.CommandAck
	IDs   []AckID
	Topic Topic
	Sub   Subscription

	conn *conn
	cc   *connConsumer
}

// Reply answers the ACK with ACK_RESPONSE when the client asked for one
// (code 0: success). Safe from any goroutine.
func (r *AckRequest) Reply(code pb.ServerError, msg string) {
	if r.Cmd.RequestId == nil {
		return
	}
	if msg == "" && code != 0 {
		msg = code.String()
	}
	r.conn.sendAckResponse(r.Cmd.GetConsumerId(), r.Cmd.GetRequestId(), int32(code), msg)
}

// What a feature may use of the broker itself, besides Use and the
// slots.

// Metadata returns the broker's metadata store (Deps.Metadata). Features
// keep their state there, under paths of their own.
func (b *Broker) Metadata() metadata.Store { return b.deps.Metadata }

// OpenLedger opens (creating it if needed) a managed ledger of a
// feature's own, such as a log, through Deps.OpenLedger.
func (b *Broker) OpenLedger(ctx context.Context, name string) (storage.ManagedLedger, error) {
	return b.deps.OpenLedger(ctx, name)
}

// Config returns the broker's configuration (defaults applied).
func (b *Broker) Config() brokerconf.Config { return b.cfg }

// Logger returns the broker's logger.
func (b *Broker) Logger() *slog.Logger { return b.log }

// Topic returns the view of a topic, loading it if it exists (never
// creating it): ErrTopicNotFound or ErrNamespaceNotFound if it does not,
// Ownership.NotOwned's error if another broker serves it.
func (b *Broker) Topic(ctx context.Context, name string) (Topic, error) {
	t, err := b.loadedOrLoad(ctx, name)
	if err != nil {
		return Topic{}, err
	}
	return Topic{t}, nil
}

// OwnedBundle returns the key of the bundle holding topic if this broker
// serves it ("" on a single node), or the membership's refusal
// (Ownership.TopicBundle).
func (b *Broker) OwnedBundle(ctx context.Context, topic string) (string, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return "", err
	}
	return b.cluster.topicBundle(ctx, tn)
}

// PositionBefore returns the last entry stored before pos (false: none).
func (v Topic) PositionBefore(pos storage.Position) (storage.Position, bool) {
	return prevPosition(v.t.ml.Stats().Ledgers, pos)
}

// EscapeName escapes a name (a topic's local name, a subscription) for
// one metadata path segment, as the broker's own paths do; UnescapeName
// reverses it.
func EscapeName(s string) string { return topicreg.EscapeLocal(s) }

// UnescapeName reverses EscapeName.
func UnescapeName(s string) string { return topicreg.UnescapeLocal(s) }

// Subscriptions returns the topic's subscriptions now.
func (v Topic) Subscriptions() []Subscription {
	subs := *v.t.subList.Load()
	out := make([]Subscription, len(subs))
	for i, s := range subs {
		out[i] = Subscription{s}
	}
	return out
}

// OpenSubscription returns the named durable subscription of a
// persistent topic, creating it (and its cursor, at the first retained
// entry) if needed. A feature keeps its own cursors so (the compaction
// cursor); it reports them with SystemSubscriptions.
func (v Topic) OpenSubscription(name string) (Subscription, error) {
	s, err := v.t.getOrCreateSub(subscribeReq{sub: name, typ: SubExclusive, durable: true, initial: initialEarliest})
	if err != nil {
		return Subscription{}, err
	}
	return Subscription{s}, nil
}

// Managed returns the managed ledger behind the topic's storage, for the
// features that work on it directly (compaction); nil for a
// non-persistent topic or storage that is not an mledger.
func (v Topic) Managed() *mledger.ManagedLedger {
	if a, ok := v.t.ml.(*storage.Ledger); ok {
		return a.Managed()
	}
	return nil
}

// Policies returns the policies of the topic's namespace (nil when they
// cannot be read now).
func (v Topic) Policies() *policy.Policies {
	return v.t.b.namespacePolicies(v.t.name.NamespaceName())
}

// Cursor returns the subscription's cursor (loop only).
func (l SubLoop) Cursor() storage.Cursor { return l.s.Cursor() }

// EachTopic calls fn for every loaded topic until it returns false.
func (b *Broker) EachTopic(fn func(Topic) bool) {
	for t := range b.everyLoaded("") {
		if !fn(Topic{t}) {
			return
		}
	}
}

// EffectivePolicy returns the topic's effective policy now (its
// topic-level policies over its namespace's over the broker defaults),
// a snapshot swapped whole when it changes (PolicyObserver). Never nil.
func (v Topic) EffectivePolicy() *policy.Resolved { return v.t.pol.Load() }

// Replicated reports whether the subscription is replicated
// (replicate_subscription_state, or set by the admin API).
func (v Subscription) Replicated() bool { return v.s.replicated.Load() }

// SetReplicated turns the subscription's replicated flag on or off and,
// for a durable subscription, persists it with the cursor before it
// returns (storage I/O: not from the loop).
func (v Subscription) SetReplicated(on bool) error { return v.s.markReplicated(on) }

// Topic returns the view of the subscription's topic (a persistent
// topic's subscriptions only; the zero Topic otherwise).
func (l SubLoop) Topic() Topic { return l.s.tv }
