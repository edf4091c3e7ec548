package perf

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

func newClient(c *Common, memLimit int64) (*pulsarclient.Client, error) {
	opts := pulsarclient.ClientOptions{
		URL:                        c.ServiceURL,
		OperationTimeout:           30 * time.Second,
		ConnectionTimeout:          10 * time.Second,
		MemoryLimitBytes:           memLimit,
		TLSTrustCertsFilePath:      c.TLSTrustCertPath,
		TLSAllowInsecureConnection: c.TLSAllowInsecure,
	}
	a, err := clientAuth(c.AuthPlugin, c.AuthParams)
	if err != nil {
		return nil, invalid("auth plugin: %v", err)
	}
	opts.Authentication = a

	return pulsarclient.NewClient(opts)
}

// adminTopicPath turns a topic name into its admin REST path
// ("persistent/tenant/ns/name"); short names live in public/default.
func adminTopicPath(topic string) (string, error) {
	domain := "persistent"
	rest := topic
	if d, r, ok := strings.Cut(topic, "://"); ok {
		domain, rest = d, r
	}
	parts := strings.Split(rest, "/")
	switch len(parts) {
	case 1:
		parts = []string{"public", "default", parts[0]}
	case 3:
	default:
		return "", invalid("topic %q: want NAME or DOMAIN://TENANT/NS/NAME", topic)
	}
	for _, p := range parts {
		if p == "" {
			return "", invalid("topic %q has an empty part", topic)
		}
	}
	return domain + "/" + strings.Join(parts, "/"), nil
}

// createPartitions creates each topic as partitioned; an existing one
// (409 Conflict) is left as it is.
func createPartitions(ctx context.Context, c *Common) error {
	if c.Partitions == 0 {
		return nil
	}
	for _, t := range c.Topics {
		p, err := adminTopicPath(t)
		if err != nil {
			return err
		}
		url := strings.TrimRight(c.AdminURL, "/") + "/admin/v2/" + p + "/partitions"
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, strings.NewReader(strconv.Itoa(c.Partitions)))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("perf: create partitions of %s: %w", t, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusConflict {
			return fmt.Errorf("perf: create partitions of %s: %s: %s", t, resp.Status, strings.TrimSpace(string(body)))
		}
	}
	return nil
}

// reporter writes the progress line every interval, and keeps the
// intervals (Common.Timeline), until stopped.
type reporter struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	timeline []TimelinePoint // the goroutine's until close
}

func startReporter(kind string, c *Common, st *Stats) *reporter {
	r := &reporter{stop: make(chan struct{})}
	if c.Progress == nil && !c.Timeline {
		return r
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(c.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case now := <-t.C:
				iv := st.Tick(now)
				if c.Progress != nil {
					fmt.Fprintln(c.Progress, FormatInterval(kind, iv))
				}
				if c.Timeline {
					r.timeline = append(r.timeline, st.point(iv, now))
				}
			}
		}
	}()
	return r
}

// close stops the reporter and returns the timeline it kept.
func (r *reporter) close() []TimelinePoint {
	close(r.stop)
	r.wg.Wait()
	return r.timeline
}

// runContext applies the test duration to ctx.
func runContext(ctx context.Context, c *Common) (context.Context, context.CancelFunc) {
	if c.Duration > 0 {
		return context.WithTimeout(ctx, c.Duration)
	}
	return context.WithCancel(ctx)
}

// runConfig is what prepare needs of ProduceConfig and ConsumeConfig.
type runConfig interface {
	EnsureDefaults()
	Validate() error
	validateRaw() error
	common() *Common
}

func (c *Common) common() *Common { return c }

// prepare readies a run of either mode: it sets cfg's defaults, validates
// it (raw: also against what raw mode cannot do) and creates the
// partitions of its topics. It returns the topics to attach to: raw, each
// partitioned one expanded to its partitions (the raw client does not
// look partitions up itself); otherwise the configured topics.
func prepare(ctx context.Context, cfg runConfig, raw bool) ([]string, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if raw {
		if err := cfg.validateRaw(); err != nil {
			return nil, err
		}
	}
	c := cfg.common()
	if err := createPartitions(ctx, c); err != nil {
		return nil, err
	}
	if !raw {
		return c.Topics, nil
	}
	return resolveTopics(ctx, c)
}

// randomPayload is a message payload of size random bytes.
func randomPayload(size int) []byte {
	p := make([]byte, size)
	rand.Read(p)
	return p
}

// runWorkers runs work(i, shard i) for each of n workers, and beside (if
// not nil), each on its own goroutine, with the stats and the progress
// reporter of a kind run, until all returned. It returns the stats and
// the time they had all returned.
func runWorkers(kind string, c *Common, n int, beside func(), work func(i int, sh *Shard)) (*Stats, time.Time) {
	st := NewStats(n, time.Now())
	rep := startReporter(kind, c, st)
	win := startWindows(st, c.Window)
	var wg sync.WaitGroup
	if beside != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			beside()
		}()
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(i, st.Shard(i))
		}()
	}
	wg.Wait()
	end := time.Now()
	st.timeline = rep.close()
	st.windows = win.finish(end)
	return st, end
}

// consumeProgress is what the consumers of one run share.
type consumeProgress struct {
	cancel   context.CancelFunc // ends the run
	limit    int64              // NumMessages
	received atomic.Int64
	lastRecv atomic.Int64 // unix nanos of the latest message
	idled    atomic.Bool
}

// got counts n messages received at now, and ends the run once the
// limit (if any) is reached: it reports whether it did.
func (p *consumeProgress) got(n int64, now time.Time) bool {
	p.lastRecv.Store(now.UnixNano())
	if p.limit > 0 && p.received.Add(n) >= p.limit {
		p.cancel()
		return true
	}
	return false
}

// runConsumers runs consume(runCtx, i, shard i, progress) for each of n
// consumers on its own goroutine until all returned; runCtx ends when
// NumMessages arrived (as counted by progress.got), Duration passed,
// IdleTimeout elapsed without a message (after the first) or ctx is
// done. It returns the summary, which ends at the last message when the
// run went idle.
func runConsumers(ctx context.Context, cfg *ConsumeConfig, n int, consume func(runCtx context.Context, i int, sh *Shard, p *consumeProgress)) Summary {
	runCtx, cancel := runContext(ctx, &cfg.Common)
	defer cancel()
	p := &consumeProgress{cancel: cancel, limit: cfg.NumMessages}
	var watch func()
	if cfg.IdleTimeout > 0 {
		watch = func() {
			t := time.NewTicker(min(cfg.IdleTimeout/4, 100*time.Millisecond))
			defer t.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case now := <-t.C:
					if l := p.lastRecv.Load(); l != 0 && now.Sub(time.Unix(0, l)) >= cfg.IdleTimeout {
						p.idled.Store(true)
						cancel()
						return
					}
				}
			}
		}
	}
	st, end := runWorkers("consume", &cfg.Common, n, watch, func(i int, sh *Shard) { consume(runCtx, i, sh, p) })
	if p.idled.Load() {
		end = time.Unix(0, p.lastRecv.Load())
	}
	sum := st.Summary("consume", end)
	sum.LatencyOf = "end_to_end"
	return sum
}

// finishRun records a run's first failure (if any) in sum and returns the
// run's error: none if a message got through, else that failure (what
// names the mode) or ErrNoMessages.
func finishRun(sum Summary, firstErr error, what string) (Summary, error) {
	if firstErr != nil {
		sum.FirstError = firstErr.Error()
	}
	if sum.Messages == 0 {
		if firstErr != nil {
			return sum, fmt.Errorf("perf: %s: %w", what, firstErr)
		}
		return sum, ErrNoMessages
	}
	return sum, nil
}

// clientAuth turns pulsar-perf style --auth-plugin/--auth-params into a
// pulsarclient provider (params as in auth.ParseClientAuth); nil
// without a plugin.
func clientAuth(plugin, params string) (pulsarclient.Authentication, error) {
	ca, err := auth.ParseClientAuth(plugin, params)
	if err != nil || ca == nil {
		return nil, err
	}
	switch ca.Method {
	case auth.MethodTLS:
		return pulsarclient.NewAuthenticationTLS(ca.CertFile, ca.KeyFile), nil
	case auth.MethodBasic:
		d, _ := ca.Data()
		u, p, _ := strings.Cut(string(d), ":")
		return pulsarclient.NewAuthenticationBasic(u, p)
	}
	return pulsarclient.NewAuthenticationTokenFromSupplier(func() (string, error) {
		d, err := ca.Data()
		return string(d), err
	}), nil
}
