package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestStandaloneCompactionSIGKILL: a standalone process is SIGKILLed
// while it compacts a topic. After the restart a read_compacted reader
// still sees the exact table (the previous compacted view and the tail,
// or the new view if the switch was made before the kill), and the next
// compaction succeeds and yields one message per live key.
func TestStandaloneCompactionSIGKILL(t *testing.T) {
	dir := t.TempDir()
	p := startStandalone(t, dir)
	topic := "persistent://public/default/kill-compact"
	want := map[string]string{}
	produce := func(cl pulsar.Client, round, n, keys int) {
		prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, MaxPendingMessages: 5000})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			key := fmt.Sprintf("k%d", i%keys)
			val := fmt.Sprintf("r%d-%d-%s", round, i, strings.Repeat("x", 64))
			if i%keys == 7 && i >= n-keys { // the last write of key 7 is a tombstone
				val = ""
			}
			wg.Add(1)
			prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: key, Payload: []byte(val)}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					t.Error(err)
				}
				wg.Done()
			})
			if val == "" {
				delete(want, key)
			} else {
				want[key] = val
			}
		}
		wg.Wait()
	}
	compactionStatus := func(p *proc) string {
		code, body := p.get(t, "/admin/v2/persistent/public/default/kill-compact/compaction")
		if code != 200 {
			t.Fatalf("status: %d %s", code, body)
		}
		return string(body)
	}
	compact := func(p *proc) {
		if out := runAdmin(t, p, false, "topics", "compact", topic); out != "" {
			t.Logf("compact: %s", out)
		}
	}
	waitSuccess := func(p *proc) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			s := compactionStatus(p)
			if strings.Contains(s, "SUCCESS") {
				return
			}
			if strings.Contains(s, "ERROR") || time.Now().After(deadline) {
				t.Fatalf("compaction: %s\n%s", s, p.log())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	readTable := func(cl pulsar.Client) (map[string]string, int) {
		r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(), ReadCompacted: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		kv, n := map[string]string{}, 0
		for r.HasNext() {
			m, err := r.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			n++
			if len(m.Payload()) == 0 {
				delete(kv, m.Key())
			} else {
				kv[m.Key()] = string(m.Payload())
			}
		}
		return kv, n
	}

	cl := p.client(t)
	produce(cl, 0, 40_000, 400)
	compact(p)
	waitSuccess(p)
	produce(cl, 1, 80_000, 500)
	cl.Close()
	compact(p)
	at := compactionStatus(p)
	p.kill()
	t.Logf("killed with compaction status %s", at)

	p = startStandalone(t, dir)
	cl = p.client(t)
	if kv, _ := readTable(cl); !reflect.DeepEqual(kv, want) {
		t.Fatalf("table after the crash differs: %d keys, want %d", len(kv), len(want))
	}
	pendingAfterCrash := internalCompaction(t, p)
	if pendingAfterCrash.Pending != nil {
		t.Logf("killed while writing the compacted ledger: ledger %d pending", *pendingAfterCrash.Pending)
	} else {
		t.Logf("killed before the compacted ledger was created (pass 1) or after the switch")
	}
	compact(p)
	waitSuccess(p)
	kv, n := readTable(cl)
	if !reflect.DeepEqual(kv, want) || n != len(want) {
		t.Fatalf("after recompaction: %d messages, %d keys; want %d", n, len(kv), len(want))
	}
	st := internalCompaction(t, p)
	if st.Pending != nil || st.Compacted == nil || st.Compacted.Entries == 0 ||
		(pendingAfterCrash.Pending != nil && st.Compacted.LedgerID == *pendingAfterCrash.Pending) {
		t.Fatalf("compaction state after recompaction: %+v", st)
	}
}

type compactionInternals struct {
	Compacted *struct {
		LedgerID int64 `json:"ledgerId"`
		Entries  int64 `json:"entries"`
	} `json:"compactedLedger"`
	Horizon string `json:"compactionHorizon"`
	Pending *int64 `json:"pendingCompactionLedger"`
}

func internalCompaction(t *testing.T, p *proc) compactionInternals {
	t.Helper()
	code, body := p.get(t, "/admin/v2/persistent/public/default/kill-compact/internalStats")
	var st compactionInternals
	if err := json.Unmarshal(body, &st); code != 200 || err != nil {
		t.Fatalf("internal stats: %d %s %v", code, body, err)
	}
	return st
}
