package sdk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// Func handles one input message; a non-nil result is published to the
// output topic. An error counts as a user exception and, unless the
// guarantee is ATMOST_ONCE, the message is redelivered (and after
// maxMessageRetries sent to the dead-letter topic, when one is set).
type Func func(ctx *Context, in []byte) ([]byte, error)

// Run runs fn as this process's function until SIGTERM; it exits the
// process on a fatal error.
func Run(fn Func) {
	in, ctx, closeAll, err := Start()
	if err != nil {
		fatal(err)
	}
	err = in.Serve(ctx, fn)
	closeAll()
	if err != nil {
		fatal(err)
	}
}

// Subscribe creates the instance's consumer on its inputs.
func (in *Instance) Subscribe() (*pulsarclient.Consumer, error) {
	s := in.Spec
	opts := pulsarclient.ConsumerOptions{SubscriptionName: s.SubName, Type: pulsarclient.Shared,
		NackRedeliveryDelay: 200 * time.Millisecond, ReceiverQueueSize: 1000,
		SubscriptionInitialPosition: pulsarclient.SubscriptionPositionLatest}
	if s.SubscriptionType == "Failover" {
		opts.Type = pulsarclient.Failover
	} else if s.Parallelism > 1 {
		// A small prefetch lets the broker spread a Shared subscription's
		// backlog over the instances instead of filling the first one.
		opts.ReceiverQueueSize = 20
	}
	if s.SubscriptionPosition == "Earliest" {
		opts.SubscriptionInitialPosition = pulsarclient.SubscriptionPositionEarliest
	}
	switch {
	case s.TopicsPattern != "":
		opts.TopicsPattern = s.TopicsPattern
		opts.AutoDiscoveryPeriod = 5 * time.Second
	case len(s.Inputs) == 1:
		opts.Topic = s.Inputs[0]
	default:
		opts.Topics = s.Inputs
	}
	if s.DeadLetterTopic != "" {
		opts.DLQ = &pulsarclient.DLQPolicy{MaxDeliveries: uint32(s.MaxMessageRetries) + 1, DeadLetterTopic: s.DeadLetterTopic}
	}
	c, err := in.Client.Subscribe(opts)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s to %v%s: %w", s.SubName, s.Inputs, s.TopicsPattern, err)
	}
	return c, nil
}

// SequenceID derives an output sequence id from an input message id:
// ledgerId<<40 | entryId<<12 | (batchIndex+1). It increases with the
// input's position for ledger ids below 2^23 and entry ids below 2^28.
func SequenceID(id pulsarclient.MessageID) int64 {
	return id.LedgerID()<<40 | (id.EntryID()&(1<<28-1))<<12 | int64((id.BatchIdx()+1)&0xfff)
}

// dedupName is the output producer's name under EFFECTIVELY_ONCE: one per
// (function, input topic), whichever instance holds the input.
func dedupName(fqfn, topic string) string {
	r := strings.NewReplacer("/", "_", ":", "_")
	return "fn-" + r.Replace(fqfn) + "-" + r.Replace(strings.TrimPrefix(topic, "persistent://"))
}

// Serve consumes the inputs and runs fn until ctx ends, then waits for
// the in-flight outputs.
func (in *Instance) Serve(ctx context.Context, fn Func) error {
	cons, err := in.Subscribe()
	if err != nil {
		return err
	}
	defer cons.Close()
	s := in.Spec
	atMost := s.ProcessingGuarantees == "ATMOST_ONCE"
	effectively := s.ProcessingGuarantees == "EFFECTIVELY_ONCE"
	var inflight atomic.Int64
	idle := make(chan struct{}, 1)
	for {
		msg, err := cons.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			in.systemError(err)
			continue
		}
		in.Received(1)
		if atMost {
			_ = cons.Ack(msg)
		}
		t0 := time.Now()
		c := &Context{inst: in, msg: msg, ctx: ctx}
		out, ferr := fn(c, msg.Payload())
		if ferr != nil {
			in.userError(ferr)
			if !atMost {
				cons.Nack(msg)
			}
			continue
		}
		type send struct {
			p  *pulsarclient.Producer
			pm *pulsarclient.ProducerMessage
		}
		var sends []send
		failed := false
		if out != nil && s.Output != "" {
			name := ""
			pm := &pulsarclient.ProducerMessage{Payload: out, Key: msg.Key(), Properties: msg.Properties()}
			if effectively {
				name = dedupName(s.FQFN(), msg.Topic())
				seq := SequenceID(msg.ID())
				pm.SequenceID = &seq
			}
			p, err := in.producer(s.Output, name)
			if err != nil {
				in.systemError(err)
				failed = true
			} else {
				sends = append(sends, send{p, pm})
			}
		}
		for _, pm := range c.extra {
			topic := pm.Properties["__topic"]
			pm.Properties = nil
			p, err := in.producer(topic, "")
			if err != nil {
				in.systemError(err)
				failed = true
				continue
			}
			sends = append(sends, send{p, pm})
		}
		if failed {
			if !atMost {
				cons.Nack(msg)
			}
			continue
		}
		if len(sends) == 0 {
			if !atMost {
				_ = cons.Ack(msg)
			}
			in.processed(1, time.Since(t0))
			continue
		}
		pending := atomic.Int32{}
		pending.Store(int32(len(sends)))
		var sendFailed atomic.Bool
		inflight.Add(1)
		for _, sd := range sends {
			sd.p.SendAsync(context.Background(), sd.pm, func(_ pulsarclient.MessageID, _ *pulsarclient.ProducerMessage, err error) {
				if err != nil {
					sendFailed.Store(true)
					in.systemError(fmt.Errorf("publish: %w", err))
				}
				if pending.Add(-1) != 0 {
					return
				}
				if sendFailed.Load() {
					if !atMost {
						cons.Nack(msg)
					}
				} else {
					if !atMost {
						_ = cons.Ack(msg)
					}
					in.processed(1, time.Since(t0))
				}
				if inflight.Add(-1) == 0 {
					select {
					case idle <- struct{}{}:
					default:
					}
				}
			})
		}
	}
	// Answer the in-flight outputs before the consumer closes, so their
	// inputs are acknowledged.
	in.mu.Lock()
	for _, p := range in.producers {
		_ = p.FlushWithCtx(context.Background())
	}
	in.mu.Unlock()
	deadline := time.After(10 * time.Second)
	for inflight.Load() > 0 {
		select {
		case <-idle:
		case <-deadline:
			return nil
		}
	}
	return nil
}

// BatchFunc handles a batch of input messages (a sink). rejected names
// messages (by index) that are bad input: they are negatively
// acknowledged (so they reach the dead-letter topic after the retries)
// and counted as user exceptions. A nil error acknowledges the others; an
// error redelivers the whole batch.
type BatchFunc func(in *Instance, msgs []*pulsarclient.Message) (rejected map[int]error, err error)

// RunBatch consumes the inputs in batches of up to max messages, waiting
// at most linger after the first one, and hands them to fn.
func (in *Instance) RunBatch(ctx context.Context, max int, linger time.Duration, fn BatchFunc) error {
	cons, err := in.Subscribe()
	if err != nil {
		return err
	}
	defer cons.Close()
	atMost := in.Spec.ProcessingGuarantees == "ATMOST_ONCE"
	for ctx.Err() == nil {
		first, err := cons.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			in.systemError(err)
			continue
		}
		batch := []*pulsarclient.Message{first}
		t0 := time.Now()
		lctx, cancel := context.WithTimeout(ctx, linger)
		for len(batch) < max {
			m, err := cons.Receive(lctx)
			if err != nil {
				break
			}
			batch = append(batch, m)
		}
		cancel()
		in.Received(int64(len(batch)))
		if atMost {
			for _, m := range batch {
				_ = cons.Ack(m)
			}
		}
		rejected, err := fn(in, batch)
		if err != nil {
			in.userError(err)
			if !atMost {
				for _, m := range batch {
					cons.Nack(m)
				}
			}
			continue
		}
		for i, m := range batch {
			if rerr, bad := rejected[i]; bad {
				in.userError(rerr)
				if !atMost {
					cons.Nack(m)
				}
				continue
			}
			if !atMost {
				if err := cons.Ack(m); err != nil {
					in.systemError(err)
				}
			}
		}
		in.processed(int64(len(batch)-len(rejected)), time.Since(t0))
	}
	return nil
}

// Output returns the producer on the output topic; a non-empty name fixes
// the producer name (with broker deduplication, sends with explicit
// sequence ids are then idempotent).
func (in *Instance) Output(name string) (*pulsarclient.Producer, error) {
	if in.Spec.Output == "" {
		return nil, errors.New("no output topic")
	}
	return in.producer(in.Spec.Output, name)
}

// SourceName is the stable producer name of a source instance.
func (in *Instance) SourceName() string {
	return dedupName(in.Spec.FQFN(), fmt.Sprintf("source-%d", in.ID))
}
