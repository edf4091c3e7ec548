// Command topics is the driver of the "Scale: topics" benchmark: it
// creates N persistent topics on a running magnetar standalone, each with
// a producer that sends one message and closes, and a durable
// subscription whose consumer subscribes and closes, then reports the
// server's resident set and heap (from /metrics), the creation rate and
// the p50/p99 of HTTP topic lookups over a sample of the topics.
//
//	go run ./bench/topics --topics 100000 --pid $(pidof magnetar) \
//	    --service-url pulsar://127.0.0.1:6650 --http-url http://127.0.0.1:8080
//
// bench/topics/run.sh starts the standalone and runs the whole sequence
// (create, measure, restart, measure start-up and lookups again).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

func main() {
	var (
		serviceURL = flag.String("service-url", "pulsar://127.0.0.1:6650", "broker service URL")
		httpURL    = flag.String("http-url", "http://127.0.0.1:8080", "broker HTTP URL (lookups, /metrics)")
		ns         = flag.String("namespace", "public/default", "namespace of the topics")
		prefix     = flag.String("prefix", "scale", "topic name prefix: <prefix>-<i>")
		n          = flag.Int("topics", 10000, "topics to create (0: none, only measure)")
		first      = flag.Int("first", 0, "index of the first topic")
		workers    = flag.Int("concurrency", 64, "topics created concurrently")
		clients    = flag.Int("clients", 4, "pulsar clients (connections) the workers share")
		lookups    = flag.Int("lookups", 2000, "HTTP lookups of random topics to time (0: none)")
		lookupOf   = flag.Int("lookup-range", 0, "topics to draw lookups from (0: --first + --topics)")
		pid        = flag.Int("pid", 0, "server pid, for VmRSS from /proc (0: process_resident_memory_bytes from /metrics)")
		lists      = flag.Int("lists", 0, "times to GET /admin/v2/persistent/{tenant}/{ns} (the admin topic listing)")
		waitUnload = flag.Duration("wait-unloaded", 0, "first wait up to this long until the server has no topic loaded (pulsar_broker_topics_count is 0: the idle unloader ran)")
		waitGC     = flag.Duration("wait-gc", 0, "before measuring, wait up to this long for the server's next garbage collection (go_memstats_last_gc_time_seconds moves; Go forces one every 2 minutes) so heap figures are after a GC")
	)
	flag.Parse()
	log.SetFlags(0)
	if *waitUnload > 0 {
		if err := awaitUnloaded(*httpURL, *waitUnload); err != nil {
			log.Fatal(err)
		}
	}
	if *n > 0 {
		if err := create(*serviceURL, *ns, *prefix, *first, *n, *workers, *clients); err != nil {
			log.Fatal(err)
		}
	}
	if *lookups > 0 {
		r := *lookupOf
		if r == 0 {
			r = *first + *n
		}
		if err := lookupBench(*httpURL, *ns, *prefix, r, *lookups); err != nil {
			log.Fatal(err)
		}
	}
	if *lists > 0 {
		if err := listBench(*httpURL, *ns, *lists); err != nil {
			log.Fatal(err)
		}
	}
	if *waitGC > 0 {
		if err := awaitGC(*httpURL, *waitGC); err != nil {
			log.Fatal(err)
		}
	}
	m, err := scrape(*httpURL)
	if err != nil {
		log.Fatal(err)
	}
	rss := m["process_resident_memory_bytes"]
	var anon, file float64
	if *pid > 0 {
		st, err := procStatus(*pid)
		if err == nil {
			rss, anon, file = st["VmRSS"], st["RssAnon"], st["RssFile"]
		}
	}
	fmt.Printf("server rss_bytes=%.0f rss_anon_bytes=%.0f rss_file_bytes=%.0f heap_inuse_bytes=%.0f stack_inuse_bytes=%.0f goroutines=%.0f loaded_topics=%.0f scrape_bytes=%.0f\n",
		rss, anon, file, m["go_memstats_heap_inuse_bytes"], m["go_memstats_stack_inuse_bytes"], m["go_goroutines"], m["pulsar_broker_topics_count"], m["scrape_bytes"])
}

// awaitGC waits until the server's last GC is later than now (at most
// d): heap_inuse right after a collection is the live heap.
func awaitGC(httpURL string, d time.Duration) error {
	t0 := float64(time.Now().UnixNano()) / 1e9
	deadline := time.Now().Add(d)
	for {
		m, err := scrape(httpURL)
		if err != nil {
			return err
		}
		if m["go_memstats_last_gc_time_seconds"] > t0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no GC within %s", d)
		}
		time.Sleep(time.Second)
	}
}

// awaitUnloaded waits (at most d) until the server holds no topic.
func awaitUnloaded(httpURL string, d time.Duration) error {
	t0 := time.Now()
	for {
		m, err := scrape(httpURL)
		if err != nil {
			return err
		}
		if m["pulsar_broker_topics_count"] == 0 {
			fmt.Printf("unloaded after_seconds=%.0f\n", time.Since(t0).Seconds())
			return nil
		}
		if time.Since(t0) > d {
			return fmt.Errorf("%.0f topics still loaded after %s", m["pulsar_broker_topics_count"], d)
		}
		time.Sleep(time.Second)
	}
}

// listBench times k GETs of the namespace's persistent topic list.
func listBench(httpURL, ns string, k int) error {
	cl := &http.Client{Timeout: 5 * time.Minute}
	u := httpURL + "/admin/v2/persistent/" + ns
	lat := make([]time.Duration, 0, k)
	var size int64
	for range k {
		t0 := time.Now()
		resp, err := cl.Get(u)
		if err != nil {
			return err
		}
		size, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(t0))
		if resp.StatusCode != 200 {
			return fmt.Errorf("GET %s: %s", u, resp.Status)
		}
	}
	slices.Sort(lat)
	fmt.Printf("list n=%d bytes=%d p50_ms=%.1f max_ms=%.1f\n", k, size,
		float64(lat[len(lat)/2].Microseconds())/1000, float64(lat[len(lat)-1].Microseconds())/1000)
	return nil
}

func create(url, ns, prefix string, first, n, workers, nclients int) error {
	cs := make([]pulsar.Client, max(nclients, 1))
	for i := range cs {
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, OperationTimeout: 60 * time.Second, Logger: plog.DefaultNopLogger()})
		if err != nil {
			return err
		}
		defer c.Close()
		cs[i] = c
	}
	var next, done atomic.Int64
	next.Store(int64(first))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	t0 := time.Now()
	stopProgress := make(chan struct{})
	go func() {
		tk := time.NewTicker(10 * time.Second)
		defer tk.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-tk.C:
				d := done.Load()
				log.Printf("created %d topics in %s (%.0f/s)", d, time.Since(t0).Round(time.Second), float64(d)/time.Since(t0).Seconds())
			}
		}
	}()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(c pulsar.Client) {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(first+n) {
					return
				}
				topic := fmt.Sprintf("persistent://%s/%s-%d", ns, prefix, i)
				if err := oneTopic(c, topic); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", topic, err)
					}
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		}(cs[w%len(cs)])
	}
	wg.Wait()
	close(stopProgress)
	el := time.Since(t0)
	fmt.Printf("create topics=%d seconds=%.1f per_second=%.0f\n", done.Load(), el.Seconds(), float64(done.Load())/el.Seconds())
	return firstErr
}

// oneTopic: a durable subscription (subscribe, close), then a producer
// that sends one message and closes.
func oneTopic(c pulsar.Client, topic string) error {
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared})
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	cons.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("one message")}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

func lookupBench(httpURL, ns, prefix string, of, k int) error {
	if of <= 0 {
		return nil
	}
	cl := &http.Client{Timeout: 30 * time.Second}
	lat := make([]time.Duration, 0, k)
	x := uint64(0x9e3779b97f4a7c15)
	for range k {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		i := int(x % uint64(of))
		u := fmt.Sprintf("%s/lookup/v2/topic/persistent/%s/%s-%d", httpURL, ns, prefix, i)
		t0 := time.Now()
		resp, err := cl.Get(u)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(t0))
		if resp.StatusCode != 200 {
			return fmt.Errorf("lookup %s: %s", u, resp.Status)
		}
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	fmt.Printf("lookup n=%d p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", len(lat), q(0.5), q(0.99), q(1))
	return nil
}

// scrape reads the unlabelled (or summed) samples of /metrics.
func scrape(httpURL string) (map[string]float64, error) {
	resp, err := http.Get(httpURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	cr := &countReader{r: resp.Body}
	sc := bufio.NewScanner(cr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
			_, rest, _ = strings.Cut(line, "} ")
		}
		if v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64); err == nil {
			out[name] += v
		}
	}
	out["scrape_bytes"] = float64(cr.n)
	return out, sc.Err()
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// procStatus reads the kB fields of /proc/pid/status (VmRSS, RssAnon,
// RssFile ...) in bytes.
func procStatus(pid int) (map[string]float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[2] == "kB" {
			if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
				out[strings.TrimSuffix(f[0], ":")] = kb * 1024
			}
		}
	}
	return out, nil
}
