package topicstats_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// keys returns the keys of the JSON object raw, in order.
func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	var out []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// object decodes the JSON object raw into its members.
func object(t *testing.T, raw json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return m
}

// Pulsar's field names, in the order Magnetar has always written them.
var (
	topicKeys = strings.Fields(`msgRateIn msgThroughputIn msgRateOut msgThroughputOut msgInCounter bytesInCounter
		msgOutCounter bytesOutCounter averageMsgSize msgChunkPublished storageSize backlogSize msgBacklog
		backlogQuotaLimitSize backlogQuotaLimitTime oldestBacklogMessageAgeSeconds oldestBacklogMessageSubscriptionName
		publishRateLimitedTimes earliestMsgPublishTimeInBacklogs offloadedStorageSize lastOffloadLedgerId
		lastOffloadSuccessTimeStamp lastOffloadFailureTimeStamp ongoingTxnCount abortedTxnCount committedTxnCount
		publishers waitingPublishers subscriptions replication deduplicationStatus nonContiguousDeletedMessagesRanges
		nonContiguousDeletedMessagesRangesSerializedSize delayedMessageIndexSizeInBytes compaction ownerBroker
		topicCreationTimeStamp lastPublishTimeStamp`)
	publisherKeys = strings.Fields(`producerId producerName accessMode chunkedMessageRate supportsPartialProducer
		msgRateIn msgThroughputIn averageMsgSize msgInCounter bytesInCounter address connectedSince clientVersion metadata`)
	subscriptionKeys = strings.Fields(`msgRateOut msgThroughputOut msgRateRedeliver msgBacklog backlogSize
		msgBacklogNoDelayed unackedMessages blockedSubscriptionOnUnackedMsgs msgDelayed isDurable isReplicated type
		msgOutCounter bytesOutCounter lastAckedTimestamp lastConsumedTimestamp consumers messageAckRate
		chunkedMessageRate earliestMsgPublishTimeInBacklog msgRateExpired totalMsgExpired lastExpireTimestamp
		lastConsumedFlowTimestamp lastMarkDeleteAdvancedTimestamp allowOutOfOrderDelivery
		consumersAfterMarkDeletePosition nonContiguousDeletedMessagesRanges
		nonContiguousDeletedMessagesRangesSerializedSize delayedMessageIndexSizeInBytes subscriptionProperties replicated`)
	consumerKeys = strings.Fields(`consumerName availablePermits unackedMessages msgRateOut msgThroughputOut
		msgOutCounter bytesOutCounter address connectedSince clientVersion metadata msgRateRedeliver messageAckRate
		chunkedMessageRate avgMessagesPerEntry blockedConsumerOnUnackedMsgs lastAckedTimestamp lastConsumedTimestamp
		lastConsumedFlowTimestamp`)
)

// extra is a feature that is a Source and an InternalSource.
type extra struct{ publishers chan int }

func (extra) Name() string { return "extra" }

func (e extra) AddTopicStats(_ broker.Topic, st *topicstats.TopicStats) {
	e.publishers <- len(st.Publishers)
	st.Replication["elsewhere"] = topicstats.ReplicatorStats{MsgOutCount: 7, Connected: true}
}

func (extra) AddInternalStats(_ context.Context, _ broker.Topic, out *topicstats.InternalStats) {
	out.CompactionHorizon = "1:2"
}

// TestTopicStatsJSON: a topic's stats as the admin API writes them,
// built from the core's snapshot: Pulsar's field names in Magnetar's
// order, counters as integers, idle values where there is nothing,
// the backlog and clients as the core counts them, and a feature's
// part (Source) added after the publishers.
func TestTopicStatsJSON(t *testing.T) {
	e := extra{publishers: make(chan int, 1)}
	b := brokertest.Start(t, brokertest.Options{Features: func(b *broker.Broker) error { return b.Use(e) }})
	topic := brokertest.Topic("tstats")
	cl := b.Client(t)
	prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true, Name: "p1"})
	cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub1", Type: pulsar.Shared,
		Name: "c1", Properties: map[string]string{"ck": "cv"}})
	brokertest.SendAll(t, prod, 5, brokertest.Msg)
	msgs := brokertest.Receive(t, cons, 5)
	if err := cons.Ack(msgs[0]); err != nil {
		t.Fatal(err)
	}
	v, err := b.Topic(brokertest.Ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	r := topicstats.For(b.Broker)
	var st topicstats.TopicStats
	brokertest.WaitFor(t, "backlog 4, 4 unacked", func() bool {
		st = r.Full(v)
		<-e.publishers
		s := st.Subscriptions["sub1"]
		return s.MsgBacklog == 4 && s.UnackedMessages == 4
	})
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(t, raw); !slices.Equal(got, topicKeys) {
		t.Fatalf("topic keys\n got %v\nwant %v", got, topicKeys)
	}
	top := object(t, raw)
	for k, want := range map[string]string{
		"msgInCounter": "5", "msgOutCounter": "5", "msgBacklog": "4", "backlogQuotaLimitSize": "-1",
		"backlogQuotaLimitTime": "-1", "offloadedStorageSize": "0", "deduplicationStatus": `"Disabled"`,
		"waitingPublishers": "0", "ownerBroker": `"` + b.HTTPAddr() + `"`,
		"replication": `{"elsewhere":{"msgRateIn":0,"msgThroughputIn":0,"msgRateOut":0,"msgThroughputOut":0,"msgRateExpired":0,"replicationBacklog":0,"connected":true,"replicationDelayInSeconds":0,"inboundConnection":"","inboundConnectedSince":"","outboundConnection":"","outboundConnectedSince":"","msgInCount":0,"bytesInCount":0,"msgOutCount":7,"bytesOutCount":0,"msgExpiredCount":0}}`,
		"compaction":  `{"lastCompactionRemovedEventCount":0,"lastCompactionSucceedTimestamp":0,"lastCompactionFailedTimestamp":0,"lastCompactionDurationTimeInMills":0}`,
	} {
		if got := string(top[k]); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	if string(top["lastPublishTimeStamp"]) == "0" || string(top["topicCreationTimeStamp"]) == "0" ||
		string(top["storageSize"]) == "0" || string(top["earliestMsgPublishTimeInBacklogs"]) == "0" {
		t.Errorf("times and sizes not filled in: %s", raw)
	}
	if st.AverageMsgSize != float64(st.BytesInCounter)/5 || st.OldestBacklogMessageSubscriptionName != "sub1" {
		t.Errorf("average size %v of %d bytes, oldest backlog in %q", st.AverageMsgSize, st.BytesInCounter, st.OldestBacklogMessageSubscriptionName)
	}

	var pubs []json.RawMessage
	if err := json.Unmarshal(top["publishers"], &pubs); err != nil || len(pubs) != 1 {
		t.Fatalf("publishers %s (%v)", top["publishers"], err)
	}
	if got := keys(t, pubs[0]); !slices.Equal(got, publisherKeys) {
		t.Fatalf("publisher keys\n got %v\nwant %v", got, publisherKeys)
	}
	p := object(t, pubs[0])
	if string(p["producerName"]) != `"p1"` || string(p["accessMode"]) != `"Shared"` || string(p["msgInCounter"]) != "5" ||
		string(p["metadata"]) != "{}" || !strings.HasPrefix(string(p["clientVersion"]), `"Pulsar-Go`) {
		t.Errorf("publisher %s", pubs[0])
	}

	subs := object(t, top["subscriptions"])
	if got := keys(t, subs["sub1"]); !slices.Equal(got, subscriptionKeys) {
		t.Fatalf("subscription keys\n got %v\nwant %v", got, subscriptionKeys)
	}
	s := object(t, subs["sub1"])
	for k, want := range map[string]string{"type": `"Shared"`, "msgBacklog": "4", "msgBacklogNoDelayed": "4",
		"unackedMessages": "4", "msgOutCounter": "5", "isDurable": "true", "consumersAfterMarkDeletePosition": "{}",
		"subscriptionProperties": "{}"} {
		if got := string(s[k]); got != want {
			t.Errorf("subscription %s = %s, want %s", k, got, want)
		}
	}
	var cs []json.RawMessage
	if err := json.Unmarshal(s["consumers"], &cs); err != nil || len(cs) != 1 {
		t.Fatalf("consumers %s (%v)", s["consumers"], err)
	}
	if got := keys(t, cs[0]); !slices.Equal(got, consumerKeys) {
		t.Fatalf("consumer keys\n got %v\nwant %v", got, consumerKeys)
	}
	c := object(t, cs[0])
	if string(c["consumerName"]) != `"c1"` || string(c["unackedMessages"]) != "4" || string(c["metadata"]) != `{"ck":"cv"}` ||
		string(c["msgOutCounter"]) != "5" || string(c["avgMessagesPerEntry"]) != "1" {
		t.Errorf("consumer %s", cs[0])
	}

	light := r.Light(v)
	if light.MsgInCounter != 5 || light.Subscriptions["sub1"].EarliestMsgPublishTimeInBacklog != 0 {
		t.Errorf("light stats: in %d, earliest %d (want 5, no storage read)", light.MsgInCounter, light.Subscriptions["sub1"].EarliestMsgPublishTimeInBacklog)
	}
	if n := <-e.publishers; n != 1 {
		t.Errorf("the Source saw %d publishers, want them filled in (1)", n)
	}
	if (topicstats.Reader{}).Light(v).Replication["elsewhere"].MsgOutCount != 0 {
		t.Error("the zero Reader asked a Source")
	}

	is := r.Internal(brokertest.Ctx(t), v)
	if is.CompactionHorizon != "1:2" || is.NumberOfEntries != 5 || is.Cursors["sub1"].BacklogMessages != 4 || is.State != "LedgerOpened" {
		t.Errorf("internal stats %+v", is)
	}
}

// TestLedgerJSON: a managed ledger's internal stats in Pulsar's shape.
func TestLedgerJSON(t *testing.T) {
	is := topicstats.Ledger(mledger.Stats{EntriesAddedCounter: 9, NumberOfEntries: 7, TotalSize: 700, BookieSize: 700,
		LastConfirmed: mledger.Position{LedgerID: 4, EntryID: 2}, Terminated: true,
		Ledgers: []mledger.LedgerInfo{{LedgerID: 3, Entries: 4, Size: 400, Timestamp: 11}, {LedgerID: 4, Entries: 3, Size: 300}},
		Cursors: []mledger.CursorStats{{Name: "s", Durable: true, MarkDelete: mledger.Position{LedgerID: 3, EntryID: 1},
			ReadPosition: mledger.Position{LedgerID: 3, EntryID: 2}, BacklogEntries: 5, BacklogMessages: 6, CursorLedger: 8}}})
	raw, err := json.Marshal(is)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"entriesAddedCounter":9,"numberOfEntries":7,"totalSize":700,"offloadedSize":0,"bookieSize":700,` +
		`"currentLedgerEntries":3,"currentLedgerSize":300,"lastConfirmedEntry":"4:2","state":"Terminated","ledgers":[` +
		`{"ledgerId":3,"entries":4,"size":400,"timestamp":11,"offloaded":false,"underReplicated":false,"bookkeeperDeleted":false},` +
		`{"ledgerId":4,"entries":3,"size":300,"timestamp":0,"offloaded":false,"underReplicated":false,"bookkeeperDeleted":false}],` +
		`"cursors":{"s":{"markDeletePosition":"3:1","readPosition":"3:2","cursorLedger":8,"state":"Open",` +
		`"numberOfEntriesSinceFirstNotAckedMessage":5,"totalNonContiguousDeletedMessagesRange":0,"messagesConsumedCounter":0,` +
		`"durable":true,"backlogMessages":6}}}`
	if string(raw) != want {
		t.Fatalf("internal stats\n got %s\nwant %s", raw, want)
	}
}
