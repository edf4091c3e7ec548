package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Replicated subscriptions (Pulsar's PIP-33; docs/geo-replication.md).
// A subscription created with replicate_subscription_state carries its
// mark-delete position to the other clusters through marker entries
// written into the topic itself:
//
//  1. Every replSnapshotInterval, a topic with a replicated subscription,
//     new data since the last snapshot and every replicator connected
//     writes a REQUEST marker (replicated everywhere).
//  2. A remote's replicator towards the requester reads the REQUEST from
//     its own ledger and writes a RESPONSE (replicate_to = requester)
//     carrying its cluster's last position.
//  3. The requester's replicator towards that remote reads the RESPONSE;
//     once every remote answered, the requester writes a SNAPSHOT
//     (replicate_to = itself): "up to the RESPONSE's position here is at
//     most these positions there".
//  4. A replicated subscription's dispatcher caches the SNAPSHOTs it
//     passes; when its mark-delete reaches one, it writes an UPDATE
//     (subscription name, positions per cluster), replicated everywhere.
//  5. A remote's replicator towards the writer reads the UPDATE and moves
//     (or creates) the subscription there to its cluster's position.
//
// Markers are never delivered to consumers: dispatchers acknowledge and
// skip them. Only the mark-delete position travels, at most one snapshot
// interval stale, so a consumer that fails over may see messages again,
// never miss one.

// Marker types (MessageMetadata.marker_type) and the marker producer
// name, as in Pulsar's PulsarMarkers.proto.
const (
	markerSnapshotRequest  = 10
	markerSnapshotResponse = 11
	markerSnapshot         = 12
	markerUpdate           = 13
	markerProducerName     = "pulsar.marker"
)

// Replicated subscription settings (Pulsar's defaults).
const (
	replSnapshotInterval   = time.Second      // replicatedSubscriptionsSnapshotFrequencyMillis
	replSnapshotTimeout    = 30 * time.Second // replicatedSubscriptionsSnapshotTimeoutSeconds
	replSnapshotCacheLimit = 10               // replicatedSubscriptionsSnapshotMaxCachedPerSubscription
)

// clusterPos is one cluster's position in a snapshot or update.
type clusterPos struct {
	cluster string
	pos     position
}

// Marker payload encoding (proto2, field numbers of PulsarMarkers.proto).

func appendMsgID(b []byte, num protowire.Number, p position) []byte {
	var in []byte
	in = protowire.AppendTag(in, 1, protowire.VarintType)
	in = protowire.AppendVarint(in, uint64(p.LedgerID))
	in = protowire.AppendTag(in, 2, protowire.VarintType)
	in = protowire.AppendVarint(in, uint64(p.EntryID))
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, in)
}

func appendClusterPos(b []byte, num protowire.Number, c clusterPos) []byte {
	var in []byte
	in = protowire.AppendTag(in, 1, protowire.BytesType)
	in = protowire.AppendString(in, c.cluster)
	in = appendMsgID(in, 2, c.pos)
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, in)
}

func appendStr(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// markerFields decodes a marker payload into its top-level fields:
// strings (1 and 2 for requests), nested messages collected by number.
type markerFields struct {
	str    map[protowire.Number]string
	nested map[protowire.Number][][]byte
}

var errBadMarker = errors.New("broker: malformed marker")

func parseMarkerFields(b []byte) (markerFields, error) {
	f := markerFields{str: map[protowire.Number]string{}, nested: map[protowire.Number][][]byte{}}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return f, errBadMarker
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return f, errBadMarker
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return f, errBadMarker
		}
		b = b[n:]
		f.str[num] = string(v)
		f.nested[num] = append(f.nested[num], v)
	}
	return f, nil
}

func parseMsgID(b []byte) (position, error) {
	var p position
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.VarintType {
			return p, errBadMarker
		}
		v, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return p, errBadMarker
		}
		b = b[n+m:]
		switch num {
		case 1:
			p.LedgerID = int64(v)
		case 2:
			p.EntryID = int64(v)
		}
	}
	return p, nil
}

func parseClusterPos(b []byte) (clusterPos, error) {
	f, err := parseMarkerFields(b)
	if err != nil {
		return clusterPos{}, err
	}
	ids := f.nested[2]
	if f.str[1] == "" || len(ids) != 1 {
		return clusterPos{}, errBadMarker
	}
	p, err := parseMsgID(ids[0])
	return clusterPos{cluster: f.str[1], pos: p}, err
}

func parseClusterList(raw [][]byte) ([]clusterPos, error) {
	out := make([]clusterPos, 0, len(raw))
	for _, r := range raw {
		c, err := parseClusterPos(r)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// publishMarker stores a marker entry on t (no producer, no dedup).
func (t *topic) publishMarker(typ int32, replicateTo []string, payload []byte) {
	md := &pb.MessageMetadata{
		ProducerName: proto.String(markerProducerName),
		SequenceId:   proto.Uint64(0),
		PublishTime:  proto.Uint64(uint64(time.Now().UnixMilli())),
		MarkerType:   proto.Int32(typ),
		ReplicateTo:  replicateTo,
	}
	meta, err := proto.Marshal(md)
	if err != nil {
		return
	}
	buf := make([]byte, mledger.EntryHeadroom, mledger.EntryHeadroom+10+len(meta)+len(payload))
	buf = pulsarproto.AppendEntry(buf, meta, payload)
	t.pub.RLock()
	defer t.pub.RUnlock()
	if t.pub.stopped || !t.b.owns(t) {
		return
	}
	t.adds.Add(1)
	t.ml.AddEntry(buf, mledger.EntryHeadroom, 1, func(_ position, err error) {
		defer t.adds.Done()
		if err != nil {
			t.log.Debug("marker not stored", "topic", t.full, "type", typ, "err", err)
			return
		}
		t.wakeSubs()
		t.wakeReplicators()
	})
}

// replSubController takes a topic's snapshots (the requester side).
type replSubController struct {
	t    *topic
	stop chan struct{}
	done chan struct{}

	mu        sync.Mutex
	builders  map[string]*snapshotBuilder
	lastMsgIn int64
}

type snapshotBuilder struct {
	started   time.Time
	remotes   []string
	responses map[string]position // remote -> its position
	lastResp  position            // position here of the last RESPONSE
}

func newReplSubController(t *topic) *replSubController {
	c := &replSubController{t: t, stop: make(chan struct{}), done: make(chan struct{}), builders: map[string]*snapshotBuilder{}, lastMsgIn: -1}
	go c.run()
	return c
}

func (c *replSubController) close() {
	close(c.stop)
	<-c.done
}

func (c *replSubController) run() {
	defer close(c.done)
	tk := time.NewTicker(replSnapshotInterval)
	defer tk.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tk.C:
			c.tick()
		}
	}
}

// tick starts a snapshot when one is useful and possible.
func (c *replSubController) tick() {
	t := c.t
	c.mu.Lock()
	for id, b := range c.builders {
		if time.Since(b.started) > replSnapshotTimeout {
			delete(c.builders, id)
		}
	}
	c.mu.Unlock()
	if !t.hasReplicatedSub() {
		return
	}
	rl := t.replList.Load()
	if rl == nil || len(*rl) == 0 {
		return
	}
	var remotes []string
	for _, r := range *rl {
		if !r.connected.Load() {
			return // Pulsar skips the round while a replicator is down
		}
		remotes = append(remotes, r.remote)
	}
	in := t.dataIn.Load()
	c.mu.Lock()
	if in == c.lastMsgIn {
		c.mu.Unlock()
		return // nothing new since the last snapshot started
	}
	c.lastMsgIn = in
	var rb [16]byte
	_, _ = rand.Read(rb[:])
	id := hex.EncodeToString(rb[:])
	c.builders[id] = &snapshotBuilder{started: time.Now(), remotes: remotes, responses: map[string]position{}}
	c.mu.Unlock()
	var payload []byte
	payload = appendStr(payload, 1, id)
	payload = appendStr(payload, 2, t.b.cfg.ClusterName)
	t.log.Debug("snapshot requested", "topic", t.full, "id", id)
	t.publishMarker(markerSnapshotRequest, nil, payload)
}

// response records a RESPONSE read at pos here; the SNAPSHOT is written
// once every remote answered.
func (c *replSubController) response(id string, cp clusterPos, pos position) {
	c.mu.Lock()
	b := c.builders[id]
	if b == nil || !slices.Contains(b.remotes, cp.cluster) {
		c.mu.Unlock()
		return
	}
	if _, seen := b.responses[cp.cluster]; !seen {
		b.responses[cp.cluster] = cp.pos
	}
	if b.lastResp.Compare(pos) < 0 {
		b.lastResp = pos
	}
	if len(b.responses) < len(b.remotes) {
		c.mu.Unlock()
		return
	}
	delete(c.builders, id)
	c.mu.Unlock()
	var payload []byte
	payload = appendStr(payload, 1, id)
	payload = appendMsgID(payload, 2, b.lastResp)
	for _, r := range b.remotes {
		payload = appendClusterPos(payload, 3, clusterPos{r, b.responses[r]})
	}
	c.t.log.Debug("snapshot complete", "topic", c.t.full, "id", id, "local", b.lastResp)
	c.t.publishMarker(markerSnapshot, []string{c.t.b.cfg.ClusterName}, payload)
}

// hasReplicatedSub reports whether any subscription of t is replicated.
func (t *topic) hasReplicatedSub() bool {
	for _, s := range *t.subList.Load() {
		if s.replicated.Load() {
			return true
		}
	}
	return false
}

// handleReplMarker is a replicator's step for a marker that came from
// its remote (replicated_from == remote), read at pos in this ledger.
func (r *replicator) handleReplMarker(typ int32, payload []byte, pos position) {
	t := r.t
	f, err := parseMarkerFields(payload)
	if err != nil {
		r.log.Warn("bad replicated-subscription marker", "type", typ, "err", err)
		return
	}
	local := t.b.cfg.ClusterName
	r.log.Debug("replicated-subscription marker", "type", typ, "pos", pos)
	switch typ {
	case markerSnapshotRequest:
		// Answer with this cluster's last position.
		last, _ := t.ml.LastConfirmed()
		var p []byte
		p = appendStr(p, 1, f.str[1])
		p = appendClusterPos(p, 2, clusterPos{local, last})
		t.publishMarker(markerSnapshotResponse, []string{r.remote}, p)
	case markerSnapshotResponse:
		if len(f.nested[2]) != 1 {
			return
		}
		cp, err := parseClusterPos(f.nested[2][0])
		if err != nil || cp.cluster != r.remote {
			return
		}
		if c := t.replSubController(); c != nil {
			c.response(f.str[1], cp, pos)
		}
	case markerUpdate:
		cps, err := parseClusterList(f.nested[2])
		if err != nil {
			return
		}
		for _, cp := range cps {
			if cp.cluster == local {
				t.applyReplicatedUpdate(f.str[1], cp.pos)
			}
		}
	}
}

// replSubController returns the topic's controller (nil if none). It
// takes no lock: replicator loops call it while checkReplication, holding
// t.repl, may wait for them.
func (t *topic) replSubController() *replSubController { return t.replCtl.Load() }

// applyReplicatedUpdate moves subscription sub to pos (cumulative ack),
// creating it (replicated) if it does not exist.
func (t *topic) applyReplicatedUpdate(sub string, pos position) {
	s, err := t.getOrCreateSub(subscribeReq{sub: sub, typ: SubExclusive, durable: true, initial: initialEarliest})
	if err != nil {
		t.log.Warn("replicated subscription update", "topic", t.full, "sub", sub, "err", err)
		return
	}
	s.markReplicated(true)
	s.do(func() { s.moveMarkDeleteLocked(pos) })
}

// moveMarkDeleteLocked acknowledges everything up to pos, as a
// cumulative ack from the other cluster (runs on the loop).
func (s *subscription) moveMarkDeleteLocked(pos position) {
	if s.cur.MarkDelete().Compare(pos) >= 0 {
		return
	}
	if lc, ok := s.lastConfirmed(); ok && lc.Compare(pos) < 0 {
		pos = lc
	}
	if err := s.cur.AckCumulative(pos); err != nil {
		s.log.Warn("replicated subscription update", "topic", s.topic, "sub", s.name, "pos", pos, "err", err)
		return
	}
	for p, pe := range s.pending {
		if p.Compare(pos) <= 0 {
			s.dropPending(pe)
		}
	}
	s.setReplay(slices.DeleteFunc(s.replay, func(pe *pendingEntry) bool { return pe.pos.Compare(pos) <= 0 }))
	s.dispatch()
}

// snapshotEntry is a SNAPSHOT cached by a replicated subscription.
type snapshotEntry struct {
	local    position
	clusters []clusterPos
}

// onMarkerLocked handles a marker entry the dispatcher read: it is
// acknowledged (never delivered); a replicated subscription caches
// snapshots.
func (s *subscription) onMarkerLocked(e ledgerEntry, typ int32) {
	if err := s.cur.Ack(e.Pos); err != nil {
		s.ackFailLog.log(s.log, slog.LevelWarn, "marker ack failed", "topic", s.topic, "sub", s.name, "err", err)
	}
	if typ != markerSnapshot || !s.replicated.Load() {
		return
	}
	pe, err := pulsarproto.ParseEntry(e.Data)
	if err != nil {
		return
	}
	f, err := parseMarkerFields(pe.Payload)
	if err != nil || len(f.nested[2]) != 1 {
		return
	}
	local, err := parseMsgID(f.nested[2][0])
	if err != nil {
		return
	}
	cps, err := parseClusterList(f.nested[3])
	if err != nil {
		return
	}
	if n := len(s.snapshots); n > 0 && local.Compare(s.snapshots[n-1].local) <= 0 {
		s.snapshots = nil // the cursor moved back
	}
	s.snapshots = append(s.snapshots, snapshotEntry{local: local, clusters: cps})
	if len(s.snapshots) > replSnapshotCacheLimit {
		// Keep the ends; drop the second oldest.
		s.snapshots = slices.Delete(s.snapshots, 1, 2)
	}
}

// afterMarkDeleteLocked writes an UPDATE when the mark-delete position
// passed a cached snapshot.
func (s *subscription) afterMarkDeleteLocked() {
	if !s.replicated.Load() || len(s.snapshots) == 0 || s.publishMarker == nil {
		return
	}
	md := s.cur.MarkDelete()
	idx := -1
	for i, sn := range s.snapshots {
		if sn.local.Compare(md) <= 0 {
			idx = i
		}
	}
	if idx < 0 {
		return
	}
	sn := s.snapshots[idx]
	s.snapshots = slices.Delete(s.snapshots, 0, idx+1)
	var p []byte
	p = appendStr(p, 1, s.name)
	for _, c := range sn.clusters {
		p = appendClusterPos(p, 2, c)
	}
	pub := s.publishMarker
	s.log.Debug("replicated subscription update", "topic", s.topic, "sub", s.name, "clusters", sn.clusters)
	go pub(markerUpdate, nil, p)
}

// attachSub gives a persistent topic's subscription its way to the
// topic for replicated-subscription markers.
func (t *topic) attachSub(s *subscription) {
	if !t.persistent() {
		return
	}
	s.publishMarker = t.publishMarker
	s.lastConfirmed = t.ml.LastConfirmed
	s.txnAborted = t.txnAborted
}

// SetReplicatedSubscription implements Service.
func (b *Broker) SetReplicatedSubscription(ctx context.Context, topic, sub string, replicated bool) error {
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

// replicatedProperty is the cursor property that marks a replicated
// subscription ("1"), Pulsar's name for it: the flag survives restarts
// and ownership changes with the cursor.
const replicatedProperty = "pulsar.replicated.subscription"

// durableCursor returns the managed-ledger cursor behind c (nil for
// non-durable and non-persistent cursors).
func durableCursor(c cursor) *mledger.Cursor {
	switch x := c.(type) {
	case *cursorAdapter:
		if x.c.IsDurable() {
			return x.c
		}
	case *compactedCursor:
		return durableCursor(x.cursorAdapter)
	}
	return nil
}

// loadReplicated sets the replicated flag from the cursor's properties
// (a new subscription, or one loaded with its topic).
func (s *subscription) loadReplicated() {
	if mc := s.mc; mc != nil && mc.Properties()[replicatedProperty] == "1" {
		s.replicated.Store(true)
	}
}

// markReplicated sets the replicated flag and, when it changes a durable
// cursor's property, persists it before returning.
func (s *subscription) markReplicated(on bool) error {
	s.replicated.Store(on)
	mc := s.mc
	if mc == nil {
		return nil
	}
	props := mc.Properties()
	if (props[replicatedProperty] == "1") == on {
		return nil
	}
	next := maps.Clone(props)
	if next == nil {
		next = map[string]string{}
	}
	if on {
		next[replicatedProperty] = "1"
	} else {
		delete(next, replicatedProperty)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storageTimeout)
	defer cancel()
	if err := mc.SetProperties(ctx, next); err != nil {
		s.log.Warn("persist replicated subscription flag", "topic", s.topic, "sub", s.name, "err", err)
		return err
	}
	return nil
}
