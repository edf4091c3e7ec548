package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/magnetar-mq/magnetar/offload"
)

// fakeS3 is an S3-compatible server (gofakes3, in memory) on a real
// listener, with switches: down drops every request unanswered; holdParts
// makes multipart part uploads wait (signalling partSeen) until released
// or their connection drops.
type fakeS3 struct {
	srv       *httptest.Server
	down      atomic.Bool
	holdParts atomic.Bool
	partSeen  chan struct{}
	release   chan struct{}
	gets      atomic.Int64
}

const testBucket = "magnetar-offload"

func startFakeS3(t testing.TB) *fakeS3 {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	f := &fakeS3{partSeen: make(chan struct{}, 1), release: make(chan struct{})}
	h := gofakes3.New(be).Server()
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() {
			// No answer at all, as from a store that is gone: the
			// client's error then names the endpoint and bucket.
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		if r.Method == "PUT" && r.URL.Query().Get("partNumber") != "" && f.holdParts.Load() {
			select {
			case f.partSeen <- struct{}{}:
			default:
			}
			select {
			case <-f.release:
			case <-r.Context().Done():
				return
			}
		}
		if r.Method == "GET" {
			f.gets.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeS3) flags() []string {
	return []string{"--offload-driver", "S3", "--offload-bucket", testBucket, "--offload-service-endpoint", f.srv.URL,
		"--offload-region", "us-east-1", "--offload-credential-id", "test", "--offload-credential-secret", "test"}
}

// inspector opens the same store from the test, to list objects.
func (f *fakeS3) inspector(t testing.TB) *offload.Offloader {
	o, err := offload.New(offload.Config{Driver: offload.DriverS3, Bucket: testBucket, ServiceEndpoint: f.srv.URL,
		Region: "us-east-1", CredentialID: "test", CredentialSecret: "test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

var rolloverFlags = []string{"--max-entries-per-ledger", "50", "--min-ledger-rollover-time=-1s"}

func adminOf(t testing.TB, p *proc) pulsaradmin.Client {
	t.Helper()
	c, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: p.http})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// randomPayloads returns n payloads of random bytes (100..2000 bytes).
func randomPayloads(n int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, 100+r.IntN(1900))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		copy(b, fmt.Sprintf("%08d", i)) // index prefix
		out[i] = b
	}
	return out
}

func offloadProduce(t testing.TB, c pulsar.Client, topic string, ps [][]byte) {
	t.Helper()
	pr, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	for _, p := range ps {
		if _, err := pr.Send(context.Background(), &pulsar.ProducerMessage{Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
}

type internalStats struct {
	Ledgers []struct {
		LedgerID          int64 `json:"ledgerId"`
		Size              int64 `json:"size"`
		Offloaded         bool  `json:"offloaded"`
		BookkeeperDeleted bool  `json:"bookkeeperDeleted"`
	} `json:"ledgers"`
	TotalSize     int64 `json:"totalSize"`
	OffloadedSize int64 `json:"offloadedSize"`
}

func statsOf(t testing.TB, p *proc, topic string) internalStats {
	t.Helper()
	code, body := p.get(t, "/admin/v2/persistent/public/default/"+topic+"/internalStats")
	if code != 200 {
		t.Fatalf("internalStats: %d %s", code, body)
	}
	var st internalStats
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// offloadAll triggers an offload up to the last message and waits for it.
func offloadAll(t testing.TB, p *proc, topic string) utils.OffloadProcessStatus {
	t.Helper()
	ac := adminOf(t, p)
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		t.Fatal(err)
	}
	last, err := ac.Topics().GetLastMessageID(*tn)
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.Topics().Offload(*tn, last); err != nil {
		t.Fatalf("offload: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, err := ac.Topics().OffloadStatus(*tn)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != utils.RUNNING {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatal("offload still running after 60s")
		}
		time.Sleep(20 * time.Millisecond) // polling the REST status: there is no push signal
	}
}

// consumeAll reads from the earliest position until every payload in
// want (in order) and extra more messages arrived, checking bytes.
func consumeAll(t testing.TB, c pulsar.Client, topic, sub string, want [][]byte, extra int) [][]byte {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var tail [][]byte
	for i := 0; i < len(want)+extra; i++ {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %d of %d: %v", i, len(want)+extra, err)
		}
		if i < len(want) {
			if !bytes.Equal(m.Payload(), want[i]) {
				t.Fatalf("message %d differs (%d bytes, want %d)", i, len(m.Payload()), len(want[i]))
			}
		} else {
			tail = append(tail, m.Payload())
		}
		_ = cons.Ack(m)
	}
	return tail
}

// TestOffloadE2E: a real standalone offloads a topic's closed ledgers to
// an S3-compatible server (and to a directory); after a restart every
// message reads back byte for byte from the earliest position, from the
// object store, while new messages arrive; deleting the topic deletes
// its objects.
func TestOffloadE2E(t *testing.T) {
	for _, driver := range []string{"s3", "filesystem"} {
		t.Run(driver, func(t *testing.T) {
			var fs *fakeS3
			var flags []string
			var insp *offload.Offloader
			tierDir := filepath.Join(t.TempDir(), "tier")
			if driver == "s3" {
				fs = startFakeS3(t)
				flags, insp = fs.flags(), fs.inspector(t)
			} else {
				flags = []string{"--offload-driver", "filesystem", "--offload-fs-uri", "file://" + tierDir}
				var err error
				if insp, err = offload.New(offload.Config{Driver: offload.DriverFilesystem, Directory: tierDir}, nil); err != nil {
					t.Fatal(err)
				}
			}
			flags = append(flags, rolloverFlags...)
			dir := t.TempDir()
			p := startStandalone(t, dir, flags...)
			const topic = "persistent://public/default/tiered"
			msgs := randomPayloads(260, 1)
			c := p.client(t)
			offloadProduce(t, c, topic, msgs)
			s := offloadAll(t, p, topic)
			if s.Status != utils.SUCCESS {
				t.Fatalf("offload status %+v", s)
			}
			st := statsOf(t, p, "tiered")
			off := 0
			for _, l := range st.Ledgers {
				if l.Offloaded {
					off++
				}
			}
			if off != 5 || !st.Ledgers[0].Offloaded || st.Ledgers[len(st.Ledgers)-1].Offloaded {
				t.Fatalf("offloaded %d ledgers: %+v", off, st)
			}
			if st.OffloadedSize <= 0 || st.OffloadedSize >= st.TotalSize {
				t.Fatalf("sizes: %+v", st)
			}
			if s.FirstUnOffloadedMessage.LedgerID != st.Ledgers[5].LedgerID {
				t.Fatalf("first unoffloaded %+v, want ledger %d", s.FirstUnOffloadedMessage, st.Ledgers[5].LedgerID)
			}
			keys, err := insp.List(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			dataKeys := 0
			for _, k := range keys {
				if strings.Contains(k, "-ledger-") && !strings.HasSuffix(k, "-index") && !strings.HasSuffix(k, ".meta") {
					dataKeys++
				}
			}
			if dataKeys != 5 {
				t.Fatalf("%d data objects: %v", dataKeys, keys)
			}
			// Prometheus metrics count the work.
			_, metrics := p.get(t, "/metrics")
			if !strings.Contains(string(metrics), "brk_ledgeroffloader_offloaded_ledgers_total 5") {
				t.Fatalf("metrics lack the offload count:\n%s", grepLines(string(metrics), "ledgeroffloader"))
			}
			c.Close()
			p.stop()

			p = startStandalone(t, dir, flags...)
			c = p.client(t)
			var getsBefore int64
			if fs != nil {
				getsBefore = fs.gets.Load()
			}
			// New messages arrive while the catch-up read runs.
			more := randomPayloads(60, 2)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				offloadProduce(t, c, topic, more)
			}()
			tail := consumeAll(t, c, topic, "catchup", msgs, len(more))
			wg.Wait()
			for i, m := range tail {
				if !bytes.Equal(m, more[i]) {
					t.Fatalf("new message %d differs", i)
				}
			}
			if fs != nil && fs.gets.Load() == getsBefore {
				t.Fatal("catch-up read did not touch the object store")
			}
			_, metrics = p.get(t, "/metrics")
			if !strings.Contains(string(metrics), "brk_ledgeroffloader_read_offload_latency_seconds_count") {
				t.Fatal("no read latency metric")
			}
			// Deleting the topic deletes its offloaded objects.
			ac := adminOf(t, p)
			tn, _ := utils.GetTopicName(topic)
			c.Close()
			if err := ac.Topics().Delete(*tn, true, true); err != nil {
				t.Fatal(err)
			}
			if keys, _ := insp.List(context.Background(), ""); len(keys) != 0 {
				t.Fatalf("objects left after topic delete: %v", keys)
			}
			p.stop()
		})
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestOffloadE2EKilledMidOffload: SIGKILL while a part upload is in
// flight loses nothing; the next attempt completes and leaves no objects
// (nor unfinished uploads) of the killed attempt.
func TestOffloadE2EKilledMidOffload(t *testing.T) {
	fs := startFakeS3(t)
	insp := fs.inspector(t)
	flags := append(fs.flags(), rolloverFlags...)
	dir := t.TempDir()
	p := startStandalone(t, dir, flags...)
	const topic = "persistent://public/default/killed"
	msgs := randomPayloads(160, 3)
	c := p.client(t)
	offloadProduce(t, c, topic, msgs)
	fs.holdParts.Store(true)
	ac := adminOf(t, p)
	tn, _ := utils.GetTopicName(topic)
	last, err := ac.Topics().GetLastMessageID(*tn)
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.Topics().Offload(*tn, last); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fs.partSeen:
	case <-time.After(30 * time.Second):
		t.Fatal("no part upload started")
	}
	// A second trigger while running is refused (409).
	if err := ac.Topics().Offload(*tn, last); err == nil || !strings.Contains(err.Error(), "409") && !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second offload: %v", err)
	}
	c.Close()
	p.kill()
	fs.holdParts.Store(false)
	close(fs.release) // the held part request fails on its dead connection
	if ups, _ := insp.PendingUploads(context.Background(), ""); len(ups) == 0 {
		t.Fatal("the killed attempt left no upload to clean up (test did not interrupt it)")
	}

	p = startStandalone(t, dir, flags...)
	st := statsOf(t, p, "killed")
	for _, l := range st.Ledgers {
		if l.Offloaded {
			t.Fatalf("ledger %d offloaded after the kill", l.LedgerID)
		}
	}
	s := offloadAll(t, p, topic)
	if s.Status != utils.SUCCESS {
		t.Fatalf("offload after restart: %+v", s)
	}
	st = statsOf(t, p, "killed")
	n := 0
	for _, l := range st.Ledgers {
		if l.Offloaded {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d ledgers offloaded, want 3: %+v", n, st)
	}
	keys, err := insp.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2*n {
		t.Fatalf("objects %v: want exactly data+index of %d ledgers", keys, n)
	}
	if ups, err := insp.PendingUploads(context.Background(), ""); err != nil || len(ups) != 0 {
		t.Fatalf("unfinished uploads left: %v %v", ups, err)
	}
	c = p.client(t)
	consumeAll(t, c, topic, "after-kill", msgs, 0)
	c.Close()
	p.stop()
}

// TestOffloadE2EStoreDown: with the object store down, reading an
// offloaded entry fails with a clear, retryable error (503) that names
// neither endpoint nor bucket, a local one works; once the store is back
// both work and a consumer catches up.
func TestOffloadE2EStoreDown(t *testing.T) {
	fs := startFakeS3(t)
	flags := append(fs.flags(), rolloverFlags...)
	dir := t.TempDir()
	p := startStandalone(t, dir, flags...)
	const topic = "persistent://public/default/down"
	msgs := randomPayloads(120, 4)
	c := p.client(t)
	offloadProduce(t, c, topic, msgs)
	if s := offloadAll(t, p, topic); s.Status != utils.SUCCESS {
		t.Fatalf("offload %+v", s)
	}
	st := statsOf(t, p, "down")
	c.Close()
	p.stop()
	p = startStandalone(t, dir, flags...) // no cached read handles
	fs.down.Store(true)
	offID := st.Ledgers[0].LedgerID
	localID := st.Ledgers[len(st.Ledgers)-1].LedgerID
	code, body := p.get(t, fmt.Sprintf("/admin/v2/persistent/public/default/down/ledger/%d/entry/3", offID))
	if code != 503 || !strings.Contains(string(body), "object store unavailable") {
		t.Fatalf("read offloaded entry with the store down: %d %s", code, body)
	}
	// The reason is for a tenant: it names neither the operator's
	// endpoint nor the bucket.
	if host := strings.TrimPrefix(fs.srv.URL, "http://"); bytes.Contains(body, []byte(host)) || bytes.Contains(body, []byte(testBucket)) {
		t.Fatalf("the error names the object store: %s", body)
	}
	code, body = p.get(t, fmt.Sprintf("/admin/v2/persistent/public/default/down/ledger/%d/entry/0", localID))
	if code != 200 {
		t.Fatalf("local read with the store down: %d %s", code, body)
	}
	fs.down.Store(false)
	code, body = p.get(t, fmt.Sprintf("/admin/v2/persistent/public/default/down/ledger/%d/entry/3", offID))
	if code != 200 || !bytes.Contains(body, msgs[3][:8]) {
		t.Fatalf("read offloaded entry with the store back: %d", code)
	}
	c = p.client(t)
	consumeAll(t, c, topic, "sub", msgs, 0)
	c.Close()
	p.stop()
}

// TestAdminCLIOffload: the tiered-storage commands of `magnetar admin`
// against a standalone without a broker-wide driver: the namespace
// policy names a directory under the root the operator allows (one
// outside it is refused), `topics offload -s 0` offloads every closed
// ledger, offload-status waits for it.
func TestAdminCLIOffload(t *testing.T) {
	root := t.TempDir()
	p := startStandalone(t, t.TempDir(), append([]string{"--offload-allowed-fs-roots", root}, rolloverFlags...)...)
	tier := filepath.Join(root, "tier")
	out := runAdmin(t, p, true, "namespaces", "set-offload-policies", "public/default", "-d", "azureblob")
	if !strings.Contains(out, "412") || !strings.Contains(out, "not supported") {
		t.Fatalf("bad driver: %s", out)
	}
	outside := filepath.Join(t.TempDir(), "tier")
	out = runAdmin(t, p, true, "namespaces", "set-offload-policies", "public/default", "-d", "filesystem",
		"--fs-uri", "file://"+outside)
	if !strings.Contains(out, "412") || !strings.Contains(out, "outside the directories the operator allows") {
		t.Fatalf("directory outside the allowed root: %s", out)
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused directory was touched: %v", err)
	}
	runAdmin(t, p, false, "namespaces", "set-offload-policies", "public/default", "-d", "filesystem",
		"--fs-uri", "file://"+tier, "-t", "-1", "--offloadAfterElapsed", "2h")
	out = runAdmin(t, p, false, "-o", "json", "namespaces", "get-offload-policies", "public/default")
	if !strings.Contains(out, `"managedLedgerOffloadDeletionLagInMillis": 7200000`) || !strings.Contains(out, tier) {
		t.Fatalf("get-offload-policies: %s", out)
	}
	const topic = "persistent://public/default/cli-offload"
	c := p.client(t)
	offloadProduce(t, c, topic, randomPayloads(120, 5))
	c.Close()
	out = runAdmin(t, p, false, "topics", "offload", "-s", "0", topic)
	if !strings.Contains(out, "Offload triggered") {
		t.Fatalf("offload: %s", out)
	}
	out = runAdmin(t, p, false, "topics", "offload-status", "-w", topic)
	if !strings.Contains(out, "Offload was a success") {
		t.Fatalf("offload-status: %s", out)
	}
	st := statsOf(t, p, "cli-offload")
	for i, l := range st.Ledgers {
		if l.Offloaded != (i < 2) {
			t.Fatalf("ledger %d offloaded=%v: %+v", i, l.Offloaded, st)
		}
	}
	out = runAdmin(t, p, false, "topics", "offload", "-s", "1G", topic)
	if !strings.Contains(out, "Nothing to offload") {
		t.Fatalf("offload -s 1G: %s", out)
	}
	runAdmin(t, p, false, "namespaces", "remove-offload-policies", "public/default")
	if out := runAdmin(t, p, false, "-o", "json", "namespaces", "get-offload-policies", "public/default"); strings.TrimSpace(out) != "null" {
		t.Fatalf("after remove: %q", out)
	}
	p.stop()
}

// TestOffloadE2ESeek: after offloading and a restart, a reader started at
// a message id inside an offloaded ledger, and a consumer seeking by id
// and by publish time into offloaded ledgers, get the right messages.
func TestOffloadE2ESeek(t *testing.T) {
	tier := filepath.Join(t.TempDir(), "tier")
	flags := append([]string{"--offload-driver", "filesystem", "--offload-fs-uri", tier}, rolloverFlags...)
	dir := t.TempDir()
	p := startStandalone(t, dir, flags...)
	const topic = "persistent://public/default/seek"
	msgs := randomPayloads(160, 6)
	c := p.client(t)
	offloadProduce(t, c, topic, msgs)
	if s := offloadAll(t, p, topic); s.Status != utils.SUCCESS {
		t.Fatalf("offload %+v", s)
	}
	c.Close()
	p.stop()
	p = startStandalone(t, dir, flags...)
	c = p.client(t)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "seek",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ids []pulsar.MessageID
	var times []time.Time
	for i := range msgs {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Payload(), msgs[i]) {
			t.Fatalf("message %d differs", i)
		}
		ids, times = append(ids, m.ID()), append(times, m.PublishTime())
		_ = cons.Ack(m)
	}
	index := func(m pulsar.Message) int {
		var n int
		fmt.Sscanf(string(m.Payload()[:8]), "%d", &n)
		return n
	}
	if err := cons.Seek(ids[57]); err != nil {
		t.Fatal(err)
	}
	// The broker restarts at 57; the Go client drops the seek target
	// itself (non-inclusive start for consumers), as against bookies.
	m, err := cons.Receive(ctx)
	if err != nil || index(m) != 58 {
		t.Fatalf("after seek to id 57: got %d, %v", index(m), err)
	}
	cons.Close()
	cons, err = c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "seek-time",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionLatest})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.SeekByTime(times[20]); err != nil {
		t.Fatal(err)
	}
	m, err = cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := index(m); i > 20 || !m.PublishTime().Equal(times[20]) {
		t.Fatalf("after seek by time of message 20: got message %d at %v", i, m.PublishTime())
	}
	cons.Close()
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[101], StartMessageIDInclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 101; i < 111; i++ {
		m, err := r.Next(ctx)
		if err != nil || !bytes.Equal(m.Payload(), msgs[i]) {
			t.Fatalf("reader message %d: %v", i, err)
		}
	}
	r.Close()
	c.Close()
	p.stop()
}

// TestOffloadE2EDeletionLagAndRetention: the bookie copy of offloaded
// ledgers goes only once the deletion lag has passed, reads then come
// from the directory alone; consuming everything lets retention trim the
// ledgers, which deletes their objects too.
func TestOffloadE2EDeletionLagAndRetention(t *testing.T) {
	tier := filepath.Join(t.TempDir(), "tier")
	const lag = 4 * time.Second
	flags := append([]string{"--offload-driver", "filesystem", "--offload-fs-uri", tier,
		"--retention-check-interval", "200ms", "--offload-deletion-lag-ms", fmt.Sprint(lag.Milliseconds())}, rolloverFlags...)
	insp, err := offload.New(offload.Config{Driver: offload.DriverFilesystem, Directory: tier}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := startStandalone(t, t.TempDir(), flags...)
	const topic = "persistent://public/default/lag"
	c := p.client(t)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "hold",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	msgs := randomPayloads(160, 7)
	offloadProduce(t, c, topic, msgs)
	start := time.Now()
	if s := offloadAll(t, p, topic); s.Status != utils.SUCCESS {
		t.Fatalf("offload %+v", s)
	}
	st := statsOf(t, p, "lag")
	if time.Since(start) < lag {
		for _, l := range st.Ledgers {
			if l.BookkeeperDeleted {
				t.Fatalf("bookie copy of %d deleted before the lag", l.LedgerID)
			}
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st = statsOf(t, p, "lag")
		n := 0
		for _, l := range st.Ledgers {
			if l.BookkeeperDeleted {
				n++
			}
		}
		if n == 3 {
			break
		}
		if n > 0 && time.Since(start) < lag {
			t.Fatalf("bookie copy deleted %v after the offload started, lag %v", time.Since(start), lag)
		}
		if time.Now().After(deadline) {
			t.Fatalf("bookie copies not deleted: %+v", st)
		}
		time.Sleep(50 * time.Millisecond) // polling internal stats: no push signal
	}
	if time.Since(start) < lag {
		t.Fatalf("bookie copies deleted after %v, lag %v", time.Since(start), lag)
	}
	// Everything reads back (the offloaded part from the directory only).
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range msgs {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Payload(), msgs[i]) {
			t.Fatalf("message %d differs", i)
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	// Retention 0: the consumed ledgers are trimmed, objects included.
	for {
		keys, err := insp.List(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("objects left after retention: %v (stats %+v)", keys, statsOf(t, p, "lag"))
		}
		time.Sleep(50 * time.Millisecond) // polling: trimming runs on its own interval
	}
	if st := statsOf(t, p, "lag"); len(st.Ledgers) != 1 {
		t.Fatalf("ledgers after retention: %+v", st)
	}
	cons.Close()
	c.Close()
	p.stop()
}
