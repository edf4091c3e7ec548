package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestDedupSnapshotSurvivesKill: a standalone deduplicating with a
// snapshot every 5 entries stores 17 entries of two producers; once the
// pulsar.dedup cursor's mark-delete position is the 15th entry (the last
// snapshot) the process is killed (SIGKILL). The restarted standalone
// drops every re-sent message of both producers and stores only the new
// sequence ids.
func TestDedupSnapshotSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a standalone twice")
	}
	dir := t.TempDir()
	args := []string{"--dedup", "--dedup-entries-interval", "5"}
	p := startStandalone(t, dir, args...)
	const topic = "persistent://public/default/dedup-kill"
	send := func(c pulsar.Client, name string, from, to int64) {
		t.Helper()
		pr, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: name, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		for seq := from; seq <= to; seq++ {
			if _, err := pr.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(name + strconv.FormatInt(seq, 10)), SequenceID: &seq}); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := p.client(t)
	send(c, "a", 0, 9)
	send(c, "b", 0, 6)
	// The snapshot after the 15th entry: the dedup cursor's mark-delete
	// is two entries before the last.
	path := "/admin/v2/persistent/public/default/dedup-kill/internalStats"
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := p.get(t, path)
		var st struct {
			LastConfirmedEntry string `json:"lastConfirmedEntry"`
			Cursors            map[string]struct {
				MarkDeletePosition string `json:"markDeletePosition"`
			} `json:"cursors"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("internalStats: HTTP %d: %s", code, body)
		}
		var l, e int64
		fmt.Sscanf(st.LastConfirmedEntry, "%d:%d", &l, &e)
		if st.Cursors["pulsar.dedup"].MarkDeletePosition == fmt.Sprintf("%d:%d", l, e-2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot at the 15th entry: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Close()
	p.kill()

	p = startStandalone(t, dir, args...)
	c = p.client(t)
	defer c.Close()
	send(c, "a", 0, 10)
	send(c, "b", 3, 7)
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for r.HasNext() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		m, err := r.Next(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m.Payload()))
	}
	want := "a0 a1 a2 a3 a4 a5 a6 a7 a8 a9 b0 b1 b2 b3 b4 b5 b6 a10 b7"
	if strings.Join(got, " ") != want {
		t.Fatalf("stored after the restart: %v, want %s", got, want)
	}
}
