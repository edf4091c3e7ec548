package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"

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

// producerNames generates the names: prefix is "<cluster>-<brokerId>-",
// set by Start before the first connection; seq counts the names.
type producerNames struct {
	prefix string
	seq    atomic.Uint64
}

// init takes this broker's distributed id from md; Start calls it
// before accepting connections.
func (n *producerNames) init(ctx context.Context, md metadata.Store, clusterName string, log *slog.Logger) error {
	p, err := md.CreateSequential(ctx, producerNameCounter+"/id-", nil)
	if err != nil {
		return fmt.Errorf("broker: producer-name id: %w", err)
	}
	id, err := strconv.ParseUint(strings.TrimPrefix(metadata.Base(p), "id-"), 10, 64)
	if err != nil {
		return fmt.Errorf("broker: producer-name id node %q: %w", p, err)
	}
	// The counter lives in the parent; the node itself is not needed.
	if err := md.Delete(ctx, p, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		log.Warn("deleting producer-name id node", "path", p, "err", err)
	}
	n.prefix = clusterName + "-" + strconv.FormatUint(id, 10) + "-"
	return nil
}

// next returns the next generated producer name.
func (n *producerNames) next() string {
	return n.prefix + strconv.FormatUint(n.seq.Add(1)-1, 10)
}
