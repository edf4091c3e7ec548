package broker

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// TestMetricsBookieCollector wires an in-process bookie's collector
// through Deps.Collectors and finds its journal sync histogram, with
// counts, on /metrics after some adds.
func TestMetricsBookieCollector(t *testing.T) {
	bk, err := bookie.Open(bookie.Options{FS: vfs.NewMem(), JournalDir: "/bk/journal", LedgerDirs: []string{"/bk/ledgers"},
		CheckpointInterval: time.Hour, DiskCheckInterval: -1, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bk.Close() })
	for e := int64(0); e < 3; e++ {
		ch := make(chan error, 1)
		bk.AddEntry(1, e, []byte("key"), []byte("payload"), false, func(err error) { ch <- err })
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	meta := memmeta.New()
	f, err := mledger.NewFactory(mledger.Options{Ledgers: memstore.New(), Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{ServiceAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", AdvertisedHost: "127.0.0.1"}, Deps{
		Metadata: meta, OpenLedger: LedgerOpener(f, mledger.Config{}),
		Bookies:    LocalBookie{ID: "127.0.0.1:3181", ReadOnly: bk.IsReadOnly},
		Collectors: []prometheus.Collector{bk.Collector()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); f.Close() })
	code, body := httpDo(t, &testBroker{Broker: b}, "GET", "/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics %d %s", code, body)
	}
	buckets := regexp.MustCompile(`(?m)^bookie_journal_sync_latency_seconds_bucket\{le="[^"]+"\} (\S+)$`).FindAllStringSubmatch(body, -1)
	nonZero := 0
	for _, m := range buckets {
		if v, _ := strconv.ParseFloat(m[1], 64); v > 0 {
			nonZero++
		}
	}
	if len(buckets) == 0 || nonZero == 0 {
		t.Fatalf("%d journal sync latency buckets, %d non-zero:\n%s", len(buckets), nonZero, body)
	}
	for _, re := range []string{
		`(?m)^bookie_add_entry_latency_seconds_count 3$`,
		`(?m)^bookie_journal_entries_total 4$`, // 3 adds + the master key
		`(?m)^bookie_read_only\{bookie="127.0.0.1:3181"\} 0$`,
		`(?m)^bookie_read_only_reason\{reason="disk_full"\} 0$`,
	} {
		if !regexp.MustCompile(re).MatchString(body) {
			t.Errorf("metrics lack %s", re)
		}
	}
}
