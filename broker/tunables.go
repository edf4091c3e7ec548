package broker

import (
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/brokerconf"
)

// tunables are the Config values that a dynamic configuration update
// (package dynconfig, wired by the stack) changes on the running broker.
// The rest of Config is fixed once New returns.
type tunables struct {
	// dispatchBatch is Config.DispatchBatch in force: every
	// subscription reads it before each read.
	dispatchBatch atomic.Int32
	// maxPartitions is Config.MaxPartitionsPerTopic in force (<= 0: no
	// limit below 2^31-1).
	maxPartitions atomic.Int64
}

func (t *tunables) init(c *brokerconf.Config) {
	t.dispatchBatch.Store(int32(c.DispatchBatch))
	t.maxPartitions.Store(int64(c.MaxPartitionsPerTopic))
}

// SetDispatchBatch changes the most entries one dispatcher read fetches
// (Pulsar's dispatcherMaxReadBatchSize) on every subscription, from its
// next read on; n < 1 restores Config.DispatchBatch.
func (b *Broker) SetDispatchBatch(n int) {
	if n < 1 {
		n = b.cfg.DispatchBatch
	}
	b.tun.dispatchBatch.Store(int32(min(n, 1<<31-1)))
}

// DispatchBatch is the most entries one dispatcher read fetches now.
func (b *Broker) DispatchBatch() int { return int(b.tun.dispatchBatch.Load()) }

// SetMaxPartitionsPerTopic changes Pulsar's
// maxNumPartitionsPerPartitionedTopic (n <= 0: no limit).
func (b *Broker) SetMaxPartitionsPerTopic(n int) { b.tun.maxPartitions.Store(int64(n)) }

// MaxPartitionsPerTopic is the broker's
// maxNumPartitionsPerPartitionedTopic (0: only the int32 range).
func (b *Broker) MaxPartitionsPerTopic() int { return int(max(b.tun.maxPartitions.Load(), 0)) }
