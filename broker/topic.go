package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/txn"
)

// topic is one loaded topic: its producers, subscriptions and (for
// persistent topics) managed ledger. Lock order: topic.mu before
// producer.mu; a subscription's loop is never called (do/call) with
// topic.mu held, except where noted, and the loop never takes topic.mu.
type topic struct {
	b         *Broker
	name      topicName
	full      string
	partition int
	ml        ManagedLedger // nil for non-persistent topics
	log       *slog.Logger

	mu struct {
		sync.Mutex
		producers  map[string]*producer // by name
		exclusive  *producer            // Exclusive/WaitForExclusive holder
		waiting    []*producer          // WaitForExclusive queue
		subs       map[string]*subscription
		dedup      map[string]uint64 // producer name -> highest seq pushed
		terminated bool
		closed     bool
	}
	subList atomic.Pointer[[]*subscription] // copy of mu.subs for wake-ups

	persistedSeq sync.Map // producer name -> uint64 highest persisted seq

	// last entry cache for GET_LAST_MESSAGE_ID
	last struct {
		sync.Mutex
		e  lastEntry
		ok bool
	}
	npEntryID atomic.Int64 // non-persistent message ids

	// pol is the topic's effective policy, swapped whole when its
	// namespace's policies change (policy_enforce.go).
	pol atomic.Pointer[policy.Resolved]
	// held is the policy state: sends held by a producer_request_hold
	// quota, in order, and the highest sequence id accepted per producer
	// name under policy deduplication. Lock order: held before topic.mu.
	held struct {
		sync.Mutex
		sends []heldSend
		dedup map[string]uint64
	}

	// repl holds the replicators (replicator.go), by remote cluster;
	// replList is a lock-free copy for wake-ups and stats.
	repl struct {
		sync.Mutex
		m      map[string]*replicator
		ctl    *replSubController // while replicators run
		closed bool
	}
	replList atomic.Pointer[[]*replicator]
	replCtl  atomic.Pointer[replSubController]
	replIn   sync.Map // remote cluster -> *rateTracker of inbound replication

	unloading atomic.Bool
	unloaded  chan struct{} // closed once an unload closed the ledger

	bundleKey   string      // cluster bundle key ("" on a single node)
	fenceLogged atomic.Bool // a fenced write triggered the unload
	// pub guards stopped against the start of an add: publish holds it
	// shared from its check to AddEntry, so once stopPublishing set
	// stopped under the exclusive lock, adds only ever finish.
	pub struct {
		sync.RWMutex
		stopped bool
	}
	adds      sync.WaitGroup // persistent adds in flight
	loadRates rateTracker    // for cluster load reports

	// bem serialises broker entry metadata stamping with AddEntry, so
	// message indexes follow storage order; next is the index of the
	// next message.
	bem struct {
		sync.Mutex
		next int64
	}
	// bemNext mirrors bem.next for the managed ledger's info hook, which
	// must not take bem (entrymeta.go).
	bemNext atomic.Int64

	cstate compactionState // compaction.go

	msgIn    atomic.Int64
	dataIn   atomic.Int64 // entries stored but markers (replsub.go)
	bytesIn  atomic.Int64
	inWin    rateWindow // stats.go
	loadedAt time.Time

	// Rate limits (ratelimit.go): limits is swapped whole under
	// limitsMu (which is taken after topic.mu, never before it).
	limitsMu       sync.Mutex
	limits         atomic.Pointer[topicLimits]
	subRates       subscribeLimiter
	publishLimited atomic.Int64 // SENDs that paused their connection
	// lastActive (unix ns) is when the inactivity check last found the
	// topic active, or its load (inactive.go).
	lastActive atomic.Int64
	// lastUsed (unix ns) is when the topic was last found in use, for
	// the idle unloader (idleunload.go).
	lastUsed atomic.Int64

	// txnBuf is the transaction buffer (txn_buffer.go), nil until the
	// topic first stores a transactional entry; txnInit serialises its
	// creation.
	txnBuf  atomic.Pointer[txnBuffer]
	txnInit sync.Mutex
	// txnAckLogs are the open pending-ack logs by subscription
	// (txn_pendingack.go), under txnInit.
	txnAckLogs map[string]*ackLog
}

type lastEntry struct {
	pos     position
	numMsgs int
	batch   bool
}

func newTopic(b *Broker, tn topicName, ml ManagedLedger, pol *policy.Resolved) *topic {
	t := &topic{b: b, name: tn, full: tn.String(), partition: tn.PartitionIndex, ml: ml, log: b.log, loadedAt: time.Now(), unloaded: make(chan struct{})}
	t.mu.producers = make(map[string]*producer)
	t.mu.subs = make(map[string]*subscription)
	t.mu.dedup = make(map[string]uint64)
	t.held.dedup = make(map[string]uint64)
	t.repl.m = make(map[string]*replicator)
	t.pol.Store(pol)
	empty := []*subscription{}
	t.subList.Store(&empty)
	t.applyLimits(pol)
	t.lastActive.Store(time.Now().UnixNano())
	t.touch()
	t.inWin.roll(t.loadedAt, 0, 0) // the first window starts at load
	return t
}

func (t *topic) persistent() bool { return t.ml != nil }

// unackedLimits returns the topic's maxUnackedMessagesPerConsumer and
// ...PerSubscription (0: unlimited) for its subscriptions.
func (t *topic) unackedLimits() (perConsumer, perSub int) {
	if p := t.pol.Load(); p != nil {
		return p.MaxUnackedPerConsumer, p.MaxUnackedPerSubscription
	}
	return 0, 0
}

// publishSubsLocked refreshes the lock-free subscription list.
func (t *topic) publishSubsLocked() {
	l := slices.Collect(maps.Values(t.mu.subs))
	t.subList.Store(&l)
}

func (t *topic) wakeSubs() {
	for _, s := range *t.subList.Load() {
		s.wake()
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
	if _, dup := t.mu.producers[p.name]; dup {
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
		for _, o := range t.mu.producers {
			delete(t.mu.producers, o.name)
			o.sink.closeProducer(o)
		}
		t.mu.exclusive = p
	default:
		return false, &errProducer{codeNotAllowed, "unknown producer access mode"}
	}
	p.ready.Store(true)
	t.mu.producers[p.name] = p
	return false, nil
}

// removeProducer detaches p; a waiting exclusive producer may take over.
func (t *topic) removeProducer(p *producer) {
	t.touch()
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.mu.waiting, p); i >= 0 {
		t.mu.waiting = slices.Delete(t.mu.waiting, i, i+1)
		return
	}
	if t.mu.producers[p.name] != p {
		return
	}
	delete(t.mu.producers, p.name)
	if t.mu.exclusive == p {
		t.mu.exclusive = nil
	}
	if len(t.mu.producers) == 0 && len(t.mu.waiting) > 0 {
		w := t.mu.waiting[0]
		t.mu.waiting = t.mu.waiting[1:]
		t.mu.exclusive = w
		t.mu.producers[w.name] = w
		w.ready.Store(true)
		w.sink.producerReady(w)
	}
}

// lastSequence returns the highest persisted sequence id of a producer
// name, or -1.
func (t *topic) lastSequence(name string) int64 {
	if v, ok := t.persistedSeq.Load(name); ok {
		return int64(v.(uint64))
	}
	return -1
}

// publish stores one entry (a SEND) and answers the producer in order.
// Sends of one producer arrive from one connection reader, so AddEntry
// order is the producer's send order.
func (t *topic) publish(p *producer, seq, highest uint64, numMsgs int, e entryBuf) {
	data := e.data()
	if highest < seq {
		// The Go client leaves highest_sequence_id unset; a batch holds
		// sequence ids seq .. seq+numMsgs-1.
		highest = seq + uint64(max(numMsgs, 1)) - 1
	}
	key := p.name
	if t.b.cfg.Deduplication || p.remote != "" {
		key = p.dedupKey(e) // "" for a replicated marker
	}
	if t.b.cfg.Deduplication && key != "" {
		t.mu.Lock()
		last, seen := t.mu.dedup[key]
		if seen && seq <= last {
			t.mu.Unlock()
			p.duplicate(seq)
			return
		}
		t.mu.dedup[key] = highest
		t.mu.Unlock()
	}
	if !t.persistent() {
		if !t.b.owns(t) {
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
	if t.pub.stopped || !t.b.owns(t) {
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
	ts := e.txn
	if t.b.entryMeta.on() {
		t.bem.Lock()
		defer t.bem.Unlock()
		e = t.withEntryMeta(e, numMsgs)
		data = e.data()
	}
	if ts != nil {
		t.txnBeforeAdd(ts)
	}
	start := time.Now()
	t.ml.AddEntry(e.buf, e.off, numMsgs, func(pos position, err error) {
		defer t.adds.Done()
		if ts != nil {
			t.txnAdded(ts, pos, err)
		}
		if err != nil {
			t.publishFailed(p, seq, err)
			return
		}
		t.b.observePublish(start)
		if !t.b.mayAck(t) {
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
		if key != "" {
			t.dataIn.Add(1)
		}
		batch := numMsgs > 1
		if !batch {
			batch = entryIsBatch(data)
		}
		t.last.Lock()
		t.last.e, t.last.ok = lastEntry{pos: pos, numMsgs: numMsgs, batch: batch}, true
		t.last.Unlock()
		if t.b.cfg.Deduplication && key != "" {
			t.persistedSeq.Store(key, highest)
		}
		p.persisted(seq, highest, pos)
		t.wakeSubs()
		t.wakeReplicators()
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
		t.log.Warn("unload: writes still pending", "topic", t.full, "after", d)
	}
}

func (t *topic) publishFailed(p *producer, seq uint64, err error) {
	if errors.Is(err, ErrTerminated) {
		p.sink.sendSendError(p.id, seq, codeTopicTerminated, "Topic was terminated")
	} else if errors.Is(err, mledger.ErrFenced) {
		// Another owner opened the ledger: final here. No SEND_ERROR
		// (the Go client would reconnect to this broker again): the
		// topic unloads, the client looks it up and re-sends there.
		p.sink.sendDropped(p.id, seq)
		t.b.fencedByOtherOwner(t)
	} else {
		t.b.rateLogs.persist.log(t.log, slog.LevelWarn, "persist failed", "topic", t.full, "producer", p.name, "err", err)
		// Any other SEND_ERROR makes the client reconnect and re-send.
		p.sink.sendSendError(p.id, seq, codePersistenceError, err.Error())
	}
	p.addDone()
}

// entryIsBatch reports whether a stored entry's metadata is in batch
// format.
func entryIsBatch(data []byte) bool {
	m, err := parseEntryMeta(data)
	return err == nil && m.batch
}

// parsedMeta extends entryMeta with the batch flag.
type parsedMeta struct {
	entryMeta
	batch bool
}

func parseEntryMeta(data []byte) (parsedMeta, error) {
	e, err := pulsarproto.ParseEntry(data)
	if err != nil {
		return parsedMeta{}, err
	}
	var md pulsarproto.Metadata
	if err := pulsarproto.ParseMetadata(e.Metadata, &md); err != nil {
		return parsedMeta{}, err
	}
	pm := parsedMeta{batch: md.Batch}
	if md.HasMarkerType {
		pm.marker = max(md.MarkerType, 1)
	}
	pm.numMsgs = md.NumMessages()
	pm.key = md.RoutingKey()
	if md.HasDeliverAtTime {
		pm.deliverAt = md.DeliverAtTime
	}
	pm.publishTime = int64(md.PublishTime)
	if md.HasTxnid {
		pm.hasTxn, pm.txnID = true, txn.ID{Most: md.TxnidMostBits, Least: md.TxnidLeastBits}
	}
	if md.NumChunksFromMsg > 1 {
		pm.chunk = chunkInfo{uuid: string(md.UUID), id: md.ChunkID, num: md.NumChunksFromMsg}
	}
	return pm, nil
}

// dispatchEntryMeta is the subscription's parse function.
func dispatchEntryMeta(data []byte) (entryMeta, error) {
	pm, err := parseEntryMeta(data)
	return pm.entryMeta, err
}

// lastMessage returns the last entry's position and batch size for
// GET_LAST_MESSAGE_ID; ok is false on an empty topic.
func (t *topic) lastMessage() (pos position, batchIndex int32, ok bool) {
	if !t.persistent() {
		n := t.npEntryID.Load()
		return position{LedgerID: 0, EntryID: n - 1}, -1, n > 0
	}
	if tb := t.txnBuf.Load(); tb != nil {
		return t.txnLastMessage(tb)
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
		pm, err := parseEntryMeta(data)
		if err != nil {
			return lp, -1, true
		}
		le = lastEntry{pos: lp, numMsgs: pm.numMsgs, batch: pm.batch}
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

func (t *topic) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.closed
}

// markUnloading claims the unload of t; false if another unload has it.
func (t *topic) markUnloading() bool { return t.unloading.CompareAndSwap(false, true) }

// seedPolicyDedup copies the recovered sequence ids into the state that
// policy deduplication checks (t.held.dedup).
func (t *topic) seedPolicyDedup() {
	t.mu.Lock()
	seqs := maps.Clone(t.mu.dedup)
	t.mu.Unlock()
	t.held.Lock()
	defer t.held.Unlock()
	for k, v := range seqs {
		if last, ok := t.held.dedup[k]; !ok || v > last {
			t.held.dedup[k] = v
		}
	}
}

// recoverDedup rebuilds the per-producer highest sequence ids from the
// last n entries.
func (t *topic) recoverDedup(n int) error {
	tail, err := t.ml.TailEntries(n)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, data := range tail {
		e, err := pulsarproto.ParseEntry(data)
		if err != nil {
			continue
		}
		var md pulsarproto.Metadata
		if pulsarproto.ParseMetadata(e.Metadata, &md) != nil {
			continue
		}
		highest := max(md.HighestSequenceID, md.SequenceID+uint64(md.NumMessages())-1)
		name := string(md.ProducerName)
		if last, ok := t.mu.dedup[name]; !ok || highest > last {
			t.mu.dedup[name] = highest
			t.persistedSeq.Store(name, highest)
		}
	}
	return nil
}
