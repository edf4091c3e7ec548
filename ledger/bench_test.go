package ledger_test

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/magnetar-mq/magnetar/ledger"
)

// BenchmarkAdd measures pipelined add throughput and latency through the
// whole client: E=3/Qw=2/Qa=2 over loopback TCP against E=Qw=Qa=1 over
// loopback and in process, for 100 B and 64 KiB entries, with up to
// `window` adds outstanding (BENCH_WINDOW, default 256). Bookies journal on the test's temp dir with
// fdatasync (durable) unless BENCH_NOSYNC is set, with the journal zero
// fill if BENCH_ZEROFILL is set and with O_DIRECT journals if BENCH_DIRECT
// is set, with the write cache BENCH_WRITECACHE bytes (default 256 MiB);
// BENCH_VARIANTS adds E2/Qw2/Qa2, E3/Qw2/Qa1, E3/Qw1/Qa1 and E2/Qw1/Qa1
// over loopback. The client keeps one connection per
// bookie (its default) unless BENCH_CONNS says otherwise. Reports p50/p99
// add latency in µs.
func BenchmarkAdd(b *testing.B) {
	window := 256
	if w, err := strconv.Atoi(os.Getenv("BENCH_WINDOW")); err == nil && w > 0 {
		window = w
	}
	defer func(old int64) { benchWriteCache = old }(benchWriteCache)
	benchWriteCache = 256 << 20
	if n, err := strconv.ParseInt(os.Getenv("BENCH_WRITECACHE"), 10, 64); err == nil && n > 0 {
		benchWriteCache = n
	}
	// One connection per bookie, the client's default (BookKeeper's
	// numChannelsPerBookie), unless BENCH_CONNS says otherwise.
	defer func(old int) { benchConns = old }(benchConns)
	benchConns = 1
	if n, err := strconv.Atoi(os.Getenv("BENCH_CONNS")); err == nil && n > 0 {
		benchConns = n
	}
	type config struct {
		name    string
		bookies int
		net     bool
		opts    ledger.CreateOptions
	}
	configs := []config{
		{"E3Qw2Qa2/net", 3, true, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2}},
		{"E1/net", 1, true, ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1}},
		{"E1/local", 1, false, ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1}},
	}
	if os.Getenv("BENCH_VARIANTS") != "" {
		// Where E3/Qw2/Qa2's cost comes from: two copies on the same two
		// bookies (E2Qw2Qa2), two copies acknowledged by the first
		// (E3Qw2Qa1), striping without copies (E3Qw1Qa1, E2Qw1Qa1).
		configs = append(configs,
			config{"E2Qw2Qa2/net", 2, true, ledger.CreateOptions{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2}},
			config{"E3Qw2Qa1/net", 3, true, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 1}},
			config{"E3Qw1Qa1/net", 3, true, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 1, AckQuorum: 1}},
			config{"E2Qw1Qa1/net", 2, true, ledger.CreateOptions{Ensemble: 2, WriteQuorum: 1, AckQuorum: 1}},
		)
	}
	for _, size := range []int{100, 64 << 10} {
		for _, cfg := range configs {
			b.Run(fmt.Sprintf("%s/size=%d", cfg.name, size), func(b *testing.B) {
				var c *ledger.Client
				if cfg.net {
					nc := newNetCluster(b, cfg.bookies)
					c, _ = nc.client(ledger.Options{})
				} else {
					c = newLocalCluster(b, cfg.bookies, ledger.Options{}).client
				}
				ctx := ctxT(b)
				h, err := c.Create(ctx, cfg.opts)
				if err != nil {
					b.Fatal(err)
				}
				data := make([]byte, size)
				hist := hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
				var mu sync.Mutex
				sem := make(chan struct{}, window)
				var failed error
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					sem <- struct{}{}
					start := time.Now()
					h.AddAsync(data, func(_ int64, err error) {
						mu.Lock()
						hist.RecordValue(time.Since(start).Microseconds())
						if err != nil && failed == nil {
							failed = err
						}
						mu.Unlock()
						<-sem
					})
				}
				for range window {
					sem <- struct{}{}
				}
				b.StopTimer()
				if failed != nil {
					b.Fatal(failed)
				}
				b.ReportMetric(float64(hist.ValueAtQuantile(50)), "p50-µs")
				b.ReportMetric(float64(hist.ValueAtQuantile(99)), "p99-µs")
				if err := h.Close(ctx); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

func init() {
	if os.Getenv("BENCH_NOSYNC") != "" {
		benchNoSync = true
	}
	if os.Getenv("BENCH_DIRECT") != "" {
		benchDirectIO = true
	}
	if os.Getenv("BENCH_ZEROFILL") != "" {
		benchZeroFill = true
	}
}

// BenchmarkAddHeadroom compares, on one in-process bookie, adds of fresh
// entry buffers (as the broker hands them down) through AddAsync ("copy":
// the client frames each entry into a new buffer) and AddWithHeadroom
// ("headroom": the entry header is written into room left in front of the
// data). BENCH_NOSYNC turns off fdatasync, leaving the CPU cost.
func BenchmarkAddHeadroom(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, 256 << 10} {
		for _, mode := range []string{"copy", "headroom"} {
			b.Run(fmt.Sprintf("%s/size=%d", mode, size), func(b *testing.B) {
				c := newLocalCluster(b, 1, ledger.Options{}).client
				ctx := ctxT(b)
				h, err := c.Create(ctx, ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1})
				if err != nil {
					b.Fatal(err)
				}
				sem := make(chan struct{}, 64)
				var mu sync.Mutex
				var failed error
				done := func(_ int64, err error) {
					if err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
					}
					<-sem
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					sem <- struct{}{}
					if mode == "copy" {
						h.AddAsync(make([]byte, size), done)
					} else {
						h.AddWithHeadroom(make([]byte, ledger.EntryHeadroom+size), ledger.EntryHeadroom, done)
					}
				}
				for range cap(sem) {
					sem <- struct{}{}
				}
				b.StopTimer()
				if failed != nil {
					b.Fatal(failed)
				}
				if err := h.Close(ctx); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
