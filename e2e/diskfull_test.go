package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/internal/testenv"
)

// bookieReadOnly asks the admin API for the standalone bookie's state.
func bookieReadOnly(t testing.TB, p *proc) bool {
	t.Helper()
	code, body := p.get(t, "/admin/v2/bookies/all")
	if code != http.StatusOK {
		t.Fatalf("bookies: %d %s", code, body)
	}
	var r struct {
		Bookies []struct {
			ReadOnly bool `json:"readOnly"`
		} `json:"bookies"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Bookies) != 1 {
		t.Fatalf("bookies: %s (%v)", body, err)
	}
	return r.Bookies[0].ReadOnly
}

func countLines(t *testing.T, p *proc, substr string) int {
	t.Helper()
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), substr)
}

// TestStandaloneDiskFull fills a 256 MiB tmpfs holding a standalone's data
// directory: the bookie turns read-only once (logged once), the broker
// stops rolling ledgers and producers get errors without a storm of
// ledgers or log lines; deleting the topic that filled the disk reclaims
// its entry-log space by compaction and writes resume without a restart;
// every acknowledged message of the kept topic is there, also after a
// graceful stop (which succeeds) and a restart.
func TestStandaloneDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a file system")
	}
	dataDir := testenv.MountTmpfs(t, 256<<20)
	p := startStandalone(t, dataDir, "--disk-check-interval", "500ms", "--gc-wait-time", "2s")
	c := p.clientWithTimeout(t, 10*time.Second)
	const keepTopic = "persistent://public/default/keep"
	keep, err := c.CreateProducer(pulsar.ProducerOptions{Topic: keepTopic, SendTimeout: 3 * time.Second, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var acked []string
	sendKeep := func(i int) error {
		m := payload(i)
		_, err := keep.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(m)})
		if err == nil {
			acked = append(acked, m)
		}
		return err
	}
	for i := range 50 {
		if err := sendKeep(i); err != nil {
			t.Fatal(err)
		}
	}
	filler, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/filler", SendTimeout: 3 * time.Second, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 32<<10)
	sent, start := 0, time.Now()
	for {
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("the disk did not fill in 2 minutes (%d messages of 32 KiB)", sent)
		}
		if _, err := filler.Send(ctx, &pulsar.ProducerMessage{Payload: big}); err != nil {
			t.Logf("filler send %d failed: %v", sent, err)
			break
		}
		sent++
	}
	if !bookieReadOnly(t, p) {
		t.Fatalf("bookie writable after %d sends failed to persist; log:\n%s", sent, p.log())
	}
	// Keep trying for a while: neither ledgers nor log lines may pile up.
	linesBefore := countLines(t, p, "\n")
	for i := range 3 {
		if err := sendKeep(1000 + i); err == nil {
			t.Fatalf("send %d acknowledged on a full disk", i)
		}
	}
	if n := countLines(t, p, "\n") - linesBefore; n > 100 {
		t.Fatalf("%d log lines in ~9 s of refused sends; log:\n%s", n, p.log())
	}
	// Each reason for read-only mode is logged once: usage above the
	// threshold, or a checkpoint that found no space first.
	threshold, ckpt := countLines(t, p, `msg="bookie is read-only"`), countLines(t, p, "bookie is read-only until one succeeds")
	if threshold > 1 || ckpt > 1 || threshold+ckpt == 0 {
		t.Fatalf("read-only logged %d times for the threshold and %d for a checkpoint, want each at most once; log:\n%s", threshold, ckpt, p.log())
	}
	code, body := p.get(t, "/admin/v2/persistent/public/default/keep/internalStats")
	if code != http.StatusOK {
		t.Fatalf("internalStats: %d %s", code, body)
	}
	var st struct {
		Ledgers []struct {
			LedgerID int64 `json:"ledgerId"`
		} `json:"ledgers"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Ledgers) > 2 {
		t.Fatalf("kept topic has %d ledgers after the disk filled, want at most 2: %s", len(st.Ledgers), body)
	}
	filler.Close()
	forceDelete(t, p, "public/default/filler")
	// Compaction reclaims the deleted topic's space and the bookie turns
	// writable by itself; the producer's retries then succeed.
	deadline := time.Now().Add(90 * time.Second)
	for i := 2000; ; i++ {
		if sendKeep(i) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes did not resume after the topic was deleted (read-only %v); log:\n%s", bookieReadOnly(t, p), logWithout(t, p, "persist failed"))
		}
	}
	for _, want := range []string{"rolled the active entry log", "entry-log gc", "writable again", "adds resume"} {
		if countLines(t, p, want) == 0 {
			t.Errorf("log has no %q line", want)
		}
	}
	for i := 3000; i < 3100; i++ {
		if err := sendKeep(i); err != nil {
			t.Fatalf("send after recovery: %v (read-only %v); log:\n%s", err, bookieReadOnly(t, p), logWithout(t, p, "persist failed"))
		}
	}
	checkKept := func(c pulsar.Client) {
		t.Helper()
		r, err := c.CreateReader(pulsar.ReaderOptions{Topic: keepTopic, StartMessageID: pulsar.EarliestMessageID()})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		seen := map[string]bool{}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for r.HasNext() {
			m, err := r.Next(rctx)
			if err != nil {
				t.Fatalf("read after %d: %v", len(seen), err)
			}
			seen[string(m.Payload())] = true
		}
		for _, m := range acked {
			if !seen[m] {
				t.Fatalf("acknowledged message %s lost (%d acked, %d read)", m, len(acked), len(seen))
			}
		}
	}
	checkKept(c)
	keep.Close()
	c.Close()
	p.stop() // a graceful stop exits 0
	p = startStandalone(t, dataDir)
	c = p.clientWithTimeout(t, 10*time.Second)
	checkKept(c)
	c.Close()
}

// forceDelete deletes persistent topic tenant/ns/name through p's admin
// API (force: with producers and subscriptions).
func forceDelete(t testing.TB, p *proc, topic string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, p.http+"/admin/v2/persistent/"+topic+"?force=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("delete %s: %d", topic, resp.StatusCode)
	}
}

// logWithout returns p's log without the lines containing substr.
func logWithout(t testing.TB, p *proc, substr string) string {
	t.Helper()
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestStandaloneDiskFullSmall: a standalone fills a small volume, in two
// layouts: "ledger-dir", its ledger directory on a 24 MiB tmpfs (journal
// and metadata on another disk, as deployed), and "one-volume", its whole
// data directory (journal, ledgers, metadata) on a 48 MiB tmpfs, as
// `magnetar standalone` lays it out by default. Restarted on the volume
// after something else took its last byte, its topics open read-only:
// every acknowledged message of both topics reads back (they used to fail
// to load: no ledger could be created; with the journal on the volume the
// bookie did not start at all: "journal: create ...: no space left on
// device"). Deleting the topic that filled the volume then lets the other
// one produce again, without a restart, within seconds (the figure logged
// is that time); everything acknowledged is read back once more after a
// final restart.
func TestStandaloneDiskFullSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a file system")
	}
	t.Run("ledger-dir", func(t *testing.T) {
		dataDir, ledgers := t.TempDir(), testenv.MountTmpfs(t, 24<<20)
		diskFullRestart(t, dataDir, ledgers, "--ledger-dirs", ledgers)
	})
	t.Run("one-volume", func(t *testing.T) {
		dataDir := testenv.MountTmpfs(t, 48<<20)
		diskFullRestart(t, dataDir, dataDir)
	})
}

// diskFullRestart is TestStandaloneDiskFullSmall on a standalone in
// dataDir whose volume vol fills (extra: flags).
func diskFullRestart(t *testing.T, dataDir, vol string, extra ...string) {
	args := append([]string{"--disk-check-interval", "500ms", "--gc-wait-time", "2s"}, extra...)
	p := startStandalone(t, dataDir, args...)
	c := p.clientWithTimeout(t, 10*time.Second)
	ctx := context.Background()
	const keepTopic, fillTopic = "persistent://public/default/keep", "persistent://public/default/filler"
	acked := map[string][]string{}
	send := func(prod pulsar.Producer, topic, m string) error {
		_, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(m)})
		if err == nil {
			acked[topic] = append(acked[topic], m)
		}
		return err
	}
	keep, err := c.CreateProducer(pulsar.ProducerOptions{Topic: keepTopic, SendTimeout: 3 * time.Second, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	filler, err := c.CreateProducer(pulsar.ProducerOptions{Topic: fillTopic, SendTimeout: 3 * time.Second, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("f", 16<<10)
	for i := 0; ; i++ {
		if i%10 == 0 {
			if err := send(keep, keepTopic, payload(i)); err != nil {
				break
			}
		}
		if err := send(filler, fillTopic, fmt.Sprintf("%08d%s", i, big)); err != nil {
			break
		}
		if i > 20000 {
			t.Fatal("the volume did not fill")
		}
	}
	if !bookieReadOnly(t, p) {
		t.Fatalf("bookie writable after sends failed; log:\n%s", p.log())
	}
	t.Logf("disk full: %d kept and %d filler messages acknowledged", len(acked[keepTopic]), len(acked[fillTopic]))
	keep.Close()
	filler.Close()
	c.Close()
	p.stop()

	// Restart on the full disk (another file takes what the stop gave
	// back: the write cache counted as used, the next entry log's
	// preallocation): both topics load and read back.
	testenv.FillUp(t, filepath.Join(vol, "ballast"))
	p = startStandalone(t, dataDir, args...)
	c = p.clientWithTimeout(t, 10*time.Second)
	if !bookieReadOnly(t, p) {
		t.Fatal("bookie writable after a restart on a full disk")
	}
	checkAcked(t, c, keepTopic, acked[keepTopic])
	checkAcked(t, c, fillTopic, acked[fillTopic])

	// Delete the filler: the kept topic takes writes again, no restart.
	keep, err = c.CreateProducer(pulsar.ProducerOptions{Topic: keepTopic, SendTimeout: 3 * time.Second, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	forceDelete(t, p, "public/default/filler")
	for i := 100000; ; i++ {
		if send(keep, keepTopic, payload(i)) == nil {
			break
		}
		if time.Since(deleted) > 60*time.Second {
			t.Fatalf("no write acknowledged 60 s after the filler was deleted (read-only %v); log:\n%s", bookieReadOnly(t, p), logWithout(t, p, "persist failed"))
		}
	}
	t.Logf("full bookie accepted writes %v after the topic was deleted", time.Since(deleted).Round(time.Millisecond))
	for i := 200000; i < 200100; i++ {
		if err := send(keep, keepTopic, payload(i)); err != nil {
			t.Fatalf("send after recovery: %v (read-only %v); log:\n%s", err, bookieReadOnly(t, p), logWithout(t, p, "persist failed"))
		}
	}
	checkAcked(t, c, keepTopic, acked[keepTopic])
	keep.Close()
	c.Close()
	p.stop()
	p = startStandalone(t, dataDir, args...)
	c = p.clientWithTimeout(t, 10*time.Second)
	checkAcked(t, c, keepTopic, acked[keepTopic])
	c.Close()
}

// checkAcked reads topic from the start and requires every message of
// acked, byte for byte.
func checkAcked(t *testing.T, c pulsar.Client, topic string, acked []string) {
	t.Helper()
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatalf("reader on %s: %v", topic, err)
	}
	defer r.Close()
	// Read until every acknowledged message has been seen, not while
	// HasNext: HasNext answers false when its GetLastMessageId fails (a
	// slow topic load under a loaded machine), which read as "lost".
	missing := make(map[string]bool, len(acked))
	for _, m := range acked {
		missing[m] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	read := 0
	for len(missing) > 0 {
		m, err := r.Next(ctx)
		if err != nil {
			for first := range missing {
				t.Fatalf("%s: %d acknowledged messages not read back (%d acked, %d read), e.g. %.20q: %v", topic, len(missing), len(acked), read, first, err)
			}
		}
		read++
		delete(missing, string(m.Payload()))
	}
}
