package brokermetrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/brokermetrics"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// scrape GETs /metrics of the broker at addr.
func scrape(t testing.TB, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics %d %s", resp.StatusCode, body)
	}
	return string(body)
}

func grepLines(body, sub string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestPublishLatencyMetric: every persistent entry stored is observed once
// in magnetar_broker_publish_latency_seconds (unbatched sends: one entry
// per message), with a positive sum; non-persistent sends are not.
func TestPublishLatencyMetric(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	cl := b.Client(t)
	for topic, n := range map[string]int{"persistent://public/default/publat": 25, "non-persistent://public/default/publat-np": 5} {
		p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		brokertest.SendAll(t, p, n, brokertest.Msg)
	}
	body := scrape(t, b.HTTPAddr())
	count := regexp.MustCompile(`(?m)^magnetar_broker_publish_latency_seconds_count (\S+)$`).FindStringSubmatch(body)
	sum := regexp.MustCompile(`(?m)^magnetar_broker_publish_latency_seconds_sum (\S+)$`).FindStringSubmatch(body)
	if count == nil || sum == nil {
		t.Fatalf("no publish latency histogram in /metrics:\n%s", body)
	}
	if count[1] != "25" {
		t.Errorf("publish latency count %s, want 25 (one per persistent entry)", count[1])
	}
	if s, _ := strconv.ParseFloat(sum[1], 64); s <= 0 {
		t.Errorf("publish latency sum %s, want > 0", sum[1])
	}
	if !regexp.MustCompile(`(?m)^magnetar_broker_publish_latency_seconds_bucket\{le="0\.001"\} \d+$`).MatchString(body) {
		t.Errorf("no 1 ms bucket")
	}
}

// TestMetricsTopicSeries: with topic-level series on (the default),
// each topic and subscription has its own series, and the broker-wide
// sums and connection bytes are there.
func TestMetricsTopicSeries(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	cl := b.Client(t)
	topic := brokertest.Topic("series")
	c := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	defer c.Close()
	p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	brokertest.SendAll(t, p, 4, brokertest.Msg)
	body := scrape(t, b.HTTPAddr())
	lv := fmt.Sprintf(`cluster="standalone",namespace="public/default",topic="%s"`, topic)
	for _, want := range []string{
		`pulsar_in_messages_total{` + lv + `} 4`,
		`pulsar_producers_count{` + lv + `} 1`,
		`pulsar_subscriptions_count{` + lv + `} 1`,
		fmt.Sprintf(`pulsar_subscription_consumers_count{cluster="standalone",namespace="public/default",subscription="s",topic="%s"} 1`, topic),
		`pulsar_topics_count{cluster="standalone",namespace="public/default"} 1`,
		`pulsar_broker_in_messages_total{cluster="standalone"} 4`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("missing %q in /metrics:\n%s", want, grepLines(body, "public/default"))
		}
	}
	m := regexp.MustCompile(`(?m)^magnetar_connection_in_bytes_total (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no magnetar_connection_in_bytes_total")
	}
	if v, _ := strconv.ParseFloat(m[1], 64); v <= 0 {
		t.Errorf("magnetar_connection_in_bytes_total %s, want > 0", m[1])
	}
}

// TestMetricsNamespaceAggregation: with exposeTopicLevelMetricsInPrometheus
// off, /metrics has no per-topic or per-subscription series, and the
// topic metrics are summed per namespace, whatever the number of topics
// (a scrape stays a few KiB).
func TestMetricsNamespaceAggregation(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{Config: func(c *brokerconf.Config) { c.HideTopicLevelMetrics = true }})
	cl := b.Client(t)
	for i := range 3 {
		topic := brokertest.Topic("nsagg")
		c := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		defer c.Close()
		p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		brokertest.SendAll(t, p, i+1, brokertest.Msg)
	}
	// More topics, each with a subscription: the scrape does not grow
	// with them.
	const more = 60
	for range more {
		c := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: brokertest.Topic("nsagg-more"), SubscriptionName: "s"})
		defer c.Close()
	}
	body := scrape(t, b.HTTPAddr())
	for _, line := range strings.Split(body, "\n") {
		if strings.Contains(line, `topic="`) || strings.HasPrefix(line, "pulsar_subscription_") {
			t.Fatalf("topic-level series with the switch off: %s", line)
		}
	}
	for _, want := range []string{
		`pulsar_producers_count{cluster="standalone",namespace="public/default"} 3`,
		`pulsar_consumers_count{cluster="standalone",namespace="public/default"} ` + strconv.Itoa(3+more),
		`pulsar_subscriptions_count{cluster="standalone",namespace="public/default"} ` + strconv.Itoa(3+more),
		`pulsar_in_messages_total{cluster="standalone",namespace="public/default"} 6`,
		`pulsar_msg_backlog{cluster="standalone",namespace="public/default"} 6`,
		`pulsar_topics_count{cluster="standalone",namespace="public/default"} ` + strconv.Itoa(3+more),
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("missing %q in /metrics:\n%s", want, grepLines(body, "namespace="))
		}
	}
	if n := len(grepLines(body, "pulsar_")); n > 16<<10 {
		t.Errorf("pulsar_ series take %d bytes with topic-level series off", n)
	}
}

// TestMetricsBookieCollector wires an in-process bookie's collector
// through Options.Collectors and finds its journal sync histogram, with
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
	b, err := broker.New(brokerconf.Config{ServiceAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", AdvertisedHost: "127.0.0.1"}, broker.Deps{
		Metadata: meta, OpenLedger: storage.Opener(f, mledger.Config{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := brokermetrics.Enable(b, brokermetrics.Options{Collectors: []prometheus.Collector{bk.Collector()},
		Bookies: bookieinfo.Local{ID: "127.0.0.1:3181", ReadOnly: bk.IsReadOnly}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); f.Close() })
	body := scrape(t, b.HTTPAddr())
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
		`(?m)^bookie_SERVER_STATUS\{bookie="127.0.0.1:3181"\} 1$`,
		`(?m)^bookie_read_only_reason\{reason="disk_full"\} 0$`,
	} {
		if !regexp.MustCompile(re).MatchString(body) {
			t.Errorf("metrics lack %s", re)
		}
	}
}
