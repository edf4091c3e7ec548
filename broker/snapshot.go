package broker

import (
	"time"

	"github.com/magnetar-mq/magnetar/broker/dispatch"
	"github.com/magnetar-mq/magnetar/broker/snap"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Snapshot and Counters fill package broker/snap's values (the
// read-only seam of the stats, metrics and history packages) from a
// topic, its producers, subscriptions and consumers.

// Snapshot reads the topic's state and counters. With storageReads it
// also reads the first unacknowledged entry of every subscription with a
// backlog (EarliestPublish) and, once after a load, the last entry
// (LastPublish): storage reads the admin API's stats make and a metrics
// scrape does not. Subscriptions are read on their loops; one that
// closes meanwhile is left out.
func (v Topic) Snapshot(storageReads bool) snap.Topic {
	t := v.t
	in := t.inWin.Rates()
	st := snap.Topic{
		MsgInCounter: t.msgIn.Load(), BytesInCounter: t.bytesIn.Load(),
		MsgRateIn: in[dispatch.WinMsgs], MsgThroughputIn: in[dispatch.WinBytes],
		PublishRateLimitedTimes: t.limits.publishLimited.Load(),
		Deduplicating:           t.dedupEnabled(),
		OwnerBroker:             t.b.net.brokerID(),
		Created:                 t.created,
		Subscriptions:           map[string]snap.Subscription{},
	}
	if !t.persistent() {
		st.Created = t.loadedMs
	} else {
		if storageReads {
			recoverLastPublish(t)
		}
		st.StorageEntries, st.StorageSize = t.ml.Size()
		if _, ok := t.ml.(offloadable); ok {
			ms := t.ml.Stats()
			st.Offload = &snap.Offload{OffloadedSize: ms.OffloadedSize, LastLedgerID: ms.Offload.LastOffloadLedgerID,
				LastSuccess: ms.Offload.LastOffloadSuccessMillis, LastFailure: ms.Offload.LastOffloadFailureMillis}
		}
	}
	st.LastPublish = t.lastPublish.Load()
	t.mu.Lock()
	st.WaitingPublishers = len(t.mu.waiting)
	st.Publishers = make([]snap.Publisher, 0, len(t.mu.producers))
	for _, p := range t.mu.producers {
		r := p.win.Rates()
		st.Publishers = append(st.Publishers, snap.Publisher{
			ProducerID: p.id, ProducerName: p.name, AccessMode: accessModeName(p.accessMode),
			MsgInCounter: p.msgIn.Load(), BytesInCounter: p.bytesIn.Load(),
			MsgRateIn: r[dispatch.WinMsgs], MsgThroughputIn: r[dispatch.WinBytes],
			Client: snap.Client{Address: p.address, ConnectedSince: p.connectedSince, ClientVersion: p.clientVersion, Metadata: p.metadata},
		})
	}
	subs := make([]*subscription, 0, len(t.mu.subs))
	for _, s := range t.mu.subs {
		subs = append(subs, s)
	}
	t.mu.Unlock()
	for _, s := range subs {
		var ss snap.Subscription
		if !s.Call(func() { ss = s.Snapshot() }) {
			continue
		}
		ss.IsReplicated = s.replicated.Load()
		if storageReads && ss.MsgBacklog > 0 {
			ss.EarliestPublish = earliestInBacklog(t, s)
		}
		st.Subscriptions[s.Name()] = ss
	}
	return st
}

// earliestInBacklog returns the publish time (unix ms) of the first
// unacknowledged message of s, 0 when unknown.
func earliestInBacklog(t *topic, s *subscription) int64 {
	if ca, ok := s.Cursor().(*storage.LedgerCursor); ok && t.persistent() {
		return ca.EarliestPublish()
	}
	return 0
}

// recoverLastPublish sets lastPublish, once per load, to the publish time
// of the topic's last entry when nothing was stored since the load (a
// storage read: the admin API's stats only).
func recoverLastPublish(t *topic) {
	if !t.persistent() || t.lastPublish.Load() != 0 || t.pubRecovered.Swap(true) {
		return
	}
	pos, ok := t.ml.LastConfirmed()
	if !ok {
		return
	}
	data, err := t.ml.ReadEntry(pos)
	if err != nil {
		t.pubRecovered.Store(false) // try again on the next stats
		return
	}
	if pt, err := storage.PublishTime(data); err == nil && pt > 0 {
		t.lastPublish.CompareAndSwap(0, pt)
	}
}

// ConnBytesIn returns the bytes read from client connections (binary
// protocol) since the broker started.
func (b *Broker) ConnBytesIn() int64 { return b.connBytesIn.Load() }

// Counters reads what a history sample needs, the counters, backlog and
// storage size that Snapshot reports, without taking a snapshot (which
// allocates for every publisher, subscription and consumer, over every
// loaded topic on each tick; TestScaleTopicsMemory guards it).
func (v Topic) Counters() snap.Counters {
	t := v.t
	c := snap.Counters{MsgIn: t.msgIn.Load(), BytesIn: t.bytesIn.Load()}
	if t.persistent() {
		_, c.Storage = t.ml.Size()
	}
	var buf [4]*subscription
	subs := buf[:0]
	t.mu.Lock()
	for _, s := range t.mu.subs {
		subs = append(subs, s)
	}
	t.mu.Unlock()
	if len(subs) == 0 {
		return c
	}
	// One closure for all the subscriptions (call hands it to the
	// subscription's loop when busy, so it lives on the heap); it runs
	// to completion or not at all before call returns.
	var sub *subscription
	read := func() {
		_, backlog := sub.Cursor().Backlog()
		msgs, bytes := sub.Sent()
		c.Backlog += backlog
		c.MsgOut += msgs
		c.BytesOut += bytes
	}
	for _, s := range subs {
		sub = s
		s.Call(read)
	}
	return c
}

// LoadedTopic returns the view of topic (or one partition) if this
// broker has it loaded; unlike Topic it never loads it.
func (b *Broker) LoadedTopic(topic string) (Topic, bool) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return Topic{}, false
	}
	t := b.lookupTopic(tn.String())
	if t == nil || t.isClosed() {
		return Topic{}, false
	}
	return Topic{t}, true
}

// handleConsumerStats answers CONSUMER_STATS with the consumer's part of
// its subscription's snapshot (rates of the last stats window).
func (c *conn) handleConsumerStats(m *pb.CommandConsumerStats) {
	rid := m.GetRequestId()
	resp := &pb.CommandConsumerStatsResponse{RequestId: &rid}
	var ss snap.Subscription
	var cs snap.Consumer
	found := false
	if cc := c.consumer(m.GetConsumerId()); cc != nil && cc.sub != nil {
		s, co := cc.sub, cc.c
		s.Call(func() { ss, cs, found = s.ConsumerSnapshot(co) })
	}
	if !found {
		resp.ErrorCode = pb.ServerError_ConsumerNotFound.Enum()
		resp.ErrorMessage = ptr("Consumer not found")
	} else {
		resp.MsgRateOut, resp.MsgThroughputOut = ptr(cs.MsgRateOut), ptr(cs.MsgThroughputOut)
		resp.MsgRateRedeliver, resp.MessageAckRate = ptr(cs.MsgRateRedeliver), ptr(cs.MessageAckRate)
		resp.ConsumerName = ptr(cs.ConsumerName)
		resp.AvailablePermits = ptr(uint64(max(cs.AvailablePermits, 0)))
		resp.UnackedMessages = ptr(uint64(max(cs.UnackedMessages, 0)))
		resp.BlockedConsumerOnUnackedMsgs = ptr(cs.BlockedConsumerOnUnackedMsgs)
		resp.Address = ptr(cs.Address)
		resp.ConnectedSince = ptr(cs.ConnectedSince.UTC().Format(time.RFC3339Nano))
		resp.Type = ptr(ss.Type)
		resp.MsgRateExpired = ptr(ss.MsgRateExpired)
		resp.MsgBacklog = ptr(uint64(max(ss.MsgBacklog, 0)))
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_CONSUMER_STATS_RESPONSE.Enum(), ConsumerStatsResponse: resp})
}

// offloadable is what the managed-ledger adapter offers for tiered
// storage (test fakes need not); the stats report an offloadable
// ledger's offload figures. Package tiered drives it.
type offloadable interface {
	SetOffloadPolicy(mledger.OffloadPolicy)
	StartOffload(mledger.Position) error
	OffloadStatus() mledger.OffloadStatus
}
