package perf

import (
	"context"
	"fmt"
	"time"

	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// cumulativeAckEvery is how often Consume acks cumulatively with
// --ack-mode cumulative: every that many messages of each topic partition
// a consumer reads, and the last message of each before the consumer
// closes.
const cumulativeAckEvery = 100

// Consume runs consumers as configured, acking as AckMode says
// (individual by default: every message), until
// NumMessages arrived, Duration passed, IdleTimeout elapsed without a
// message (after the first) or ctx is done, and returns the summary.
//
// Ready, if not nil, is closed once every consumer is subscribed, so a
// caller can start producing into a "latest" subscription without losing
// the first messages.
func Consume(ctx context.Context, cfg ConsumeConfig, ready chan<- struct{}) (Summary, error) {
	topics, err := prepare(ctx, &cfg, false)
	if err != nil {
		return Summary{}, err
	}
	stype, _ := ParseSubscriptionType(cfg.SubscriptionType)
	pos, _ := ParsePosition(cfg.Position)
	ackMode, _ := ParseAckMode(cfg.AckMode)
	if ackMode == AckDefault {
		ackMode = AckIndividual
	}
	client, err := newClient(&cfg.Common, 0)
	if err != nil {
		return Summary{}, fmt.Errorf("perf: client: %w", err)
	}
	defer client.Close()

	var consumers []*pulsarclient.Consumer
	defer func() {
		for _, c := range consumers {
			c.Close()
		}
	}()
	for _, topic := range topics {
		for range cfg.NumConsumers {
			c, err := client.Subscribe(pulsarclient.ConsumerOptions{
				Topic:                       topic,
				SubscriptionName:            cfg.Subscription,
				Type:                        stype,
				SubscriptionInitialPosition: pos,
				ReceiverQueueSize:           cfg.ReceiverQueueSize,
			})
			if err != nil {
				return Summary{}, fmt.Errorf("perf: subscribe to %s: %w", topic, err)
			}
			consumers = append(consumers, c)
		}
	}
	if ready != nil {
		close(ready)
	}

	sum := runConsumers(ctx, &cfg, len(consumers), func(runCtx context.Context, i int, sh *Shard, p *consumeProgress) {
		c := consumers[i]
		ch := c.Chan()
		// With cumulative acks, per topic (a cumulative ack on a
		// partitioned topic covers only its message's partition): the
		// latest message not yet covered by one, and how many since.
		type cumState struct {
			unacked *pulsarclient.Message
			since   int
		}
		cum := map[string]*cumState{}
		defer func() {
			for _, cs := range cum {
				if cs.unacked != nil {
					c.AckCumulative(cs.unacked)
				}
			}
		}()
		for {
			select {
			case <-runCtx.Done():
				return
			case cm, ok := <-ch:
				if !ok {
					return
				}
				now := time.Now()
				lat := time.Duration(-1)
				if cfg.PayloadTimestamp {
					lat = stampLatency(cm.Payload(), now)
				} else if pt := cm.PublishTime(); !pt.IsZero() {
					lat = max(now.Sub(pt), 0)
				}
				sh.Record(len(cm.Payload()), lat)
				switch ackMode {
				case AckIndividual:
					c.Ack(cm.Message)
				case AckCumulative:
					cs := cum[cm.Topic()]
					if cs == nil {
						cs = &cumState{}
						cum[cm.Topic()] = cs
					}
					cs.unacked = cm.Message
					if cs.since++; cs.since >= cumulativeAckEvery {
						c.AckCumulative(cm.Message)
						cs.unacked, cs.since = nil, 0
					}
				}
				if p.got(1, now) {
					return
				}
			}
		}
	})
	return finishRun(sum, nil, "consume")
}
