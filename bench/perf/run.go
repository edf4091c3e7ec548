package perf

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

func newClient(c *Common, memLimit int64) (pulsar.Client, error) {
	return pulsar.NewClient(pulsar.ClientOptions{
		URL:               c.ServiceURL,
		OperationTimeout:  30 * time.Second,
		ConnectionTimeout: 10 * time.Second,
		MemoryLimitBytes:  memLimit,
		Logger:            plog.DefaultNopLogger(),
	})
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

// reporter writes the progress line every interval until stopped.
type reporter struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

func startReporter(kind string, c *Common, st *Stats) *reporter {
	r := &reporter{stop: make(chan struct{})}
	if c.Progress == nil {
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
				fmt.Fprintln(c.Progress, FormatInterval(kind, st.Tick(now)))
			}
		}
	}()
	return r
}

func (r *reporter) close() {
	close(r.stop)
	r.wg.Wait()
}

// runContext applies the test duration to ctx.
func runContext(ctx context.Context, c *Common) (context.Context, context.CancelFunc) {
	if c.Duration > 0 {
		return context.WithTimeout(ctx, c.Duration)
	}
	return context.WithCancel(ctx)
}
