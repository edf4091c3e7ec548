package bookie

import (
	"bufio"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// TestStatsMove checks that adds, reads, checkpoints and read-only mode
// move Stats by the exact amounts the operations imply.
func TestStatsMove(t *testing.T) {
	o := memOptions(vfs.NewMem())
	o.CheckpointInterval = time.Hour // the test checkpoints
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if s := b.Stats(); s.AddLatency.Count != 0 || s.Journal.Entries != 0 || s.ReadOnly {
		t.Fatalf("fresh stats %+v", s)
	}
	for e := int64(0); e < 10; e++ {
		if err := addSync(b, 1, e, mk, payloadFor(1, e, 100), false); err != nil {
			t.Fatal(err)
		}
	}
	s := b.Stats()
	if s.AddLatency.Count != 10 || s.AddLatency.Sum <= 0 {
		t.Fatalf("add latency count %d sum %d, want 10 adds", s.AddLatency.Count, s.AddLatency.Sum)
	}
	// 10 entries plus the ledger's master-key record, all acknowledged.
	js := s.Journal
	if js.Entries != 11 || js.Groups == 0 || js.Groups > 11 || js.SyncLatency.Count != js.Groups || js.GroupEntries.Sum != 11 {
		t.Fatalf("journal stats %+v", js)
	}
	for e := int64(0); e < 10; e++ {
		mustRead(t, b, 1, e, payloadFor(1, e, 100))
	}
	s = b.Stats()
	if s.WriteCacheHits != 10 || s.WriteCacheMisses != 0 || s.ReadCacheHits+s.ReadCacheMisses+s.EntryLogReads != 0 {
		t.Fatalf("after cached reads: %+v", s)
	}
	ck := s.Checkpoints // Open may have checkpointed already
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// Entry 0 misses both caches and reads 0 plus 1..9 ahead from the entry
	// log; entry 5 then hits the read cache.
	mustRead(t, b, 1, 0, payloadFor(1, 0, 100))
	mustRead(t, b, 1, 5, payloadFor(1, 5, 100))
	s = b.Stats()
	if s.Checkpoints != ck+1 || s.CheckpointLatency.Count != uint64(ck+1) {
		t.Fatalf("checkpoints %d, latency count %d, want %d", s.Checkpoints, s.CheckpointLatency.Count, ck+1)
	}
	if s.WriteCacheHits != 10 || s.WriteCacheMisses != 2 || s.ReadCacheMisses != 1 || s.ReadCacheHits != 1 || s.EntryLogReads != 10 {
		t.Fatalf("after stored reads: wc %d/%d rc %d/%d entry log %d", s.WriteCacheHits, s.WriteCacheMisses,
			s.ReadCacheHits, s.ReadCacheMisses, s.EntryLogReads)
	}
	b.ro.set(roDiskFull, "test: disk full")
	if s = b.Stats(); !s.ReadOnly || !slices.Equal(s.ReadOnlyReasons, []string{"disk full"}) {
		t.Fatalf("read-only %v reasons %q", s.ReadOnly, s.ReadOnlyReasons)
	}
	b.ro.clear(roDiskFull)
	if s = b.Stats(); s.ReadOnly || len(s.ReadOnlyReasons) != 0 {
		t.Fatalf("after clear: read-only %v reasons %q", s.ReadOnly, s.ReadOnlyReasons)
	}
}

// TestCollectorScrape registers the collector (checked: its descriptors
// must match what it collects), scrapes the text format over HTTP and
// checks the journal sync histogram and the other families.
func TestCollectorScrape(t *testing.T) {
	o := memOptions(vfs.NewMem())
	o.CheckpointInterval = time.Hour
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(b.Collector())
	for e := int64(0); e < 5; e++ {
		if err := addSync(b, 7, e, mk, payloadFor(7, e, 50), false); err != nil {
			t.Fatal(err)
		}
	}
	mustRead(t, b, 7, 0, payloadFor(7, 0, 50))
	b.ro.set(roStorage, "test: storage")
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.PanicOnError}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	vals := map[string]float64{}
	var syncBuckets, nonZero int
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample %q", line)
		}
		vals[line[:i]] = v
		if strings.HasPrefix(line, "bookie_journal_sync_latency_seconds_bucket{") {
			syncBuckets++
			if v > 0 {
				nonZero++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if syncBuckets == 0 || nonZero == 0 {
		t.Fatalf("%d sync latency buckets, %d non-zero", syncBuckets, nonZero)
	}
	groups := vals["bookie_journal_groups_total"]
	for name, want := range map[string]float64{
		"bookie_journal_entries_total":                            6, // 5 adds + master key
		"bookie_journal_sync_latency_seconds_count":               groups,
		`bookie_journal_sync_latency_seconds_bucket{le="+Inf"}`:   groups,
		"bookie_journal_group_entries_sum":                        6,
		"bookie_add_entry_latency_seconds_count":                  5,
		"bookie_write_cache_hits_total":                           1,
		"bookie_write_cache_misses_total":                         0,
		"bookie_read_cache_hits_total":                            0,
		"bookie_journal_zero_filled_groups_total":                 0, // zero fill off
		`bookie_read_only_reason{reason="ledger_storage_failed"}`: 1,
		`bookie_read_only_reason{reason="disk_full"}`:             0,
	} {
		if got, ok := vals[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if groups < 1 {
		t.Errorf("bookie_journal_groups_total = %v", groups)
	}
}

// TestAddLatencyOfRuns checks the add latency histogram over AddEntries
// runs, which observe it once per run and group rather than per add:
// every acknowledged add counts exactly once (runs with refusals inside
// and at the end, runs spanning groups as the adds pile up behind a
// sync), no refused add counts, and the sum lies between zero and the
// adds' latencies as their callers measured them.
func TestAddLatencyOfRuns(t *testing.T) {
	b, err := Open(memOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var (
		mu       sync.Mutex
		acked    uint64
		external int64
		wg       sync.WaitGroup
	)
	for r := range int64(40) {
		adds := make([]Add, 0, 64)
		call := journal.Nanotime()
		for e := r * 64; e < r*64+64; e++ {
			key := mk
			if r%5 == 0 && (e%64 == 10 || e%64 == 63) {
				key = []byte("wrong") // refused: inside and at the end of the run
			}
			wg.Add(1)
			adds = append(adds, Add{Ledger: 1 + r%3, Entry: e, MasterKey: key, Payload: payloadFor(1, e, 50), Done: func(err error) {
				now := journal.Nanotime()
				mu.Lock()
				if err == nil {
					acked++
					external += now - call
				}
				mu.Unlock()
				wg.Done()
			}})
		}
		b.AddEntries(adds)
	}
	wg.Wait()
	s := b.Stats()
	if want := uint64(40*64 - 8*2); acked != want || s.AddLatency.Count != acked {
		t.Fatalf("%d adds acknowledged (want %d), add latency counts %d", acked, want, s.AddLatency.Count)
	}
	if s.AddLatency.Sum <= 0 || s.AddLatency.Sum > external {
		t.Fatalf("add latency sum %d ns, callers measured %d ns", s.AddLatency.Sum, external)
	}
}
