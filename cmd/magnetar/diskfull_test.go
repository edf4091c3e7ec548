package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory and
// unmounts it at cleanup. It needs root (CI runs as root).
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system needs root")
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// bookieReadOnly asks the admin API for the standalone bookie's state.
func bookieReadOnly(t *testing.T, p *proc) bool {
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
	dataDir := mountTmpfs(t, 256<<20)
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
	req, _ := http.NewRequest(http.MethodDelete, p.http+"/admin/v2/persistent/public/default/filler?force=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("delete filler: %d", resp.StatusCode)
	}
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
			t.Fatalf("send after recovery: %v", err)
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

// logWithout returns p's log without the lines containing substr.
func logWithout(t *testing.T, p *proc, substr string) string {
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
