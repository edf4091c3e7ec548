package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/broker/dispatch"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/internal/ratemeter"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// topic is one loaded topic: its producers, subscriptions and (for
// persistent topics) managed ledger. Lock order: topic.mu before
// producer.mu; a subscription's loop is never called (do/call) with
// topic.mu held, except where noted, and the loop never takes topic.mu.
type topic struct {
	b    *Broker
	name topicName             // its String is the full name
	ml   storage.ManagedLedger // nil for non-persistent topics
	log  *slog.Logger

	mu struct {
		sync.Mutex
		producers  named[*producer] // by name
		exclusive  *producer        // Exclusive/WaitForExclusive holder
		waiting    []*producer      // WaitForExclusive queue
		subs       named[*subscription]
		dedup      seqIDs // highest sequence id pushed
		terminated bool
		closed     bool
	}
	subList atomic.Pointer[[]*subscription] // copy of mu.subs for wake-ups

	// last entry cache for GET_LAST_MESSAGE_ID; seq is the highest
	// persisted sequence id by producer name (nil until there is one).
	last struct {
		sync.Mutex
		e   lastEntry
		ok  bool
		seq seqIDs
	}
	npEntryID atomic.Int64 // non-persistent message ids

	// pol is the topic's effective policy (limits.go).
	pol topicPolicy
	// held are the SENDs a quota holds (held.go). Lock order: held
	// before topic.mu.
	held heldSends

	unloading atomic.Bool
	// pubRecovered: see lastPublish (here, beside unloading, the struct
	// packs into a smaller size class: issue 35).
	pubRecovered atomic.Bool
	// unloaded is made by an unload before it closes the topic (so one
	// who saw the topic closed sees it) and closed once the ledger is;
	// nil otherwise (a closed topic with none was not unloaded).
	unloaded atomic.Pointer[chan struct{}]

	bundleKey   string      // cluster bundle key ("" on a single node)
	fenceLogged atomic.Bool // a fenced write triggered the unload
	// pub guards stopped against the start of an add: publish holds it
	// shared from its check to AddEntry, so once stopPublishing set
	// stopped under the exclusive lock, adds only ever finish.
	pub struct {
		sync.RWMutex
		stopped bool
	}
	adds      sync.WaitGroup  // persistent adds in flight
	loadRates ratemeter.Meter // for cluster load reports

	// addMu is the topic's add order: held across the broker-wide
	// PublishInterceptors' BeforeAdd and the append (topic.publish), so
	// that what they stamp (broker entry metadata indexes) follows
	// storage order. A leaf lock, taken under pub.
	addMu sync.Mutex

	msgIn    atomic.Int64
	bytesIn  atomic.Int64
	inWin    dispatch.Window // stats.go
	loadedMs int64           // unix ms of the load
	// created is when the persistent topic was created (its node,
	// unix ms; 0: not known); lastPublish when a message was last
	// stored (unix ms; recovered from the last entry by the first
	// stats after a load: pubRecovered).
	created     int64
	lastPublish atomic.Int64

	// limits are the limits a feature put on the topic (limits.go).
	limits topicLimits
	// lastUsed (unix ns) is when the topic was last found in use, for
	// the idle unloader (idleunload.go).
	lastUsed useClock

	// slots are the features' per-topic values (TopicSlot), set while
	// the topic loads; readBound is the read bound a feature set
	// (Topic.SetReadBound), nil: none.
	slots     []any
	readBound atomic.Pointer[func() (position, bool)]
}

type lastEntry struct {
	pos     position
	numMsgs int
	batch   bool
}

func newTopic(b *Broker, tn topicName, ml storage.ManagedLedger, pol *policy.Resolved) *topic {
	t := &topic{b: b, name: tn, ml: ml, log: b.log}
	t.held.total = &b.heldCount
	t.pol.Store(pol)
	t.subList.Store(&noSubs)
	now := time.Now()
	t.loadedMs = now.UnixMilli()
	t.lastUsed.mark(now)
	t.inWin.Roll(now, 0, 0) // the first window starts at load
	return t
}

// noSubs is every new topic's subList (read only).
var noSubs []*subscription

func (t *topic) persistent() bool { return t.ml != nil }

// dedupEnabled reports whether t deduplicates (broker-wide or by policy).
func (t *topic) dedupEnabled() bool {
	return t.b.cfg.Deduplication || t.pol.Load().Deduplication
}

// publishSubsLocked refreshes the lock-free subscription list.
func (t *topic) publishSubsLocked() {
	l := []*subscription(t.mu.subs) // named never changes a slice in place
	t.subList.Store(&l)
}

func (t *topic) wakeSubs() {
	for _, s := range *t.subList.Load() {
		s.Wake()
	}
}

// errProducer is a refusal of PRODUCER with the ServerError to report.
type errProducer struct {
	code int32
	msg  string
}

func (e *errProducer) Error() string { return e.msg }

// addProducer registers p under the access-mode rules. For a
// WaitForExclusive producer that must wait, it returns wait=true: the
// producer is queued and gets producerReady later.
func (t *topic) addProducer(p *producer) (wait bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return false, &errProducer{codeServiceNotReady, "topic is being unloaded"}
	}
	if t.mu.terminated {
		return false, &errProducer{codeTopicTerminated, "Topic was already terminated"}
	}
	if t.mu.producers.get(p.name) != nil {
		return false, &errProducer{codeProducerBusy, fmt.Sprintf("Producer with name '%s' is already connected to topic", p.name)}
	}
	for _, w := range t.mu.waiting {
		if w.name == p.name {
			return false, &errProducer{codeProducerBusy, fmt.Sprintf("Producer with name '%s' is already waiting on topic", p.name)}
		}
	}
	switch p.accessMode {
	case accessShared:
		if t.mu.exclusive != nil {
			return false, &errProducer{codeProducerBusy, "Topic has an existing exclusive producer: " + t.mu.exclusive.name}
		}
	case accessExclusive:
		if t.mu.exclusive != nil {
			return false, &errProducer{codeProducerFenced, "Topic has an existing exclusive producer: " + t.mu.exclusive.name}
		}
		if len(t.mu.producers) > 0 {
			return false, &errProducer{codeProducerBusy, "Topic has existing shared producers"}
		}
		t.mu.exclusive = p
	case accessWaitForExclusive:
		if t.mu.exclusive != nil || len(t.mu.producers) > 0 {
			t.mu.waiting = append(t.mu.waiting, p)
			return true, nil
		}
		t.mu.exclusive = p
	case accessExclusiveWithFencing:
		fenced := t.mu.producers
		t.mu.producers = nil
		for _, o := range fenced {
			o.sink.closeProducer(o)
		}
		t.mu.exclusive = p
	default:
		return false, &errProducer{codeNotAllowed, "unknown producer access mode"}
	}
	p.ready.Store(true)
	t.mu.producers.put(p)
	return false, nil
}

// removeProducer detaches p; a waiting exclusive producer may take over.
func (t *topic) removeProducer(p *producer) {
	t.lastUsed.mark(time.Now())
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.mu.waiting, p); i >= 0 {
		t.mu.waiting = slices.Delete(t.mu.waiting, i, i+1)
		return
	}
	if t.mu.producers.get(p.name) != p {
		return
	}
	t.mu.producers.del(p.name)
	if t.mu.exclusive == p {
		t.mu.exclusive = nil
	}
	if len(t.mu.producers) == 0 && len(t.mu.waiting) > 0 && !t.mu.terminated {
		w := t.mu.waiting[0]
		t.mu.waiting = t.mu.waiting[1:]
		t.mu.exclusive = w
		t.mu.producers.put(w)
		w.ready.Store(true)
		w.sink.producerReady(w)
	}
}

// hasProducer reports whether p is one of the topic's producers.
func (t *topic) hasProducer(p *producer) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.producers.get(p.name) == p
}

// lastSequence returns the highest persisted sequence id of a producer
// name, or -1.
func (t *topic) lastSequence(name string) int64 {
	t.last.Lock()
	defer t.last.Unlock()
	if v, ok := t.last.seq[name]; ok {
		return int64(v)
	}
	return -1
}

// seqIDs are the highest sequence ids by producer name; nil until the
// first is set.
type seqIDs map[string]uint64

// set records highest for name.
func (m *seqIDs) set(name string, highest uint64) {
	if *m == nil {
		*m = make(seqIDs, 1)
	}
	(*m)[name] = highest
}

// raise records highest for name if it is higher than the one recorded
// (or none is), and reports whether it was.
func (m *seqIDs) raise(name string, highest uint64) bool {
	if last, ok := (*m)[name]; ok && highest <= last {
		return false
	}
	m.set(name, highest)
	return true
}

// publish stores one entry (a SEND) and answers the producer in order.
// Sends of one producer arrive from one connection reader, so AddEntry
// order is the producer's send order. The PublishInterceptors see the
// append (extension.go): broker-wide ones under the topic's add order
// (t.addMu), then the entry's own hook.
func (t *topic) publish(p *producer, seq, highest uint64, numMsgs int, e *Entry) {
	data := e.Data()
	if highest < seq {
		// The Go client leaves highest_sequence_id unset; a batch holds
		// sequence ids seq .. seq+numMsgs-1.
		highest = seq + uint64(max(numMsgs, 1)) - 1
	}
	dedup := t.dedupEnabled()
	key := p.name
	if dedup || p.remote != "" {
		key = p.dedupKey(e) // "" for a replicated marker
	}
	if dedup && key != "" {
		t.mu.Lock()
		last, seen := t.mu.dedup[key]
		if seen && seq <= last {
			t.mu.Unlock()
			p.duplicate(seq)
			return
		}
		t.mu.dedup.set(key, highest)
		t.mu.Unlock()
	}
	if !t.persistent() {
		if !t.b.cluster.owns(t) {
			p.sink.sendDropped(p.id, seq)
			return
		}
		t.countIn(p, numMsgs, len(data))
		id := t.npEntryID.Add(1) - 1
		t.dispatchNonPersistent(ledgerEntry{Pos: position{LedgerID: 0, EntryID: id}, Data: data})
		p.sink.sendReceipt(p.id, seq, highest, position{LedgerID: 0, EntryID: id})
		return
	}
	t.pub.RLock()
	if t.pub.stopped || !t.b.cluster.owns(t) {
		// Unloading or no longer owned: not written, not answered; the
		// client re-sends it to the owner it finds next.
		t.pub.RUnlock()
		p.sink.sendDropped(p.id, seq)
		return
	}
	t.adds.Add(1)
	p.mu.Lock()
	p.mu.inflight++
	p.mu.Unlock()
	e.msgs = numMsgs
	hooks := t.b.ext.publish
	if len(hooks) > 0 {
		t.addMu.Lock()
		defer t.addMu.Unlock()
		for _, h := range hooks {
			h.BeforeAdd(Topic{t}, e)
		}
	}
	if e.hook != nil {
		e.hook.BeforeAdd(Topic{t}, e)
	}
	data = e.Data()
	batch := numMsgs > 1 || e.mdOK && e.md.Batch
	start := time.Now()
	t.ml.AddEntry(e.buf, e.off, numMsgs, func(pos position, err error) {
		defer t.adds.Done()
		if e.hook != nil {
			e.hook.AfterAdd(Topic{t}, e, pos, err)
		}
		for _, h := range hooks {
			h.AfterAdd(Topic{t}, e, pos, err)
		}
		if err != nil {
			t.publishFailed(p, seq, err)
			return
		}
		t.b.ext.observePublish(start)
		if !t.b.cluster.mayAck(t) {
			// Stored, but the ownership may have passed on (the session
			// lease ran out): never acknowledge for a topic we may not
			// own. The client re-sends; dedup (if on) drops the copy.
			t.countIn(p, numMsgs, len(data)) // stored all the same
			p.sink.sendDropped(p.id, seq)
			p.addDone()
			t.b.fencedByOtherOwner(t)
			return
		}
		t.countIn(p, numMsgs, len(data))
		t.last.Lock()
		t.last.e, t.last.ok = lastEntry{pos: pos, numMsgs: numMsgs, batch: batch}, true
		if dedup && key != "" {
			t.last.seq.set(key, highest)
		}
		t.last.Unlock()
		p.persisted(seq, highest, pos)
		t.wakeSubs()
		t.b.ext.entryStored(t, key == "")
	})
	t.pub.RUnlock()
}

// countIn counts messages in once they are stored (persistent) or
// dispatched (non-persistent): never a message that was not.
func (t *topic) countIn(p *producer, numMsgs, size int) {
	p.msgIn.Add(int64(numMsgs))
	p.bytesIn.Add(int64(size))
	t.msgIn.Add(int64(numMsgs))
	t.bytesIn.Add(int64(size))
	t.lastPublish.Store(time.Now().UnixMilli())
}

// stopPublishing refuses new adds and waits (at most d) for the adds in
// flight to complete and be answered.
func (t *topic) stopPublishing(d time.Duration) {
	t.pub.Lock()
	t.pub.stopped = true
	t.pub.Unlock()
	done := make(chan struct{})
	go func() {
		t.adds.Wait()
		close(done)
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.log.Warn("unload: writes still pending", "topic", t.name.String(), "after", d)
	}
}

func (t *topic) publishFailed(p *producer, seq uint64, err error) {
	if errors.Is(err, ErrTerminated) {
		if t.hasProducer(p) {
			p.sink.sendSendError(p.id, seq, codeTopicTerminated, "Topic was terminated")
		} else {
			// Closed by Terminate: the client learns it from
			// CLOSE_PRODUCER and its refused reconnect.
			p.sink.sendDropped(p.id, seq)
		}
	} else if errors.Is(err, mledger.ErrFenced) {
		// Another owner opened the ledger: final here. No SEND_ERROR
		// (the Go client would reconnect to this broker again): the
		// topic unloads, the client looks it up and re-sends there.
		p.sink.sendDropped(p.id, seq)
		t.b.fencedByOtherOwner(t)
	} else {
		t.b.rateLogs.persist.Log(t.log, slog.LevelWarn, "persist failed", "topic", t.name.String(), "producer", p.name, "err", err)
		// Any other SEND_ERROR makes the client reconnect and re-send.
		p.sink.sendSendError(p.id, seq, codePersistenceError, err.Error())
	}
	p.addDone()
}

// parsedMeta extends dispatch.Meta with the batch flag.
type parsedMeta struct {
	dispatch.Meta
	batch bool
}

// parseEntryMeta parses a stored entry; md, if not nil, receives its
// whole MessageMetadata.
func parseEntryMeta(data []byte, md *pulsarproto.Metadata) (parsedMeta, error) {
	e, err := parseEntry(data)
	if err != nil {
		return parsedMeta{}, err
	}
	if md == nil {
		md = new(pulsarproto.Metadata) // on the stack: nothing keeps it
	}
	if err := parseMetadata(e.Metadata, md); err != nil {
		return parsedMeta{}, err
	}
	pm := parsedMeta{batch: md.Batch}
	if md.HasMarkerType {
		pm.Marker = max(md.MarkerType, 1)
	}
	pm.Messages = md.NumMessages()
	pm.Key = md.RoutingKey()
	if md.HasDeliverAtTime {
		pm.DeliverAt = md.DeliverAtTime
	}
	pm.PublishTime = int64(md.PublishTime)
	if md.NumChunksFromMsg > 1 {
		pm.Chunk = dispatch.Chunk{UUID: string(md.UUID), ID: md.ChunkID, Num: md.NumChunksFromMsg}
	}
	return pm, nil
}

// dispatchEntryMeta is the subscription's parse function.
func dispatchEntryMeta(data []byte, md *pulsarproto.Metadata) (dispatch.Meta, error) {
	pm, err := parseEntryMeta(data, md)
	return pm.Meta, err
}

// lastMessage returns the last entry's position and batch size for
// GET_LAST_MESSAGE_ID; ok is false on an empty topic.
func (t *topic) lastMessage() (pos position, batchIndex int32, ok bool) {
	if !t.persistent() {
		n := t.npEntryID.Load()
		return position{LedgerID: 0, EntryID: n - 1}, -1, n > 0
	}
	if f := t.readBound.Load(); f != nil {
		return t.lastReadable(*f)
	}
	lp, ok := t.ml.LastConfirmed()
	if !ok {
		return lp, -1, false
	}
	t.last.Lock()
	le, have := t.last.e, t.last.ok
	t.last.Unlock()
	if !have || le.pos != lp {
		data, err := t.ml.ReadEntry(lp)
		if err != nil {
			return lp, -1, true
		}
		pm, err := parseEntryMeta(data, nil)
		if err != nil {
			return lp, -1, true
		}
		le = lastEntry{pos: lp, numMsgs: pm.Messages, batch: pm.batch}
		t.last.Lock()
		if !t.last.ok {
			t.last.e, t.last.ok = le, true
		}
		t.last.Unlock()
	}
	if le.batch {
		return lp, int32(le.numMsgs - 1), true
	}
	return lp, -1, true
}

// lastReadable is lastMessage for a topic with a read bound (set by a
// feature, Topic.SetReadBound): the last entry before the bound that is
// neither a marker nor skipped by a DispatchFilter (GET_LAST_MESSAGE_ID
// must name a message a reader can get, or the client waits for it
// forever). It steps back over at most lastReadableScan entries.
func (t *topic) lastReadable(bound func() (position, bool)) (position, int32, bool) {
	lac, ok := t.ml.LastConfirmed()
	if !ok {
		return lac, -1, false
	}
	none := position{LedgerID: lac.LedgerID, EntryID: -1}
	ls := t.ml.Stats().Ledgers
	p := lac
	if b, bounded := bound(); bounded && b.Compare(lac) <= 0 {
		if p, ok = prevPosition(ls, b); !ok {
			return none, -1, false
		}
	}
	var md pulsarproto.Metadata
	for range lastReadableScan {
		data, err := t.ml.ReadEntry(p)
		if err != nil {
			return p, -1, true
		}
		pm, err := parseEntryMeta(data, &md)
		if err != nil {
			return p, -1, true
		}
		if pm.Marker == 0 && !skipEntry(t.b.ext.filters, Topic{t}, &md) {
			if pm.batch {
				return p, int32(pm.Messages - 1), true
			}
			return p, -1, true
		}
		if p, ok = prevPosition(ls, p); !ok {
			return none, -1, false
		}
	}
	return p, -1, true
}

// lastReadableScan bounds the entries lastReadable steps back over.
const lastReadableScan = 10000

// prevPosition returns the entry before p in ledgers ls.
func prevPosition(ls []mledger.LedgerInfo, p position) (position, bool) {
	if p.EntryID > 0 {
		for _, l := range ls {
			if l.LedgerID == p.LedgerID && l.Entries > 0 {
				return position{LedgerID: p.LedgerID, EntryID: min(p.EntryID-1, l.Entries-1)}, true
			}
		}
	}
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].LedgerID < p.LedgerID && ls[i].Entries > 0 {
			return position{LedgerID: ls[i].LedgerID, EntryID: ls[i].Entries - 1}, true
		}
	}
	return position{}, false
}

func (t *topic) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.closed
}

// RaiseDedup raises the topic's deduplication state to at least the
// given highest stored sequence id per producer: a DedupRecovery
// recovered it after deduplication was turned on for the loaded topic.
func (v Topic) RaiseDedup(state map[string]uint64) {
	t := v.t
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last.Lock()
	defer t.last.Unlock()
	for name, highest := range state {
		t.mu.dedup.raise(name, highest)
		t.last.seq.raise(name, highest)
	}
}

// recoverDedup rebuilds the per-producer highest sequence ids: from r
// (the snapshot feature) if there is one, else from the last n entries.
func (t *topic) recoverDedup(ctx context.Context, r DedupRecovery, n int) error {
	if r != nil {
		state, err := r.RecoverDedup(ctx, Topic{t})
		if err != nil {
			return err
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.last.Lock()
		defer t.last.Unlock()
		for name, highest := range state {
			t.mu.dedup.set(name, highest)
			t.last.seq.set(name, highest)
		}
		return nil
	}
	tail, err := t.ml.TailEntries(n)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last.Lock()
	defer t.last.Unlock()
	for _, data := range tail {
		e, err := parseEntry(data)
		if err != nil {
			continue
		}
		var md pulsarproto.Metadata
		if parseMetadata(e.Metadata, &md) != nil {
			continue
		}
		highest := max(md.HighestSequenceID, md.SequenceID+uint64(md.NumMessages())-1)
		name := string(md.ProducerName)
		if t.mu.dedup.raise(name, highest) {
			t.last.seq.set(name, highest)
		}
	}
	return nil
}
