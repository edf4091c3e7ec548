package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Generated producer names. A producer that gives no name gets
// "<cluster>-<brokerId>-<counter>", as in Pulsar, where brokerId is a
// distributed id this broker took from the metadata store at start (a
// sequential node under producerNameCounter; the per-parent counter is
// never reused) and counter counts this broker's generated names. So a
// name is unique across brokers and restarts: a producer created after a
// restart cannot take the name of one that is still reconnecting, which
// would then get ProducerBusy forever (and, with deduplication, inherit
// its sequence ids).
const producerNameCounter = "/counters/producer-name"

// initProducerNames takes this broker's distributed id; Start calls it
// before accepting connections.
func (b *Broker) initProducerNames(ctx context.Context) error {
	p, err := b.deps.Metadata.CreateSequential(ctx, producerNameCounter+"/id-", nil)
	if err != nil {
		return fmt.Errorf("broker: producer-name id: %w", err)
	}
	id, err := strconv.ParseUint(strings.TrimPrefix(metadata.Base(p), "id-"), 10, 64)
	if err != nil {
		return fmt.Errorf("broker: producer-name id node %q: %w", p, err)
	}
	// The counter lives in the parent; the node itself is not needed.
	if err := b.deps.Metadata.Delete(ctx, p, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		b.log.Warn("deleting producer-name id node", "path", p, "err", err)
	}
	b.producerPrefix = b.cfg.ClusterName + "-" + strconv.FormatUint(id, 10) + "-"
	return nil
}

// newProducerName returns the next generated producer name.
func (b *Broker) newProducerName() string {
	return b.producerPrefix + strconv.FormatUint(b.producerSeq.Add(1)-1, 10)
}
