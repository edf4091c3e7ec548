package broker

import (
	"context"
	"errors"
	"math"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

func (c *conn) handleRedeliver(m *pb.CommandRedeliverUnacknowledgedMessages) {
	cc := c.consumer(m.GetConsumerId())
	if cc == nil || cc.sub == nil {
		return
	}
	ids := make([]position, 0, len(m.MessageIds))
	for _, id := range m.MessageIds {
		ids = append(ids, position{LedgerID: int64(id.GetLedgerId()), EntryID: int64(id.GetEntryId())})
	}
	cc.sub.Do(func() { cc.sub.Redeliver(cc.c, ids) })
}

func (c *conn) handleSeek(m *pb.CommandSeek) {
	rid := m.GetRequestId()
	cc := c.consumer(m.GetConsumerId())
	if cc == nil || cc.sub == nil {
		c.sendError(rid, codeConsumerNotFound, "Consumer not found")
		return
	}
	var pos position
	byTime := m.MessagePublishTime != nil
	switch {
	case byTime:
	case m.MessageId != nil:
		pos = startPosition(m.MessageId)
	default:
		c.sendError(rid, codeNotAllowed, "Message id and message publish time were not present")
		return
	}
	cc.topic.seek(cc.sub, pos, byTime, int64(m.GetMessagePublishTime()), func(err error) {
		if err != nil {
			c.sendError(rid, codeUnknownError, "Reset subscription failed: "+err.Error())
			return
		}
		c.sendSuccess(rid)
	})
}

func (c *conn) handleGetLastMessageID(m *pb.CommandGetLastMessageId) {
	rid := m.GetRequestId()
	cc := c.consumer(m.GetConsumerId())
	if cc == nil || cc.sub == nil {
		c.sendError(rid, codeConsumerNotFound, "Consumer not found")
		return
	}
	t := cc.topic
	pos, batchIndex, ok := t.lastMessage()
	last := &pb.MessageIdData{LedgerId: ptr(uint64(pos.LedgerID)), EntryId: ptr(uint64(pos.EntryID))}
	if !ok {
		last.EntryId = ptr(uint64(math.MaxUint64)) // -1: no message
	}
	var md position
	var compacted LastReadableCursor
	if !cc.sub.Call(func() { md = cc.sub.Cursor().MarkDelete(); compacted, _ = cc.sub.Cursor().(LastReadableCursor) }) {
		c.sendError(rid, codeConsumerNotFound, "Consumer is closed")
		return
	}
	if compacted != nil && ok {
		// read_compacted: when the last entry is compacted away, the
		// last message the reader can get is the compacted ledger's last.
		if cp, cbi, cok, applies := compacted.LastReadable(pos); applies {
			batchIndex = cbi
			last = &pb.MessageIdData{LedgerId: ptr(uint64(cp.LedgerID)), EntryId: ptr(uint64(cp.EntryID))}
			if !cok {
				last.EntryId = ptr(uint64(math.MaxUint64))
			}
		}
	}
	if t.name.PartitionIndex >= 0 {
		last.Partition = ptr(int32(t.name.PartitionIndex))
	}
	if batchIndex >= 0 {
		last.BatchIndex = &batchIndex
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE.Enum(), GetLastMessageIdResponse: &pb.CommandGetLastMessageIdResponse{
		RequestId:                  &rid,
		LastMessageId:              last,
		ConsumerMarkDeletePosition: &pb.MessageIdData{LedgerId: ptr(uint64(md.LedgerID)), EntryId: ptr(uint64(md.EntryID))},
	}})
}

func (c *conn) handleUnsubscribe(m *pb.CommandUnsubscribe) {
	rid := m.GetRequestId()
	cid := m.GetConsumerId()
	cc := c.attachedConsumer(cid) // on its op: nothing else pending for cid
	if cc == nil || cc.sub == nil {
		c.sendError(rid, codeConsumerNotFound, "Consumer not found")
		return
	}
	if err := cc.topic.unsubscribe(cc.sub, cc.c, m.GetForce()); err != nil {
		var se *errSubscribe
		if errors.As(err, &se) {
			c.sendError(rid, se.code, se.msg)
		} else {
			c.sendError(rid, codeUnknownError, err.Error())
		}
		return
	}
	c.mu.Lock()
	if c.mu.consumers[cid] == cc {
		delete(c.mu.consumers, cid)
	}
	c.mu.Unlock()
	c.sendSuccess(rid)
}

func (c *conn) handleCloseProducer(m *pb.CommandCloseProducer) {
	pid := m.GetProducerId()
	if c.cancelOp(&c.mu.pendingProducers, pid) {
		c.sendSuccess(m.GetRequestId())
		return
	}
	c.mu.Lock()
	p := c.mu.producers[pid]
	delete(c.mu.producers, pid)
	c.mu.Unlock()
	if p != nil {
		p.topic.removeProducer(p)
		p.topic.held.drop(heldBy(p))
	}
	c.sendSuccess(m.GetRequestId())
}

func (c *conn) handleCloseConsumer(m *pb.CommandCloseConsumer) {
	cid := m.GetConsumerId()
	if c.cancelOp(&c.mu.pendingConsumers, cid) {
		c.sendSuccess(m.GetRequestId())
		return
	}
	c.mu.Lock()
	cc := c.mu.consumers[cid]
	delete(c.mu.consumers, cid)
	c.mu.Unlock()
	if cc != nil && cc.sub != nil {
		cc.topic.removeConsumer(cc.sub, cc.c)
	}
	c.sendSuccess(m.GetRequestId())
}

func (c *conn) handleGetTopicsOfNamespace(m *pb.CommandGetTopicsOfNamespace) {
	rid := m.GetRequestId()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	ns := m.GetNamespace()
	var topics []string
	if ok, err := c.b.reg.NamespaceExists(ctx, ns); err == nil && ok {
		mode := m.GetMode()
		topics, err = c.b.topicsOfNamespace(ctx, ns,
			mode == pb.CommandGetTopicsOfNamespace_PERSISTENT || mode == pb.CommandGetTopicsOfNamespace_ALL,
			mode == pb.CommandGetTopicsOfNamespace_NON_PERSISTENT || mode == pb.CommandGetTopicsOfNamespace_ALL)
		if err != nil {
			c.sendError(rid, codeMetadataError, err.Error())
			return
		}
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE.Enum(), GetTopicsOfNamespaceResponse: &pb.CommandGetTopicsOfNamespaceResponse{
		RequestId: &rid, Topics: topics, Filtered: ptr(false), Changed: ptr(true),
	}})
}

// clientEntry is what a consumer receives of a stored entry: the entry
// as stored when broker entry metadata is exposed and the client said it
// supports it, else without the 0x0e02 block.
func (c *conn) clientEntry(data []byte) []byte {
	if c.b.cfg.ExposeBrokerEntryMetadata && c.bemSupported.Load() {
		return data
	}
	return pulsarproto.StripBrokerEntryMetadata(data)
}
