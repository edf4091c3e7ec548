package e2e

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// Rows of TestPulsarAdminTable for Schema, Subscriptions and
// TopicPolicies.

const avroSchema = `{"type":"record","name":"R","namespace":"tbl","fields":[{"name":"a","type":"int"}]}`
const avroSchema2 = `{"type":"record","name":"R","namespace":"tbl","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","string"],"default":null}]}`

func schemaRows(e *adminEnv) []adminRow {
	sc := e.c.Schemas()
	topic := "persistent://" + e.ns + "/schema"
	p1 := utils.PostSchemaPayload{SchemaType: "AVRO", Schema: avroSchema, Properties: map[string]string{"k": "v"}}
	p2 := utils.PostSchemaPayload{SchemaType: "AVRO", Schema: avroSchema2}
	return []adminRow{
		row("Schema", "CreateSchemaByPayload", func(t rowT) {
			ok(t, sc.CreateSchemaByPayload(topic, p1))
		}),
		row("Schema", "GetSchemaInfo", func(t rowT) {
			got, err := sc.GetSchemaInfo(topic)
			ok(t, err)
			same(t, "type", got.Type, "AVRO")
			same(t, "definition", string(got.Schema), avroSchema)
			same(t, "properties", got.Properties, p1.Properties)
		}),
		row("Schema", "CreateSchemaBySchemaInfo", func(t rowT) {
			ok(t, sc.CreateSchemaBySchemaInfo(topic, utils.SchemaInfo{Type: "AVRO", Schema: []byte(avroSchema2)}))
		}),
		row("Schema", "GetSchemaInfoWithVersion", func(t rowT) {
			got, err := sc.GetSchemaInfoWithVersion(topic)
			ok(t, err)
			same(t, "latest version", got.Version, int64(1))
			same(t, "latest definition", string(got.SchemaInfo.Schema), avroSchema2)
		}),
		row("Schema", "GetSchemaInfoByVersion", func(t rowT) {
			got, err := sc.GetSchemaInfoByVersion(topic, 0)
			ok(t, err)
			same(t, "version 0", string(got.Schema), avroSchema)
		}),
		row("Schema", "GetAllSchemas", func(t rowT) {
			got, err := sc.GetAllSchemas(topic)
			ok(t, err)
			if len(got) != 2 || got[0].Version != 0 || got[1].Version != 1 {
				t.Fatalf("all schemas: %#v", got)
			}
		}),
		row("Schema", "GetVersionBySchemaInfo", func(t rowT) {
			v, err := sc.GetVersionBySchemaInfo(topic, utils.SchemaInfo{Type: "AVRO", Schema: []byte(avroSchema), Properties: p1.Properties})
			ok(t, err)
			same(t, "version", v, int64(0))
		}),
		row("Schema", "GetVersionByPayload", func(t rowT) {
			v, err := sc.GetVersionByPayload(topic, p2)
			ok(t, err)
			same(t, "version", v, int64(1))
			// Pulsar matches on the definition's hash, not the
			// properties: the same definition with other properties is
			// the same version.
			other := p2
			other.Properties = map[string]string{"other": "x"}
			v, err = sc.GetVersionByPayload(topic, other)
			ok(t, err)
			same(t, "version, other properties", v, int64(1))
			// Two versions of one definition differing only in their
			// properties: either payload finds the oldest.
			twin := "persistent://" + e.ns + "/schema-props"
			pa := utils.PostSchemaPayload{SchemaType: "AVRO", Schema: avroSchema, Properties: map[string]string{"p": "a"}}
			pb := utils.PostSchemaPayload{SchemaType: "AVRO", Schema: avroSchema, Properties: map[string]string{"p": "b"}}
			ok(t, sc.CreateSchemaByPayload(twin, pa))
			ok(t, sc.CreateSchemaByPayload(twin, pb))
			for _, p := range []utils.PostSchemaPayload{pb, pa, {SchemaType: "AVRO", Schema: avroSchema}} {
				v, err = sc.GetVersionByPayload(twin, p)
				ok(t, err)
				same(t, "version of the definition with properties "+fmt.Sprint(p.Properties), v, int64(0))
			}
			// Another type with the same data is another schema; an
			// unknown definition is version -1, as Pulsar answers.
			v, err = sc.GetVersionByPayload(twin, utils.PostSchemaPayload{SchemaType: "JSON", Schema: avroSchema})
			ok(t, err)
			same(t, "version of the definition as JSON", v, int64(-1))
			v, err = sc.GetVersionByPayload(twin, p2)
			ok(t, err)
			same(t, "version of an unregistered definition", v, int64(-1))
			ok(t, sc.DeleteSchema(twin))
		}),
		row("Schema", "TestCompatibilityWithSchemaInfo", func(t rowT) {
			got, err := sc.TestCompatibilityWithSchemaInfo(topic, utils.SchemaInfo{Type: "AVRO", Schema: []byte(`{"type":"record","name":"R","namespace":"tbl","fields":[{"name":"a","type":"string"}]}`)})
			ok(t, err)
			same(t, "int to string is compatible", got.IsCompatibility, false)
		}),
		row("Schema", "TestCompatibilityWithPostSchemaPayload", func(t rowT) {
			got, err := sc.TestCompatibilityWithPostSchemaPayload(topic, p2)
			ok(t, err)
			same(t, "the latest schema is compatible with itself", got.IsCompatibility, true)
		}),
		row("Schema", "DeleteSchema", func(t rowT) {
			ok(t, sc.DeleteSchema(topic))
			_, err := sc.GetSchemaInfo(topic)
			wantStatus(t, err, http.StatusNotFound)
		}),
		row("Schema", "ForceDeleteSchema", func(t rowT) {
			ok(t, sc.CreateSchemaByPayload(topic, p1))
			ok(t, sc.ForceDeleteSchema(topic))
			_, err := sc.GetSchemaInfo(topic)
			wantStatus(t, err, http.StatusNotFound)
		}),
	}
}

// produce sends n messages to topic and returns their ids.
func (e *adminEnv) produce(t rowT, topic string, n int, props map[string]string) []pulsar.MessageID {
	t.Helper()
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: e.p.service})
	ok(t, err)
	defer cl.Close()
	pr, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ok(t, err)
	defer pr.Close()
	var ids []pulsar.MessageID
	for i := range n {
		id, err := pr.Send(context.Background(), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i), Properties: props})
		ok(t, err)
		ids = append(ids, id)
	}
	return ids
}

// backlog is the subscription's backlog from the topic's stats.
func (e *adminEnv) backlog(t rowT, tn utils.TopicName, sub string) int64 {
	t.Helper()
	st, err := e.c.Topics().GetStats(tn)
	ok(t, err)
	s, found := st.Subscriptions[sub]
	if !found {
		t.Fatalf("no subscription %s in %v", sub, st.Subscriptions)
	}
	return s.MsgBacklog
}

func subscriptionRows(e *adminEnv) []adminRow {
	sb := e.c.Subscriptions()
	topic := "persistent://" + e.ns + "/subs"
	var tn utils.TopicName
	var ids []pulsar.MessageID
	return []adminRow{
		row("Subscriptions", "Create", func(t rowT) {
			tn = topicName(t, topic)
			ids = e.produce(t, topic, 5, map[string]string{"p": "1"})
			ok(t, sb.Create(tn, "s1", utils.Earliest))
			ok(t, sb.Create(tn, "s2", utils.Latest))
			wantStatus(t, sb.Create(tn, "s1", utils.Earliest), http.StatusConflict)
			same(t, "backlog from earliest", e.backlog(t, tn, "s1"), int64(5))
			same(t, "backlog from latest", e.backlog(t, tn, "s2"), int64(0))
		}),
		row("Subscriptions", "List", func(t rowT) {
			got, err := sb.List(tn)
			ok(t, err)
			slices.Sort(got)
			same(t, "subscriptions", got, []string{"s1", "s2"})
		}),
		row("Subscriptions", "PeekMessages", func(t rowT) {
			got, err := sb.PeekMessages(tn, "s1", 2)
			ok(t, err)
			if len(got) != 2 || string(got[0].Payload) != "m0" || string(got[1].Payload) != "m1" || got[0].Properties["p"] != "1" {
				t.Fatalf("peeked: %+v", got)
			}
		}),
		row("Subscriptions", "GetMessageByID", func(t rowT) {
			id := ids[2]
			//lint:ignore SA1019 the table calls every method, deprecated ones too
			got, err := sb.GetMessageByID(tn, id.LedgerID(), id.EntryID())
			ok(t, err)
			same(t, "payload", string(got.Payload), "m2")
		}),
		row("Subscriptions", "GetMessagesByID", func(t rowT) {
			id := ids[3]
			got, err := sb.GetMessagesByID(tn, id.LedgerID(), id.EntryID())
			ok(t, err)
			if len(got) != 1 || string(got[0].Payload) != "m3" {
				t.Fatalf("messages: %+v", got)
			}
		}),
		row("Subscriptions", "SkipMessages", func(t rowT) {
			ok(t, sb.SkipMessages(tn, "s1", 2))
			same(t, "backlog after skipping 2", e.backlog(t, tn, "s1"), int64(3))
		}),
		row("Subscriptions", "ResetCursorToMessageID", func(t rowT) {
			id := ids[1]
			ok(t, sb.ResetCursorToMessageID(tn, "s1", utils.MessageID{LedgerID: id.LedgerID(), EntryID: id.EntryID(), PartitionIndex: -1, BatchIndex: -1}))
			same(t, "backlog from m1", e.backlog(t, tn, "s1"), int64(4))
		}),
		row("Subscriptions", "ResetCursorToTimestamp", func(t rowT) {
			ok(t, sb.ResetCursorToTimestamp(tn, "s2", 0))
			same(t, "backlog from time 0", e.backlog(t, tn, "s2"), int64(5))
		}),
		row("Subscriptions", "ClearBacklog", func(t rowT) {
			ok(t, sb.ClearBacklog(tn, "s2"))
			same(t, "backlog after clear", e.backlog(t, tn, "s2"), int64(0))
		}),
		row("Subscriptions", "ExpireMessages", func(t rowT) {
			// Every message is older than 0 s: all expire.
			time.Sleep(1100 * time.Millisecond) // expiry has one-second resolution
			ok(t, sb.ExpireMessages(tn, "s1", 1))
			same(t, "backlog after expiry", e.backlog(t, tn, "s1"), int64(0))
		}),
		row("Subscriptions", "ExpireAllMessages", func(t rowT) {
			ok(t, sb.ResetCursorToTimestamp(tn, "s1", 0))
			ok(t, sb.ResetCursorToTimestamp(tn, "s2", 0))
			ok(t, sb.ExpireAllMessages(tn, 1))
			same(t, "backlog of s1", e.backlog(t, tn, "s1"), int64(0))
			same(t, "backlog of s2", e.backlog(t, tn, "s2"), int64(0))
		}),
		row("Subscriptions", "Delete", func(t rowT) {
			ok(t, sb.Delete(tn, "s2"))
			got, err := sb.List(tn)
			ok(t, err)
			same(t, "left", got, []string{"s1"})
			wantStatus(t, sb.Delete(tn, "no-such-sub"), http.StatusNotFound)
		}),
		row("Subscriptions", "ForceDelete", func(t rowT) {
			cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: e.p.service})
			ok(t, err)
			defer cl.Close()
			c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s1"})
			ok(t, err)
			defer c.Close()
			// With a consumer connected, a plain delete is refused and a
			// forced one goes through. (The client then reconnects and
			// may create s1 anew, as it does against Pulsar, so the list
			// is not checked.)
			wantStatus(t, sb.Delete(tn, "s1"), http.StatusPreconditionFailed)
			ok(t, sb.ForceDelete(tn, "s1"))
		}),
	}
}

// topicPolicy is one value of TopicPolicies: its Set, Get and Remove, and
// a value to set.
type topicPolicy struct {
	name   string
	set    func(ctx context.Context, tn utils.TopicName) error
	get    func(ctx context.Context, tn utils.TopicName, applied bool) (any, error)
	remove func(ctx context.Context, tn utils.TopicName) error
	want   any // what get answers after set (a value, not a pointer)
}

// topicPol builds a topicPolicy from the client's methods for a value v.
func topicPol[T any, G any](name string, set func(context.Context, utils.TopicName, T) error,
	get func(context.Context, utils.TopicName, bool) (G, error), remove func(context.Context, utils.TopicName) error, v T) topicPolicy {
	return topicPolicy{
		name: name,
		set:  func(ctx context.Context, tn utils.TopicName) error { return set(ctx, tn, v) },
		get: func(ctx context.Context, tn utils.TopicName, applied bool) (any, error) {
			g, err := get(ctx, tn, applied)
			return unset(g), err
		},
		remove: remove,
		want:   v,
	}
}

// unset turns a nil pointer, an empty map or slice into nil and
// dereferences other pointers: how a topic-level GET reads "not set".
func unset(v any) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return rv.Elem().Interface()
	case reflect.Map, reflect.Slice:
		if rv.Len() == 0 {
			return nil
		}
	}
	return v
}

func topicPolicyRows(e *adminEnv) []adminRow {
	// TopicPolicies is not in pulsaradmin's Client interface; the
	// client has it (isGlobal false: the local topic policies).
	tp := e.c.(interface {
		TopicPolicies(bool) admin.TopicPolicies
	}).TopicPolicies(false)
	ctx := context.Background()
	bq := utils.BacklogQuota{LimitSize: 1 << 20, LimitTime: -1, Policy: utils.ProducerRequestHold}
	pols := []topicPolicy{
		topicPol("MessageTTL", tp.SetMessageTTL, tp.GetMessageTTL, tp.RemoveMessageTTL, 120),
		topicPol("MaxProducers", tp.SetMaxProducers, tp.GetMaxProducers, tp.RemoveMaxProducers, 7),
		topicPol("MaxConsumers", tp.SetMaxConsumers, tp.GetMaxConsumers, tp.RemoveMaxConsumers, 8),
		topicPol("MaxUnackMessagesPerConsumer", tp.SetMaxUnackMessagesPerConsumer, tp.GetMaxUnackMessagesPerConsumer, tp.RemoveMaxUnackMessagesPerConsumer, 100),
		topicPol("MaxUnackMessagesPerSubscription", tp.SetMaxUnackMessagesPerSubscription, tp.GetMaxUnackMessagesPerSubscription, tp.RemoveMaxUnackMessagesPerSubscription, 200),
		topicPol("Persistence", tp.SetPersistence, tp.GetPersistence, tp.RemovePersistence,
			utils.PersistenceData{BookkeeperEnsemble: 1, BookkeeperWriteQuorum: 1, BookkeeperAckQuorum: 1, ManagedLedgerMaxMarkDeleteRate: 2}),
		topicPol("DelayedDelivery", tp.SetDelayedDelivery, tp.GetDelayedDelivery, tp.RemoveDelayedDelivery,
			utils.DelayedDeliveryData{TickTime: 2000, Active: true, MaxDelayInMillis: 60000}),
		topicPol("DispatchRate", tp.SetDispatchRate, tp.GetDispatchRate, tp.RemoveDispatchRate,
			utils.DispatchRateData{DispatchThrottlingRateInMsg: 100, DispatchThrottlingRateInByte: 1000, RatePeriodInSecond: 1}),
		topicPol("PublishRate", tp.SetPublishRate, tp.GetPublishRate, tp.RemovePublishRate,
			utils.PublishRateData{PublishThrottlingRateInMsg: 50, PublishThrottlingRateInByte: 5000}),
		topicPol("DeduplicationStatus", tp.SetDeduplicationStatus, tp.GetDeduplicationStatus, tp.RemoveDeduplicationStatus, true),
		topicPol("Retention", tp.SetRetention, tp.GetRetention, tp.RemoveRetention,
			utils.RetentionPolicies{RetentionTimeInMinutes: 60, RetentionSizeInMB: 10}),
		topicPol("CompactionThreshold", tp.SetCompactionThreshold, tp.GetCompactionThreshold, tp.RemoveCompactionThreshold, int64(1<<20)),
		{
			name: "BacklogQuota",
			set: func(ctx context.Context, tn utils.TopicName) error {
				return tp.SetBacklogQuota(ctx, tn, bq, utils.DestinationStorage)
			},
			get: func(ctx context.Context, tn utils.TopicName, applied bool) (any, error) {
				m, err := tp.GetBacklogQuotaMap(ctx, tn, applied)
				return unset(m), err
			},
			remove: func(ctx context.Context, tn utils.TopicName) error {
				return tp.RemoveBacklogQuota(ctx, tn, utils.DestinationStorage)
			},
			want: map[utils.BacklogQuotaType]utils.BacklogQuota{utils.DestinationStorage: bq},
		},
		topicPol("InactiveTopicPolicies", tp.SetInactiveTopicPolicies, tp.GetInactiveTopicPolicies, tp.RemoveInactiveTopicPolicies,
			utils.InactiveTopicPolicies{InactiveTopicDeleteMode: ptr(utils.DeleteWhenNoSubscriptions), MaxInactiveDurationSeconds: 600, DeleteWhileInactive: true}),
		topicPol("ReplicationClusters", tp.SetReplicationClusters, tp.GetReplicationClusters, tp.RemoveReplicationClusters, []string{e.cluster}),
		topicPol("SubscribeRate", tp.SetSubscribeRate, tp.GetSubscribeRate, tp.RemoveSubscribeRate,
			utils.SubscribeRate{SubscribeThrottlingRatePerConsumer: 5, RatePeriodInSecond: 30}),
		topicPol("SubscriptionDispatchRate", tp.SetSubscriptionDispatchRate, tp.GetSubscriptionDispatchRate, tp.RemoveSubscriptionDispatchRate,
			utils.DispatchRateData{DispatchThrottlingRateInMsg: 10, DispatchThrottlingRateInByte: 100, RatePeriodInSecond: 1}),
		topicPol("MaxConsumersPerSubscription", tp.SetMaxConsumersPerSubscription, tp.GetMaxConsumersPerSubscription, tp.RemoveMaxConsumersPerSubscription, 3),
		topicPol("MaxMessageSize", tp.SetMaxMessageSize, tp.GetMaxMessageSize, tp.RemoveMaxMessageSize, 4096),
		topicPol("MaxSubscriptionsPerTopic", tp.SetMaxSubscriptionsPerTopic, tp.GetMaxSubscriptionsPerTopic, tp.RemoveMaxSubscriptionsPerTopic, 9),
		topicPol("SchemaValidationEnforced", tp.SetSchemaValidationEnforced, tp.GetSchemaValidationEnforced, tp.RemoveSchemaValidationEnforced, true),
		topicPol("DeduplicationSnapshotInterval", tp.SetDeduplicationSnapshotInterval, tp.GetDeduplicationSnapshotInterval, tp.RemoveDeduplicationSnapshotInterval, 500),
		topicPol("ReplicatorDispatchRate", tp.SetReplicatorDispatchRate, tp.GetReplicatorDispatchRate, tp.RemoveReplicatorDispatchRate,
			utils.DispatchRateData{DispatchThrottlingRateInMsg: 20, DispatchThrottlingRateInByte: 200, RatePeriodInSecond: 1}),
		topicPol("OffloadPolicies", tp.SetOffloadPolicies, tp.GetOffloadPolicies, tp.RemoveOffloadPolicies,
			utils.OffloadPolicies{ManagedLedgerOffloadThresholdInBytes: 1 << 30, ManagedLedgerOffloadDeletionLagInMillis: 1000}),
		topicPol("AutoSubscriptionCreation", tp.SetAutoSubscriptionCreation, tp.GetAutoSubscriptionCreation, tp.RemoveAutoSubscriptionCreation,
			utils.AutoSubscriptionCreationOverride{AllowAutoSubscriptionCreation: false}),
		topicPol("SchemaCompatibilityStrategy", tp.SetSchemaCompatibilityStrategy, tp.GetSchemaCompatibilityStrategy, tp.RemoveSchemaCompatibilityStrategy,
			utils.SchemaCompatibilityStrategyForward),
	}
	topic := "persistent://" + e.ns + "/policies"
	var rows []adminRow
	for _, p := range pols {
		var fallback any // the applied value before the topic sets one
		getName := "Get" + p.name
		if p.name == "BacklogQuota" {
			getName = "GetBacklogQuotaMap"
		}
		rows = append(rows,
			row("TopicPolicies", "Set"+p.name, func(t rowT) {
				tn := topicName(t, topic)
				if p.name == "MessageTTL" {
					ok(t, e.c.Topics().Create(tn, 0))
				}
				var err error
				fallback, err = p.get(ctx, tn, true)
				ok(t, err)
				ok(t, p.set(ctx, tn))
			}),
			row("TopicPolicies", getName, func(t rowT) {
				tn := topicName(t, topic)
				got, err := p.get(ctx, tn, false)
				ok(t, err)
				same(t, "topic-level value", got, p.want)
				got, err = p.get(ctx, tn, true)
				ok(t, err)
				same(t, "applied value", got, p.want)
			}),
			row("TopicPolicies", "Remove"+p.name, func(t rowT) {
				tn := topicName(t, topic)
				ok(t, p.remove(ctx, tn))
				got, err := p.get(ctx, tn, false)
				ok(t, err)
				same(t, "topic-level value after remove", got, nil)
				got, err = p.get(ctx, tn, true)
				ok(t, err)
				same(t, "applied value after remove (the namespace's or broker's)", got, fallback)
			}),
		)
	}
	return rows
}

func ptr[T any](v T) *T { return &v }
