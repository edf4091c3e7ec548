// Command goclient is bench/latency's pulsar-client-go producer and
// tailing consumer: issue 20 states its latency targets for
// github.com/apache/pulsar-client-go, while `magnetar perf` runs on the
// project's own client. It writes the same JSON summary as `magnetar perf
// --json` (bench/perf.Summary), so run.sh reads either (CLIENT=go|magnetar).
//
//	goclient produce --service-url URL --topic T --rate 10000 --size 200 --duration 30s --batch-delay 1ms --window 10s
//	goclient consume --service-url URL --topic T --subscription tail --window 10s --idle-timeout 3s
//
// produce sends at a fixed rate (each producer sends the messages due by
// now, then sleeps until the next is due, as pulsar-perf's rate limiter
// does), stamps the send time, Unix nanoseconds big-endian, into the
// first 8 payload bytes, and records SendAsync -> receipt per message. consume
// subscribes (Exclusive, earliest) and records receive - stamp per
// message until no message came for --idle-timeout after the first.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/bench/perf"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: goclient produce|consume [flags]")
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	url := fs.String("service-url", "pulsar://127.0.0.1:6650", "broker service URL")
	topic := fs.String("topic", "lat", "topic")
	window := fs.Duration("window", 10*time.Second, "latency window")
	rate := fs.Float64("rate", 10000, "produce: messages per second, 0 = as fast as the producers go")
	size := fs.Int("size", 200, "produce: payload bytes (>= 8)")
	duration := fs.Duration("duration", 30*time.Second, "produce: how long to send")
	producers := fs.Int("num-producers", 1, "produce: producers, the rate split between them")
	batchDelay := fs.Duration("batch-delay", time.Millisecond, "produce: BatchingMaxPublishDelay")
	batchMsgs := fs.Uint("batch-max-messages", 1000, "produce: BatchingMaxMessages")
	batchBytes := fs.Uint("batch-max-bytes", 128<<10, "produce: BatchingMaxSize")
	noBatch := fs.Bool("disable-batching", false, "produce: one message per entry")
	pending := fs.Int("max-pending", 10000, "produce: MaxPendingMessages")
	memLimit := fs.Int64("memory-limit", 0, "produce: ClientOptions.MemoryLimitBytes (0 = the client's default)")
	sub := fs.String("subscription", "tail", "consume: subscription name")
	idle := fs.Duration("idle-timeout", 3*time.Second, "consume: stop after no message for this long")
	queue := fs.Int("receiver-queue-size", 1000, "consume: ReceiverQueueSize")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	traceFile := fs.String("trace", "", "write a Go execution trace of the run to this file")
	fs.Parse(os.Args[2:])
	stop, err := profile(*cpuProfile, *traceFile)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: *url, Logger: plog.DefaultNopLogger(), OperationTimeout: 60 * time.Second, MemoryLimitBytes: *memLimit})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	var sum perf.Summary
	switch os.Args[1] {
	case "produce":
		if *size < 8 {
			log.Fatal("size must be at least 8")
		}
		sum, err = produce(client, *topic, *rate, *size, *duration, *producers, *window, pulsar.ProducerOptions{
			Topic: *topic, DisableBatching: *noBatch, BatchingMaxPublishDelay: *batchDelay,
			BatchingMaxMessages: *batchMsgs, BatchingMaxSize: *batchBytes, MaxPendingMessages: *pending,
			SendTimeout: time.Minute,
		})
	case "consume":
		sum, err = consume(client, *topic, *sub, *queue, *idle, *window)
	default:
		log.Fatalf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
	stop()
	json.NewEncoder(os.Stdout).Encode(sum)
}

// profile starts a CPU profile and an execution trace where asked; the
// returned func stops both and may be called more than once.
func profile(cpuFile, traceFile string) (func(), error) {
	var closers []func()
	stop := func() {
		for _, c := range closers {
			c()
		}
		closers = nil
	}
	if cpuFile != "" {
		f, err := os.Create(cpuFile)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		closers = append(closers, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if traceFile != "" {
		f, err := os.Create(traceFile)
		if err != nil {
			stop()
			return nil, err
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			stop()
			return nil, err
		}
		closers = append(closers, func() { trace.Stop(); f.Close() })
	}
	return stop, nil
}

func produce(client pulsar.Client, topic string, rate float64, size int, d time.Duration, n int, window time.Duration, po pulsar.ProducerOptions) (perf.Summary, error) {
	ps := make([]pulsar.Producer, n)
	for i := range ps {
		p, err := client.CreateProducer(po)
		if err != nil {
			return perf.Summary{}, err
		}
		defer p.Close()
		ps[i] = p
	}
	start := time.Now()
	st := perf.NewStats(n, start)
	finish := st.StartWindows(window)
	var firstErr atomic.Pointer[error]
	done := make(chan struct{}, n)
	for i, p := range ps {
		go func() {
			defer func() { done <- struct{}{} }()
			sh := st.Shard(i)
			perProducer := rate / float64(n)
			for sent := 0; ; {
				el := time.Since(start)
				if el >= d {
					break
				}
				due := int(el.Seconds()*perProducer) + 1
				if rate <= 0 {
					due = sent + 1000 // unpaced: SendAsync blocks at max-pending
				}
				for ; sent < due; sent++ {
					payload := make([]byte, size)
					at := time.Now()
					binary.BigEndian.PutUint64(payload, uint64(at.UnixNano()))
					p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
						if err != nil {
							sh.Error()
							firstErr.CompareAndSwap(nil, &err)
							return
						}
						sh.Record(size, time.Since(at))
					})
				}
				if rate <= 0 {
					continue
				}
				next := start.Add(time.Duration(float64(sent) / perProducer * float64(time.Second)))
				if w := time.Until(next); w > 0 {
					time.Sleep(w)
				}
			}
			if err := p.FlushWithCtx(context.Background()); err != nil {
				sh.Error()
			}
		}()
	}
	for range n {
		<-done
	}
	end := time.Now()
	finish(end)
	sum := st.Summary("produce", end)
	sum.LatencyOf = "publish"
	if e := firstErr.Load(); e != nil {
		sum.FirstError = (*e).Error()
	}
	return sum, nil
}

func consume(client pulsar.Client, topic, sub string, queue int, idle, window time.Duration) (perf.Summary, error) {
	c, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic: topic, SubscriptionName: sub, Type: pulsar.Exclusive,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: queue,
	})
	if err != nil {
		return perf.Summary{}, err
	}
	defer c.Close()
	// Ready: run.sh waits for the subscription to exist before producing.
	fmt.Fprintln(os.Stderr, "subscribed")
	start := time.Now()
	st := perf.NewStats(1, start)
	finish := st.StartWindows(window)
	sh := st.Shard(0)
	// Messages come from the consumer's channel, as pulsar-perf's Go
	// consumer reads them: a Receive with a deadline per message built a
	// context and a timer each time, ~11 % of this process's CPU at
	// 100k msgs/s. Idleness is checked by a ticker instead.
	tick := time.NewTicker(max(min(idle/4, 250*time.Millisecond), time.Millisecond))
	defer tick.Stop()
	var last time.Time // last message; zero until the first
	ch := c.Chan()
	firstBy := time.Now().Add(10 * time.Minute) // the first message may be a while
loop:
	for {
		select {
		case cm, ok := <-ch:
			if !ok {
				return perf.Summary{}, errors.New("consumer closed")
			}
			now := time.Now()
			last = now
			if p := cm.Payload(); len(p) >= 8 {
				sent := time.Unix(0, int64(binary.BigEndian.Uint64(p)))
				sh.Record(len(p), now.Sub(sent))
			}
			c.Ack(cm.Message)
		case now := <-tick.C:
			if (last.IsZero() && now.After(firstBy)) || (!last.IsZero() && now.Sub(last) >= idle) {
				break loop
			}
		}
	}
	end := time.Now()
	finish(end)
	sum := st.Summary("consume", end)
	sum.LatencyOf = "end_to_end"
	return sum, nil
}
