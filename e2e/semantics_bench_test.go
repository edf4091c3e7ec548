package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// BenchmarkSemantics measures, against one standalone process in one
// run: produce rate with an AVRO schema vs plain bytes of the same size,
// compaction throughput, and the catch-up of a read_compacted reader vs a
// plain reader on the same topic (docs/benchmarks/semantics.md).
//
//	go test ./e2e/ -run '^$' -bench Semantics -benchtime 1x
func BenchmarkSemantics(b *testing.B) {
	p := startStandalone(b, b.TempDir())
	cl := p.client(b)
	const n, keys = 200_000, 1000
	type user struct {
		Name  string `avro:"name"`
		Email string `avro:"email"`
	}
	def := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"email","type":"string"}]}`
	val := func(i int) *user {
		return &user{Name: fmt.Sprintf("user-%06d", i), Email: strings.Repeat("e", 80)}
	}
	sample, _ := pulsar.NewAvroSchema(def, nil).Encode(val(0))

	produce := func(topic string, schema pulsar.Schema) float64 {
		prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: schema, MaxPendingMessages: 10000})
		if err != nil {
			b.Fatal(err)
		}
		defer prod.Close()
		var wg sync.WaitGroup
		start := time.Now()
		for i := 0; i < n; i++ {
			m := &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", i%keys)}
			if schema != nil {
				m.Value = val(i)
			} else {
				m.Payload = sample
			}
			wg.Add(1)
			prod.SendAsync(context.Background(), m, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					b.Error(err)
				}
				wg.Done()
			})
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds()
	}
	for i := 0; i < b.N; i++ {
		sfx := fmt.Sprint(time.Now().UnixNano())
		plainTopic, schemaTopic := "bench-plain-"+sfx, "bench-schema-"+sfx
		// Alternate to spread machine noise over both.
		var plain, withSchema float64
		for r := 0; r < 2; r++ {
			plain += produce(fmt.Sprintf("%s-%d", plainTopic, r), nil) / 2
			withSchema += produce(fmt.Sprintf("%s-%d", schemaTopic, r), pulsar.NewAvroSchema(def, nil)) / 2
		}
		b.ReportMetric(plain, "produce-bytes-msgs/s")
		b.ReportMetric(withSchema, "produce-avro-msgs/s")

		topic := "persistent://public/default/" + plainTopic + "-0"
		size := storageSize(b, p, topic)
		start := time.Now()
		httpReq(b, "PUT", p.http+"/admin/v2/persistent/public/default/"+plainTopic+"-0/compaction")
		for {
			body := httpReq(b, "GET", p.http+"/admin/v2/persistent/public/default/"+plainTopic+"-0/compaction")
			if strings.Contains(body, "SUCCESS") {
				break
			}
			if strings.Contains(body, "ERROR") {
				b.Fatal(body)
			}
			time.Sleep(5 * time.Millisecond)
		}
		el := time.Since(start)
		b.ReportMetric(float64(size)/1e6/el.Seconds(), "compaction-MB/s")
		b.ReportMetric(float64(size)/1e6, "topic-MB")

		catchUp := func(compacted bool) (int, time.Duration) {
			start := time.Now()
			r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(), ReadCompacted: compacted, ReceiverQueueSize: 1000})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			got := 0
			for r.HasNext() {
				if _, err := r.Next(context.Background()); err != nil {
					b.Fatal(err)
				}
				got++
			}
			return got, time.Since(start)
		}
		pn, pd := catchUp(false)
		cn, cd := catchUp(true)
		if pn != n || cn != keys {
			b.Fatalf("catch-up read %d plain / %d compacted, want %d / %d", pn, cn, n, keys)
		}
		b.ReportMetric(float64(pn)/pd.Seconds(), "plain-catchup-msgs/s")
		b.ReportMetric(float64(cn)/cd.Seconds(), "compacted-catchup-msgs/s")
		b.ReportMetric(pd.Seconds()*1000, "plain-catchup-ms")
		b.ReportMetric(cd.Seconds()*1000, "compacted-catchup-ms")
	}
}

func httpReq(b *testing.B, method, url string) string {
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		b.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, body)
	}
	return string(body)
}

func storageSize(b *testing.B, p *proc, topic string) int64 {
	var st struct {
		StorageSize int64 `json:"storageSize"`
	}
	body := httpReq(b, "GET", p.http+"/admin/v2/"+strings.Replace(topic, "://", "/", 1)+"/stats")
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.StorageSize == 0 {
		b.Fatalf("stats: %s %v", body, err)
	}
	return st.StorageSize
}
