package georep

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
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
	pos     storage.Position
}

// Marker payload encoding (proto2, field numbers of PulsarMarkers.proto).

func appendMsgID(b []byte, num protowire.Number, p storage.Position) []byte {
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

var errBadMarker = errors.New("georep: malformed marker")

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

func parseMsgID(b []byte) (storage.Position, error) {
	var p storage.Position
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
func publishMarker(t broker.Topic, typ int32, replicateTo []string, payload []byte) {
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
	_ = t.Append(buf, mledger.EntryHeadroom, func(_ storage.Position, err error) {
		if err != nil {
			t.Logger().Debug("marker not stored", "topic", t.Name(), "type", typ, "err", err)
		}
	})
}

// snapshotController takes a topic's snapshots (the requester side).
type snapshotController struct {
	st   *topicState
	stop chan struct{}
	done chan struct{}

	mu        sync.Mutex
	builders  map[string]*snapshotBuilder
	lastMsgIn int64
}

type snapshotBuilder struct {
	started   time.Time
	remotes   []string
	responses map[string]storage.Position // remote -> its position
	lastResp  storage.Position            // position here of the last RESPONSE
}

func newSnapshotController(st *topicState) *snapshotController {
	c := &snapshotController{st: st, stop: make(chan struct{}), done: make(chan struct{}), builders: map[string]*snapshotBuilder{}, lastMsgIn: -1}
	go c.run()
	return c
}

func (c *snapshotController) close() {
	close(c.stop)
	<-c.done
}

func (c *snapshotController) run() {
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
func (c *snapshotController) tick() {
	st := c.st
	c.mu.Lock()
	for id, b := range c.builders {
		if time.Since(b.started) > replSnapshotTimeout {
			delete(c.builders, id)
		}
	}
	c.mu.Unlock()
	if !hasReplicatedSub(st.t) {
		return
	}
	rl := st.replicators()
	if len(rl) == 0 {
		return
	}
	var remotes []string
	for _, r := range rl {
		if !r.connected.Load() {
			return // Pulsar skips the round while a replicator is down
		}
		remotes = append(remotes, r.remote)
	}
	in := st.dataIn.Load()
	c.mu.Lock()
	if in == c.lastMsgIn {
		c.mu.Unlock()
		return // nothing new since the last snapshot started
	}
	c.lastMsgIn = in
	var rb [16]byte
	_, _ = rand.Read(rb[:])
	id := hex.EncodeToString(rb[:])
	c.builders[id] = &snapshotBuilder{started: time.Now(), remotes: remotes, responses: map[string]storage.Position{}}
	c.mu.Unlock()
	var payload []byte
	payload = appendStr(payload, 1, id)
	payload = appendStr(payload, 2, st.f.local)
	st.log.Debug("snapshot requested", "topic", st.t.Name(), "id", id)
	publishMarker(st.t, markerSnapshotRequest, nil, payload)
}

// response records a RESPONSE read at pos here; the SNAPSHOT is written
// once every remote answered.
func (c *snapshotController) response(id string, cp clusterPos, pos storage.Position) {
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
	c.st.log.Debug("snapshot complete", "topic", c.st.t.Name(), "id", id, "local", b.lastResp)
	publishMarker(c.st.t, markerSnapshot, []string{c.st.f.local}, payload)
}

// hasReplicatedSub reports whether any subscription of t is replicated.
func hasReplicatedSub(t broker.Topic) bool {
	for _, s := range t.Subscriptions() {
		if s.Replicated() {
			return true
		}
	}
	return false
}

// handleReplMarker is a replicator's step for a marker that came from
// its remote (replicated_from == remote), read at pos in this ledger.
func (r *replicator) handleReplMarker(typ int32, payload []byte, pos storage.Position) {
	st := r.t
	f, err := parseMarkerFields(payload)
	if err != nil {
		r.log.Warn("bad replicated-subscription marker", "type", typ, "err", err)
		return
	}
	local := st.f.local
	r.log.Debug("replicated-subscription marker", "type", typ, "pos", pos)
	switch typ {
	case markerSnapshotRequest:
		// Answer with this cluster's last position.
		last, _ := st.t.Ledger().LastConfirmed()
		var p []byte
		p = appendStr(p, 1, f.str[1])
		p = appendClusterPos(p, 2, clusterPos{local, last})
		publishMarker(st.t, markerSnapshotResponse, []string{r.remote}, p)
	case markerSnapshotResponse:
		if len(f.nested[2]) != 1 {
			return
		}
		cp, err := parseClusterPos(f.nested[2][0])
		if err != nil || cp.cluster != r.remote {
			return
		}
		// The controller is read without st.mu: check, holding it, may
		// wait for this loop to stop.
		if c := st.ctl.Load(); c != nil {
			c.response(f.str[1], cp, pos)
		}
	case markerUpdate:
		cps, err := parseClusterList(f.nested[2])
		if err != nil {
			return
		}
		for _, cp := range cps {
			if cp.cluster == local {
				st.f.applyUpdate(st.t, f.str[1], cp.pos)
			}
		}
	}
}

// Subscription side: the loop of a replicated subscription caches the
// SNAPSHOTs it passes (subState, the feature's broker.SubSlot) and
// writes an UPDATE when its mark-delete position reaches one.

// subState is a replicated subscription's state, owned by its loop.
type subState struct {
	snapshots []snapshotEntry
	// applying: an UPDATE from another cluster is being applied (it
	// writes no UPDATE back).
	applying bool
}

// snapshotEntry is a SNAPSHOT cached by a replicated subscription.
type snapshotEntry struct {
	local    storage.Position
	clusters []clusterPos
}

// applyUpdate moves subscription sub of t to pos (a cumulative ack from
// the other cluster), creating it (replicated) if it does not exist.
func (f *Replication) applyUpdate(t broker.Topic, sub string, pos storage.Position) {
	s, err := t.OpenSubscription(sub)
	if err != nil {
		t.Logger().Warn("replicated subscription update", "topic", t.Name(), "sub", sub, "err", err)
		return
	}
	_ = s.SetReplicated(true) // a failure to persist it is logged
	s.Do(func(l broker.SubLoop) {
		if l.MarkDelete().Compare(pos) >= 0 {
			return
		}
		if lc, ok := t.Ledger().LastConfirmed(); ok && lc.Compare(pos) < 0 {
			pos = lc
		}
		ss := f.subState(l)
		ss.applying = true
		l.Acknowledge(broker.Acks{Cumulative: &pos, Reason: "replicated subscription update"})
		ss.applying = false
	})
}

// subState returns l's state, made on first use.
func (f *Replication) subState(l broker.SubLoop) *subState {
	ss := f.subs.Get(l)
	if ss == nil {
		ss = &subState{}
		f.subs.Set(l, ss)
	}
	return ss
}

// MarkerRead caches the SNAPSHOTs a replicated subscription's dispatch
// passes (broker.ReplicatedSubscriptions).
func (f *Replication) MarkerRead(l broker.SubLoop, typ int32, data []byte) {
	if typ != markerSnapshot {
		return
	}
	pe, err := pulsarproto.ParseEntry(data)
	if err != nil {
		return
	}
	m, err := parseMarkerFields(pe.Payload)
	if err != nil || len(m.nested[2]) != 1 {
		return
	}
	local, err := parseMsgID(m.nested[2][0])
	if err != nil {
		return
	}
	cps, err := parseClusterList(m.nested[3])
	if err != nil {
		return
	}
	ss := f.subState(l)
	if n := len(ss.snapshots); n > 0 && local.Compare(ss.snapshots[n-1].local) <= 0 {
		ss.snapshots = nil // the cursor moved back
	}
	ss.snapshots = append(ss.snapshots, snapshotEntry{local: local, clusters: cps})
	if len(ss.snapshots) > replSnapshotCacheLimit {
		// Keep the ends; drop the second oldest.
		ss.snapshots = slices.Delete(ss.snapshots, 1, 2)
	}
}

// MarkDeleteMoved writes an UPDATE when a replicated subscription's
// mark-delete position passed a cached snapshot
// (broker.ReplicatedSubscriptions).
func (f *Replication) MarkDeleteMoved(l broker.SubLoop) {
	ss := f.subs.Get(l)
	if ss == nil || ss.applying || len(ss.snapshots) == 0 {
		return
	}
	md := l.MarkDelete()
	idx := -1
	for i, sn := range ss.snapshots {
		if sn.local.Compare(md) <= 0 {
			idx = i
		}
	}
	if idx < 0 {
		return
	}
	sn := ss.snapshots[idx]
	ss.snapshots = slices.Delete(ss.snapshots, 0, idx+1)
	var p []byte
	p = appendStr(p, 1, l.Name())
	for _, c := range sn.clusters {
		p = appendClusterPos(p, 2, c)
	}
	t := l.Topic()
	l.Logger().Debug("replicated subscription update", "topic", t.Name(), "sub", l.Name(), "clusters", sn.clusters)
	go publishMarker(t, markerUpdate, nil, p)
}
