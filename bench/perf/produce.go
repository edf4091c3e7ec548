package perf

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
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

	var producers []pulsar.Producer
	defer func() {
		for _, p := range producers {
			p.Close()
		}
	}()
	for _, topic := range topics {
		for range cfg.NumProducers {
			p, err := client.CreateProducer(pulsar.ProducerOptions{
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
		msg := func(t time.Time) *pulsar.ProducerMessage {
			if cfg.PayloadTimestamp {
				return &pulsar.ProducerMessage{Payload: stampPayload(payload, t)}
			}
			return &pulsar.ProducerMessage{Payload: payload}
		}
		for {
			if cfg.NumMessages > 0 && issued.Add(1) > cfg.NumMessages {
				break
			}
			if lim.Wait(runCtx) != nil {
				break
			}
			t0 := time.Now()
			// sendCtx, not runCtx: pulsar-client-go v0.19's pending-message
			// semaphore loses a permit hand-off when the context of a
			// SendAsync blocked on it is cancelled (Release then blocks the
			// connection's reader goroutine on an unbuffered channel with no
			// receiver: no receipts are read), which stalled the end-of-run flush for
			// 60 s in about one max-rate run in three. The loop stops on
			// runCtx instead; a send already blocked completes normally.
			p.SendAsync(sendCtx, msg(t0), func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					// A send cut short by the end of the run (the client reports
					// ErrContextExpired) is not a failure.
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
