package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/mledger"
)

// TestInternalInfoAndMessageIDByTime: internal-info and
// messageid/{timestamp} on real published data, over ledger rollovers
// (three entries a ledger): the ledgers as recorded, the cursor's
// mark-delete and individually deleted ranges, and the message id of
// each publish time, of a time between two messages (also across a
// rollover), before the first and past the last.
func TestInternalInfoAndMessageIDByTime(t *testing.T) {
	tb := startBrokerOpts(t, brokerOpts{mcfg: mledger.Config{MaxEntriesPerLedger: 3, MinLedgerRolloverTime: -1}})
	ac := adminClient(t, tb)
	c := tb.client(t)
	topic := "persistent://public/default/" + uniqueName("mlinfo")
	tn := subscribedTopic(t, ac, topic, "s")
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	var ids []pulsar.MessageID
	last := int64(0)
	for i := range 7 {
		// At least two milliseconds between messages, so that a time
		// lies strictly between any two.
		for time.Now().UnixMilli() <= last+1 {
			time.Sleep(100 * time.Microsecond)
		}
		id, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		last = time.Now().UnixMilli()
	}
	// The publish times as stored, read back.
	rd, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	var times []int64
	for range ids {
		m, err := rd.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, m.PublishTime().UnixMilli())
	}
	rd.Close()
	for i := 1; i < len(times); i++ {
		if times[i] <= times[i-1]+1 {
			t.Fatalf("publish times do not increase: %v", times)
		}
	}
	if ids[3].LedgerID() == ids[2].LedgerID() || ids[6].LedgerID() == ids[5].LedgerID() {
		t.Fatalf("no rollover every three entries: %v", ids)
	}

	// Acknowledge m1 and m2 (not m0): a deleted range beyond the
	// mark-delete position.
	cons := brokertest.Consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	for range 3 {
		m, err := cons.Receive(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if m.ID().EntryID() != ids[0].EntryID() || m.ID().LedgerID() != ids[0].LedgerID() {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	var info utils.ManagedLedgerInfo
	for {
		var err error
		if info, err = ac.Topics().GetInternalInfo(tn); err != nil {
			t.Fatal(err)
		}
		if cur, ok := info.Cursors["s"]; ok && len(cur.IndividualDeletedMessages) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(info.Ledgers) != 3 {
		t.Fatalf("ledgers %+v, want 3 (3 + 3 entries closed, one open)", info.Ledgers)
	}
	for i, l := range info.Ledgers {
		if l.LedgerID != ids[3*i].LedgerID() {
			t.Fatalf("ledger %d is %d, want %d", i, l.LedgerID, ids[3*i].LedgerID())
		}
		if i < 2 && (l.Entries != 3 || l.Size <= 0 || l.Timestamp <= 0) {
			t.Fatalf("closed ledger %+v: want 3 entries, a size and a close time", l)
		}
	}
	if open := info.Ledgers[2]; open.Entries != 0 || open.Size != 0 {
		t.Fatalf("the open ledger records entries or a size: %+v", open)
	}
	cur, ok := info.Cursors["s"]
	if !ok {
		t.Fatalf("no cursor s: %+v", info.Cursors)
	}
	if cur.MarkDelete.LedgerID != ids[0].LedgerID() || cur.MarkDelete.EntryID != ids[0].EntryID()-1 {
		t.Fatalf("mark-delete %+v, want before m0 %v", cur.MarkDelete, ids[0])
	}
	wantRange := utils.MessageRangeInfo{From: utils.PositionInfo{LedgerID: ids[0].LedgerID(), EntryID: ids[0].EntryID()},
		To: utils.PositionInfo{LedgerID: ids[2].LedgerID(), EntryID: ids[2].EntryID()}}
	if len(cur.IndividualDeletedMessages) != 1 || cur.IndividualDeletedMessages[0] != wantRange {
		t.Fatalf("individually deleted %+v, want [%+v]", cur.IndividualDeletedMessages, wantRange)
	}
	if info.TerminatedPosition != (utils.PositionInfo{}) {
		t.Fatalf("terminated position of a live topic: %+v", info.TerminatedPosition)
	}

	same := func(what string, got utils.MessageID, want pulsar.MessageID) {
		t.Helper()
		if got.LedgerID != want.LedgerID() || got.EntryID != want.EntryID() || got.PartitionIndex != -1 {
			t.Fatalf("%s: %+v, want %d:%d partition -1", what, got, want.LedgerID(), want.EntryID())
		}
	}
	for i, ts := range times {
		got, err := ac.Topics().GetMessageID(tn, ts)
		if err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprintf("message id at m%d's time", i), got, ids[i])
		{
			// Between m(i-1) and m(i): m(i). m3 is the first entry of
			// the second ledger (across a rollover).
			got, err := ac.Topics().GetMessageID(tn, ts-1)
			if err != nil {
				t.Fatal(err)
			}
			same(fmt.Sprintf("message id just before m%d", i), got, ids[i])
		}
	}
	got, err := ac.Topics().GetMessageID(tn, 0)
	if err != nil {
		t.Fatal(err)
	}
	same("message id before every message", got, ids[0])
	got, err = ac.Topics().GetMessageID(tn, times[6]+1)
	if err != nil {
		t.Fatal(err)
	}
	if got.LedgerID != ids[6].LedgerID() || got.EntryID != ids[6].EntryID()+1 {
		t.Fatalf("message id past the end: %+v, want %d:%d", got, ids[6].LedgerID(), ids[6].EntryID()+1)
	}
	// Pulsar's MessageIdImpl shape.
	code, body := httpDo(t, tb, "GET", "/admin/v2/"+tn.GetRestPath()+"/messageid/"+fmt.Sprint(times[4]), "")
	want := fmt.Sprintf(`{"ledgerId":%d,"entryId":%d,"partitionIndex":-1,"batchSize":0,"batchIndex":-1}`, ids[4].LedgerID(), ids[4].EntryID())
	if code != http.StatusOK || strings.TrimSpace(body) != want {
		t.Fatalf("messageid: %d %s, want %s", code, body, want)
	}
	code, body = httpDo(t, tb, "GET", "/admin/v2/"+tn.GetRestPath()+"/messageid/yesterday", "")
	if code != http.StatusBadRequest {
		t.Fatalf("a timestamp that is no number: %d %s", code, body)
	}

	// Terminated: the terminated position is the last entry.
	if _, err := ac.Topics().Terminate(tn); err != nil {
		t.Fatal(err)
	}
	info, err = ac.Topics().GetInternalInfo(tn)
	if err != nil {
		t.Fatal(err)
	}
	if info.TerminatedPosition != (utils.PositionInfo{LedgerID: ids[6].LedgerID(), EntryID: ids[6].EntryID()}) {
		t.Fatalf("terminated position %+v, want %v", info.TerminatedPosition, ids[6])
	}
}

// TestInternalInfoAndMessageIDRefusals: an empty topic's message id is
// its ledger's entry 0 (Pulsar's start position); a partitioned topic's
// internal-info holds one per partition and its messageid is refused
// (405, ask a partition); a non-persistent topic gets 405 for both.
func TestInternalInfoAndMessageIDRefusals(t *testing.T) {
	tb, ac := startAdmin(t)
	empty := mustTopic(t, "persistent://public/default/"+uniqueName("empty"))
	if err := ac.Topics().Create(empty, 0); err != nil {
		t.Fatal(err)
	}
	info, err := ac.Topics().GetInternalInfo(empty)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Ledgers) != 1 {
		t.Fatalf("an empty topic's ledgers: %+v", info.Ledgers)
	}
	got, err := ac.Topics().GetMessageID(empty, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if got.LedgerID != info.Ledgers[0].LedgerID || got.EntryID != 0 {
		t.Fatalf("message id of an empty topic: %+v, want %d:0", got, info.Ledgers[0].LedgerID)
	}
	parted := mustTopic(t, "persistent://public/default/"+uniqueName("parted"))
	if err := ac.Topics().Create(parted, 2); err != nil {
		t.Fatal(err)
	}
	c := tb.client(t)
	for i := range 2 {
		// Each partition's ledger is made on first use.
		pp := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: fmt.Sprintf("%s-partition-%d", parted.String(), i)})
		if _, err := pp.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	code, body := httpDo(t, tb, "GET", "/admin/v2/"+parted.GetRestPath()+"/internal-info", "")
	var per map[string]json.RawMessage
	if code != http.StatusOK || json.Unmarshal([]byte(body), &per) != nil || len(per) != 2 || per[parted.String()+"-partition-1"] == nil {
		t.Fatalf("internal-info of a partitioned topic: %d %s", code, body)
	}
	code, body = httpDo(t, tb, "GET", "/admin/v2/"+parted.GetRestPath()+"/messageid/1", "")
	if code != http.StatusMethodNotAllowed {
		t.Fatalf("messageid of a partitioned topic: %d %s", code, body)
	}
	code, body = httpDo(t, tb, "GET", "/admin/v2/"+parted.GetRestPath()+"-partition-1/messageid/1", "")
	if code != http.StatusOK || !strings.Contains(body, `"partitionIndex":1`) {
		t.Fatalf("messageid of a partition: %d %s", code, body)
	}
	np := "non-persistent://public/default/" + uniqueName("np")
	_ = brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: np})
	npn := mustTopic(t, np)
	for _, path := range []string{"/internal-info", "/messageid/1"} {
		if code, body := httpDo(t, tb, "GET", "/admin/v2/"+npn.GetRestPath()+path, ""); code != http.StatusMethodNotAllowed {
			t.Fatalf("%s of a non-persistent topic: %d %s", path, code, body)
		}
	}
}
