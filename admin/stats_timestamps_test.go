package admin

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
)

// stamps are the two timestamps of a topic's stats.
type stamps struct {
	Created     int64 `json:"topicCreationTimeStamp"`
	LastPublish int64 `json:"lastPublishTimeStamp"`
}

func getStamps(t *testing.T, tb *testBroker, path string) stamps {
	t.Helper()
	var s stamps
	if err := json.Unmarshal([]byte(mustHTTP(t, tb, "GET", path, "", 200)), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStatsTimestamps: a topic's stats answer when it was created and
// when a message was last published to it (0 until one is), as Pulsar's
// topicCreationTimeStamp and lastPublishTimeStamp; both survive a
// restart (the creation time is kept with the topic, the last publish
// time is read back from its last message) and a properties update.
func TestStatsTimestamps(t *testing.T) {
	r, tb := startRestartable(t)
	before := time.Now().UnixMilli()
	topic, path := newTopic(t, tb, "stamps")
	created := time.Now().UnixMilli()
	st := getStamps(t, tb, path+"/stats")
	if st.Created < before || st.Created > created || st.LastPublish != 0 {
		t.Fatalf("new topic: %+v, want created in [%d, %d] and no publish", st, before, created)
	}
	cl := tb.client(t)
	p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic})
	sent := time.Now().UnixMilli()
	if _, err := p.Send(ctxT(t), brokertest.Msg(0)); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMilli()
	st2 := getStamps(t, tb, path+"/stats")
	if st2.Created != st.Created || st2.LastPublish < sent || st2.LastPublish > after {
		t.Fatalf("after a publish: %+v, want created %d and last publish in [%d, %d]", st2, st.Created, sent, after)
	}
	mustHTTP(t, tb, "PUT", path+"/properties", `{"k":"v"}`, 204)
	// The message's own publish time, what a reload recovers.
	c := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	m := receiveN(t, c, 1)[0]
	published := m.PublishTime().UnixMilli()
	p.Close()
	c.Close()
	cl.Close()

	tb = r.restart(t)
	st3 := getStamps(t, tb, path+"/stats")
	if st3.Created != st.Created || st3.LastPublish != published {
		t.Fatalf("after a restart: %+v, want created %d and last publish %d", st3, st.Created, published)
	}
}

// TestPartitionedStatsTimestamps: a partitioned topic's stats answer a
// creation time as soon as it is created, and the latest publish of its
// partitions.
func TestPartitionedStatsTimestamps(t *testing.T) {
	tb := startBroker(t, nil)
	topic := "persistent://public/default/" + uniqueName("stamps-p")
	path := adminPath(topic)
	before := time.Now().UnixMilli()
	mustHTTP(t, tb, "PUT", path+"/partitions", "2", 204)
	st := getStamps(t, tb, path+"/partitioned-stats")
	if now := time.Now().UnixMilli(); st.Created < before || st.Created > now || st.LastPublish != 0 {
		t.Fatalf("new partitioned topic: %+v, want created in [%d, %d] and no publish", st, before, now)
	}
	p := brokertest.Producer(t, tb.client(t), pulsar.ProducerOptions{Topic: topic + "-partition-1"})
	sent := time.Now().UnixMilli()
	if _, err := p.Send(ctxT(t), brokertest.Msg(0)); err != nil {
		t.Fatal(err)
	}
	var parted struct {
		stamps
		Partitions map[string]stamps `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(mustHTTP(t, tb, "GET", path+"/partitioned-stats?perPartition=true", "", 200)), &parted); err != nil {
		t.Fatal(err)
	}
	p0, p1 := parted.Partitions[topic+"-partition-0"], parted.Partitions[topic+"-partition-1"]
	if p0.LastPublish != 0 || p1.LastPublish < sent || parted.LastPublish != p1.LastPublish {
		t.Fatalf("after a publish to partition 1: %+v, want its last publish (>= %d) on it and the topic only", parted, sent)
	}
	if parted.Created != min(p0.Created, p1.Created) || parted.Created != st.Created {
		t.Fatalf("creation times %+v, want the topic's the earliest of its partitions', %d", parted, st.Created)
	}
}
