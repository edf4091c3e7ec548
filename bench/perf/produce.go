package perf

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// Produce runs producers as configured until NumMessages were sent,
// Duration passed or ctx is done, then flushes and closes them and
// returns the summary. Only acknowledged sends count as messages.
func Produce(ctx context.Context, cfg ProduceConfig) (Summary, error) {
	topics, err := prepare(ctx, &cfg, false)
	if err != nil {
		return Summary{}, err
	}
	comp, _ := ParseCompression(cfg.Compression)
	client, err := newClient(&cfg.Common, cfg.MemoryLimit)
	if err != nil {
		return Summary{}, fmt.Errorf("perf: client: %w", err)
	}
	defer client.Close()

	var producers []*pulsarclient.Producer
	defer func() {
		for _, p := range producers {
			p.Close()
		}
	}()
	for _, topic := range topics {
		for range cfg.NumProducers {
			p, err := client.CreateProducer(pulsarclient.ProducerOptions{
				Topic:                   topic,
				MaxPendingMessages:      cfg.MaxPending,
				DisableBatching:         cfg.DisableBatching,
				BatchingMaxMessages:     cfg.BatchMaxMessages,
				BatchingMaxSize:         cfg.BatchMaxBytes,
				BatchingMaxPublishDelay: cfg.BatchDelay,
				CompressionType:         comp,
				SendTimeout:             -1, // measure, never drop
			})
			if err != nil {
				return Summary{}, fmt.Errorf("perf: create producer on %s: %w", topic, err)
			}
			producers = append(producers, p)
		}
	}

	payload := randomPayload(cfg.Size)
	runCtx, cancel := runContext(ctx, &cfg.Common)
	defer cancel()
	sendCtx := context.WithoutCancel(runCtx)
	var issued atomic.Int64
	perProducer := cfg.Rate / float64(len(producers))
	var firstErr error
	var errOnce sync.Once
	st, end := runWorkers("produce", &cfg.Common, len(producers), nil, func(i int, sh *Shard) {
		p := producers[i]
		// A burst of 100 ms: on a loaded machine a timer wakes up late, and
		// the slots lost to that must be made up, or the rate falls short.
		lim := NewLimiter(perProducer, max(1, int(perProducer/10)))
		msg := func(t time.Time) *pulsarclient.ProducerMessage {
			if cfg.PayloadTimestamp {
				return &pulsarclient.ProducerMessage{Payload: stampPayload(payload, t)}
			}
			return &pulsarclient.ProducerMessage{Payload: payload}
		}
		for {
			if cfg.NumMessages > 0 && issued.Add(1) > cfg.NumMessages {
				break
			}
			if lim.Wait(runCtx) != nil {
				break
			}
			t0 := time.Now()
			// sendCtx, not runCtx: a send already blocked on the pending
			// limit when the run ends completes normally (and is counted)
			// instead of failing; the loop itself stops on runCtx.
			p.SendAsync(sendCtx, msg(t0), func(_ pulsarclient.MessageID, _ *pulsarclient.ProducerMessage, err error) {
				if err != nil {
					// A send cut short by the end of the run is not a failure.
					if runCtx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
						sh.Error()
						errOnce.Do(func() { firstErr = err })
					}
					return
				}
				sh.Record(cfg.Size, time.Since(t0))
			})
		}
		if err := p.FlushWithCtx(context.WithoutCancel(ctx)); err != nil {
			errOnce.Do(func() { firstErr = err })
		}
	})
	sum := st.Summary("produce", end)
	sum.LatencyOf = "publish"
	return finishRun(sum, firstErr, "produce")
}
