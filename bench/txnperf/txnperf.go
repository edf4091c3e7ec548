package txnperf

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Config is one case's load.
type Config struct {
	// Topic is the topic the case produces to (it should be new, so that
	// Verify reads only this case's messages).
	Topic string
	// Duration: producers start no new send (plain) or transaction
	// (txn-k) after it.
	Duration time.Duration
	// Producers run concurrently, each with its own producer.
	Producers int
	// PayloadSize is the size of each message (at least 16 bytes: every
	// payload is unique).
	PayloadSize int
	// MaxPending bounds the outstanding messages of a plain producer.
	MaxPending int
	// TxnTimeout is the timeout of each transaction.
	TxnTimeout time.Duration
	// Verify reads the topic back after the case (see the package doc).
	Verify bool
}

func (c *Config) defaults() {
	if c.Producers <= 0 {
		c.Producers = 1
	}
	if c.PayloadSize < 16 {
		c.PayloadSize = 16
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 1000
	}
	if c.TxnTimeout <= 0 {
		c.TxnTimeout = time.Minute
	}
}

// Result is one case's outcome.
type Result struct {
	Case     string // "plain" or "txn-<k>"
	TxnSize  int    // 0 for plain
	Messages int64
	Elapsed  time.Duration
	// Commits is the number of committed transactions; CommitP50/P99 the
	// Commit latency, TxnP50/P99 NewTransaction to committed (groups-k:
	// first send to last receipt of a group).
	Commits              int
	CommitP50, CommitP99 time.Duration
	TxnP50, TxnP99       time.Duration
	// ServerCPU is the broker's CPU time during the case (Run sets it
	// when it has a CPU source).
	ServerCPU time.Duration
}

// MsgsPerSec is the case's rate.
func (r Result) MsgsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Messages) / r.Elapsed.Seconds()
}

// payload returns a unique payload of size n for message i of producer w.
func payload(w, i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = 'x'
	}
	copy(b, fmt.Sprintf("p%03d-%011d", w, i))
	return b
}

// Plain runs the plain case on cl.
func Plain(ctx context.Context, cl pulsar.Client, cfg Config) (Result, error) {
	cfg.defaults()
	res := Result{Case: "plain"}
	var acked atomic.Int64
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }
	producers, err := createProducers(cl, cfg, cfg.MaxPending)
	if err != nil {
		return res, err
	}
	defer closeAll(producers)
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	var wg sync.WaitGroup
	for w, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sends sync.WaitGroup
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				sends.Add(1)
				p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload(w, i, cfg.PayloadSize)},
					func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
						if err != nil {
							fail(err)
						} else {
							acked.Add(1)
						}
						sends.Done()
					})
			}
			if err := p.FlushWithCtx(ctx); err != nil {
				fail(err)
			}
			sends.Wait()
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Messages = acked.Load()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return res, fmt.Errorf("txnperf: plain produce: %w", firstErr)
	}
	if cfg.Verify {
		if err := verify(ctx, cl, cfg.Topic, res.Messages); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Transactional runs the txn-k case on cl (a client with transactions
// enabled).
func Transactional(ctx context.Context, cl pulsar.Client, cfg Config, k int) (Result, error) {
	return groups(ctx, cl, cfg, k, true)
}

// Groups runs the groups-k case on cl: txn-k without the transaction
// (send k, flush, wait for the receipts, again), the baseline that
// isolates what the transaction adds.
func Groups(ctx context.Context, cl pulsar.Client, cfg Config, k int) (Result, error) {
	return groups(ctx, cl, cfg, k, false)
}

func groups(ctx context.Context, cl pulsar.Client, cfg Config, k int, useTxn bool) (Result, error) {
	cfg.defaults()
	if k <= 0 {
		return Result{}, errors.New("txnperf: transaction size must be positive")
	}
	res := Result{Case: fmt.Sprintf("groups-%d", k), TxnSize: k}
	if useTxn {
		res.Case = fmt.Sprintf("txn-%d", k)
	}
	producers, err := createProducers(cl, cfg, k)
	if err != nil {
		return res, err
	}
	defer closeAll(producers)
	type worker struct {
		msgs         int64
		commit, full []time.Duration
		err          error
	}
	workers := make([]worker, len(producers))
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	var wg sync.WaitGroup
	for w, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := &workers[w]
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; {
				t0 := time.Now()
				var tx pulsar.Transaction
				if useTxn {
					var err error
					if tx, err = cl.NewTransaction(cfg.TxnTimeout); err != nil {
						wk.err = fmt.Errorf("new transaction: %w", err)
						return
					}
				}
				var sends sync.WaitGroup
				var sendErr atomic.Pointer[error]
				for range k {
					sends.Add(1)
					p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload(w, i, cfg.PayloadSize), Transaction: tx},
						func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
							if err != nil {
								sendErr.CompareAndSwap(nil, &err)
							}
							sends.Done()
						})
					i++
				}
				if err := p.FlushWithCtx(ctx); err != nil {
					sendErr.CompareAndSwap(nil, &err)
				}
				sends.Wait()
				if e := sendErr.Load(); e != nil {
					wk.err = fmt.Errorf("send: %w", *e)
					if tx != nil {
						_ = tx.Abort(ctx)
					}
					return
				}
				if tx != nil {
					t1 := time.Now()
					if err := tx.Commit(ctx); err != nil {
						wk.err = fmt.Errorf("commit: %w", err)
						return
					}
					wk.commit = append(wk.commit, time.Since(t1))
				}
				wk.full = append(wk.full, time.Since(t0))
				wk.msgs += int64(k)
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	var commit, full []time.Duration
	for _, wk := range workers {
		if wk.err != nil && err == nil {
			err = wk.err
		}
		res.Messages += wk.msgs
		commit = append(commit, wk.commit...)
		full = append(full, wk.full...)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return res, fmt.Errorf("txnperf: %s: %w", res.Case, err)
	}
	if useTxn {
		res.Commits = len(commit)
	}
	res.CommitP50, res.CommitP99 = Percentile(commit, 50), Percentile(commit, 99)
	res.TxnP50, res.TxnP99 = Percentile(full, 50), Percentile(full, 99)
	if cfg.Verify {
		if err := verify(ctx, cl, cfg.Topic, res.Messages); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Percentile is the nearest-rank p-th percentile of ds (0 when empty).
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func createProducers(cl pulsar.Client, cfg Config, pending int) ([]pulsar.Producer, error) {
	var ps []pulsar.Producer
	for range cfg.Producers {
		p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: cfg.Topic, MaxPendingMessages: pending, SendTimeout: time.Minute})
		if err != nil {
			closeAll(ps)
			return nil, fmt.Errorf("txnperf: create producer on %s: %w", cfg.Topic, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func closeAll(ps []pulsar.Producer) {
	for _, p := range ps {
		p.Close()
	}
}

// verify reads topic from the earliest position: exactly want distinct
// messages, then nothing more.
func verify(ctx context.Context, cl pulsar.Client, topic string, want int64) error {
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		return fmt.Errorf("txnperf: verify %s: %w", topic, err)
	}
	defer r.Close()
	seen := make(map[string]struct{}, want)
	for int64(len(seen)) < want {
		m, err := r.Next(ctx)
		if err != nil {
			return fmt.Errorf("txnperf: verify %s after %d of %d messages: %w", topic, len(seen), want, err)
		}
		k := string(m.Payload()[:16])
		if _, dup := seen[k]; dup {
			return fmt.Errorf("txnperf: verify %s: message %q twice", topic, k)
		}
		seen[k] = struct{}{}
	}
	if r.HasNext() {
		m, err := r.Next(ctx)
		if err != nil {
			return fmt.Errorf("txnperf: verify %s: %w", topic, err)
		}
		return fmt.Errorf("txnperf: verify %s: message %q after the %d counted", topic, m.Payload()[:16], want)
	}
	return nil
}
