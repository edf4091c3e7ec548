package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/internal/testenv"
)

// BenchmarkDiskFullRecovery: how long a full bookie takes to accept
// writes again after the topic that filled it is deleted, without a
// restart (docs/disk-full.md). A standalone whose ledger directory is a
// 24 MiB tmpfs (as TestStandaloneDiskFullSmall; root needed) keeps one
// producer on topic "keep". Each round fills the volume with another
// topic until the bookie refuses writes, fills what is left to the last
// byte with a file, force-deletes the filling topic and times the first
// send acknowledged on "keep" after the delete; then the file goes. The
// baseline, in the same rounds: the same delete and send when the topic
// deleted holds 1 MiB and the volume has room. MAGNETAR_DISKFULL_ROUNDS
// sets the rounds (default 20):
//
//	go test ./e2e/ -run '^$' -bench BenchmarkDiskFullRecovery -benchtime 1x -timeout 30m
func BenchmarkDiskFullRecovery(b *testing.B) {
	rounds := 20
	if v := os.Getenv("MAGNETAR_DISKFULL_ROUNDS"); v != "" {
		rounds, _ = strconv.Atoi(v)
	}
	dataDir, ledgers := b.TempDir(), testenv.MountTmpfs(b, 24<<20)
	p := startStandalone(b, dataDir, "--ledger-dirs", ledgers, "--disk-check-interval", "500ms", "--gc-wait-time", "2s")
	c := p.clientWithTimeout(b, 10*time.Second)
	defer c.Close()
	ctx := context.Background()
	keep, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/keep", SendTimeout: 3 * time.Second, DisableBatching: true})
	if err != nil {
		b.Fatal(err)
	}
	defer keep.Close()
	big := []byte(strings.Repeat("f", 16<<10))
	// fill produces on topic until a send fails (limit: that many sends
	// acknowledged; 0 for none).
	fill := func(topic string, limit int) int {
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/" + topic, SendTimeout: 3 * time.Second, DisableBatching: true})
		if err != nil {
			b.Fatal(err)
		}
		defer prod.Close()
		n := 0
		for ; limit == 0 || n < limit; n++ {
			if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: big}); err != nil {
				if limit != 0 {
					b.Fatalf("send %d on a volume with room: %v", n, err)
				}
				break
			}
			if n > 4000 {
				b.Fatal("24 MiB did not fill")
			}
		}
		return n
	}
	// deleteThenSend deletes topic and returns the time to the first send
	// acknowledged on keep after it.
	deleteThenSend := func(topic string) time.Duration {
		t0 := time.Now()
		forceDelete(b, p, "public/default/"+topic)
		for {
			if _, err := keep.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("k")}); err == nil {
				return time.Since(t0)
			}
			if time.Since(t0) > 90*time.Second {
				b.Fatalf("no write acknowledged 90 s after %s was deleted (read-only %v); log:\n%s", topic, bookieReadOnly(b, p), logWithout(b, p, "persist failed"))
			}
		}
	}
	ballast := filepath.Join(ledgers, "ballast")
	var full, room []time.Duration
	for i := range rounds {
		small := fmt.Sprintf("small-%d", i)
		fill(small, 64)
		room = append(room, deleteThenSend(small))

		filler := fmt.Sprintf("filler-%d", i)
		n := fill(filler, 0)
		if !bookieReadOnly(b, p) {
			b.Fatalf("round %d: bookie writable after a send failed; log:\n%s", i, p.log())
		}
		testenv.FillUp(b, ballast)
		d := deleteThenSend(filler)
		full = append(full, d)
		b.Logf("round %d: %d messages of 16 KiB filled the volume; writes resumed %v after the delete (with room: %v)",
			i, n, d.Round(time.Millisecond), room[i].Round(time.Millisecond))
		if err := os.Remove(ballast); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("DISKFULL %d rounds: full p50 %v p99 %v max %v; with room p50 %v p99 %v", rounds,
		percentile(full, 0.5).Round(time.Millisecond), percentile(full, 0.99).Round(time.Millisecond), slices.Max(full).Round(time.Millisecond),
		percentile(room, 0.5).Round(time.Millisecond), percentile(room, 0.99).Round(time.Millisecond))
	b.ReportMetric(float64(percentile(full, 0.5).Milliseconds()), "full-p50-ms")
	b.ReportMetric(float64(percentile(full, 0.99).Milliseconds()), "full-p99-ms")
	b.ReportMetric(float64(percentile(room, 0.5).Milliseconds()), "room-p50-ms")
	b.ReportMetric(float64(percentile(room, 0.99).Milliseconds()), "room-p99-ms")
}
