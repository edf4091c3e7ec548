package broker

import (
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// handleConsumerStats answers CONSUMER_STATS with the consumer's part of
// its subscription's stats (rates of the last stats window).
func (c *conn) handleConsumerStats(m *pb.CommandConsumerStats) {
	rid := m.GetRequestId()
	resp := &pb.CommandConsumerStatsResponse{RequestId: &rid}
	send := func() {
		c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_CONSUMER_STATS_RESPONSE.Enum(), ConsumerStatsResponse: resp})
	}
	cc := c.consumer(m.GetConsumerId())
	if cc == nil || cc.sub == nil {
		resp.ErrorCode = pb.ServerError_ConsumerNotFound.Enum()
		resp.ErrorMessage = ptr("Consumer not found")
		send()
		return
	}
	s, co := cc.sub, cc.c
	var ss SubscriptionStats
	var cs ConsumerStats
	found := false
	ok := s.call(func() {
		ss = s.statsLocked()
		for i, x := range s.consumers {
			if x == co {
				cs, found = ss.Consumers[i], true
			}
		}
	})
	if !ok || !found {
		resp.ErrorCode = pb.ServerError_ConsumerNotFound.Enum()
		resp.ErrorMessage = ptr("Consumer not found")
		send()
		return
	}
	resp.MsgRateOut = ptr(cs.MsgRateOut)
	resp.MsgThroughputOut = ptr(cs.MsgThroughputOut)
	resp.MsgRateRedeliver = ptr(cs.MsgRateRedeliver)
	resp.ConsumerName = ptr(cs.ConsumerName)
	resp.AvailablePermits = ptr(uint64(max(cs.AvailablePermits, 0)))
	resp.UnackedMessages = ptr(uint64(max(cs.UnackedMessages, 0)))
	resp.BlockedConsumerOnUnackedMsgs = ptr(cs.BlockedConsumerOnUnackedMsgs)
	resp.Address = ptr(cs.Address)
	resp.ConnectedSince = ptr(cs.ConnectedSince)
	resp.Type = ptr(ss.Type)
	resp.MsgRateExpired = ptr(ss.MsgRateExpired)
	resp.MsgBacklog = ptr(uint64(max(ss.MsgBacklog, 0)))
	resp.MessageAckRate = ptr(cs.MessageAckRate)
	send()
}
