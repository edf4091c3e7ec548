package dispatch

import (
	"fmt"

	"github.com/magnetar-mq/magnetar/broker/selector"
)

// Key_Shared ordering when a consumer joins (Pulsar's "recently joined
// consumers"). Keys move to a consumer that joins a Key_Shared
// subscription with consumers already reading: messages of those keys
// read before it joined may still be unacknowledged at their previous
// consumer. So the new consumer is restricted to entries at or before
// the last entry read when it joined (maxPos; they precede anything of
// its keys the previous owner could still be given) until the
// subscription's mark-delete position reaches maxPos, i.e. every earlier
// message was acknowledged. Entries of its keys after maxPos wait in the
// replay set meanwhile. A consumer that set allowOutOfOrderDelivery in
// its KeySharedMeta is not restricted, nor is the first consumer.

// noteJoinLocked restricts c, which was just added to a Key_Shared
// subscription, as described above.
func (s *Subscription) noteJoinLocked(c *Consumer) {
	if s.typ != KeyShared || c.outOfOrder || !s.haveRead || len(s.consumers) < 2 {
		return
	}
	if md := s.cur.MarkDelete(); md.Compare(s.lastRead) >= 0 {
		return
	}
	c.recentJoin, c.maxPos = true, s.lastRead
}

// releaseJoined lifts the restriction of consumers whose earlier
// messages are all acknowledged.
func (s *Subscription) releaseJoined() {
	if s.typ != KeyShared {
		return
	}
	var md position
	got := false
	for _, c := range s.consumers {
		if !c.recentJoin {
			continue
		}
		if !got {
			md, got = s.cur.MarkDelete(), true
		}
		if md.Compare(c.maxPos) >= 0 {
			c.recentJoin = false
		}
	}
}

// pickJoined returns the consumer pe goes to now, nil if none may take
// it: pick's choice, unless that consumer joined recently and pe lies past
// its read position at joining.
func (s *Subscription) pickJoined(pe *Entry) *Consumer {
	c := s.pick(pe.key)
	if c != nil && c.recentJoin && pe.pos.Compare(c.maxPos) > 0 {
		return nil
	}
	return c
}

// joinPosString is the consumer's readPositionWhenJoining for stats.
func (c *Consumer) joinPosString() string {
	if !c.recentJoin {
		return ""
	}
	return fmt.Sprintf("%d:%d", c.maxPos.LedgerID, c.maxPos.EntryID+1)
}

// avgPerEntry is the average number of messages per entry sent to c.
func (c *Consumer) avgPerEntry() int {
	if c.entriesOut == 0 {
		return 0
	}
	return int(c.msgOut / c.entriesOut)
}

// keyHashRanges returns the Key_Shared slot ranges c owns, for stats.
func (s *Subscription) keyHashRanges(c *Consumer) []string {
	if ks, ok := s.sel.(*selector.KeyShared[*Consumer]); ok {
		return ks.RangesOf(c)
	}
	return nil
}
