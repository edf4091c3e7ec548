package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// standaloneBookieID is the ID a standalone's in-process bookie has in
// its metadata (internal/stack's StandaloneBookieID; the package is the
// binary's wiring, which tests outside it do not import).
const standaloneBookieID = "standalone-bookie"

// TestShellToolsOnStandaloneDataDir: every shell tool works on a stopped
// standalone's data directory (--data-dir for the cluster tools, the
// directories themselves for the offline ones); while the standalone runs
// --data-dir says so, and --metadata-url on its metadata file says to use
// --data-dir for what needs the bookie. The data is intact afterwards.
func TestShellToolsOnStandaloneDataDir(t *testing.T) {
	dataDir := t.TempDir()
	p := startStandalone(t, dataDir)
	c := p.client(t)
	const topic = "persistent://public/default/shell-tools"
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload(i))}); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, code := runMagnetar(t, "shell", "listledgers", "--data-dir", dataDir, "-q")
	if code == 0 || !strings.Contains(stderr, "standalone running") {
		t.Fatalf("listledgers --data-dir on a running standalone: exit %d, stderr %q", code, stderr)
	}
	prod.Close()
	c.Close()
	p.stop()

	run := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := runMagnetar(t, append([]string{"shell"}, args...)...)
		if code != 0 {
			t.Fatalf("magnetar shell %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
		return stdout
	}
	var bookies []struct{ ID, State string }
	if err := json.Unmarshal([]byte(run("listbookies", "--data-dir", dataDir, "--json", "-q")), &bookies); err != nil ||
		len(bookies) != 1 || bookies[0].ID != standaloneBookieID || !strings.HasPrefix(bookies[0].State, "writable") {
		t.Fatalf("listbookies = %+v, %v", bookies, err)
	}
	var ledgers []struct {
		ID          int64  `json:"id"`
		LastEntryID *int64 `json:"lastEntryId"`
	}
	if err := json.Unmarshal([]byte(run("listledgers", "--data-dir", dataDir, "--meta", "--json", "-q")), &ledgers); err != nil || len(ledgers) == 0 {
		t.Fatalf("listledgers = %+v, %v", ledgers, err)
	}
	found := false
	for _, l := range ledgers {
		id := fmt.Sprint(l.ID)
		run("ledgermetadata", id, "--data-dir", dataDir, "--json", "-q")
		out := run("readledger", id, "--data-dir", dataDir, "--json", "-q", "--no-payload")
		if n := strings.Count(out, `"entry"`); n == 20 {
			found = true
		}
		run("ledgerstats", "--ledger", id, "--journal-dir", filepath.Join(dataDir, "journal"), "--ledger-dirs", filepath.Join(dataDir, "ledgers"))
	}
	if !found {
		t.Fatalf("no ledger with the topic's 20 entries among %+v", ledgers)
	}
	// Through the metadata file alone, the bookie is out of reach: the
	// tool says what to do instead of failing to dial it.
	_, stderr, code = runMagnetar(t, "shell", "readledger", fmt.Sprint(ledgers[0].ID), "--metadata-url", "embedded:"+filepath.Join(dataDir, "metadata.db"), "-q")
	if code == 0 || !strings.Contains(stderr, "--data-dir") {
		t.Fatalf("readledger via --metadata-url: exit %d, stderr %q", code, stderr)
	}
	run("listunderreplicated", "--data-dir", dataDir, "--json", "-q")
	run("bookiesanity", "--data-dir", dataDir, "--json", "-q")
	run("simpletest", "--data-dir", dataDir, "--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1", "--entries", "50", "--json", "-q")
	run("readjournal", "--dir", filepath.Join(dataDir, "journal"), "--limit", "5")
	run("readentrylog", "--dir", filepath.Join(dataDir, "ledgers"), "--summary")
	run("rebuildindex", "--ledger-dirs", filepath.Join(dataDir, "ledgers"))

	// The standalone starts again on it and still serves every message.
	p = startStandalone(t, dataDir)
	c = p.client(t)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "after-tools", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	seen := receiveUntil(t, cons, 30e9, func(seen map[string]int) bool { return len(seen) == 20 })
	for i := range 20 {
		if seen[payload(i)] == 0 {
			t.Fatalf("message %d lost after the shell tools", i)
		}
	}
	cons.Close()
	c.Close()
	p.stop()
}
