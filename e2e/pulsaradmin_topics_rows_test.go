package e2e

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// Rows of TestPulsarAdminTable for Topics: lifecycle, metadata, stats and
// the topic-level policies through the Topics interface (the same
// endpoints as TopicPolicies, through its own methods).

func topicsRows(e *adminEnv) []adminRow {
	tp := e.c.Topics()
	base := "persistent://" + e.ns + "/"
	r := func(m string, run func(t rowT)) adminRow { return row("Topics", m, run) }
	tn := func(t rowT, local string) utils.TopicName { return topicName(t, base+local) }
	nn := func(t rowT) utils.NameSpaceName {
		x, err := utils.GetNamespaceName(e.ns)
		ok(t, err)
		return *x
	}
	var firstID utils.MessageID // of the first message of "data"
	var sentAt time.Time
	rows := []adminRow{
		r("Create", func(t rowT) {
			ok(t, tp.Create(tn(t, "plain"), 0))
			ok(t, tp.Create(tn(t, "parted"), 2))
			wantStatus(t, tp.Create(tn(t, "plain"), 0), http.StatusConflict)
		}),
		r("GetMetadata", func(t rowT) {
			md, err := tp.GetMetadata(tn(t, "parted"))
			ok(t, err)
			same(t, "partitions", md.Partitions, 2)
		}),
		r("Update", func(t rowT) {
			ok(t, tp.Update(tn(t, "parted"), 3))
			md, err := tp.GetMetadata(tn(t, "parted"))
			ok(t, err)
			same(t, "partitions after the update", md.Partitions, 3)
		}),
		r("List", func(t rowT) {
			parted, plain, err := tp.List(nn(t))
			ok(t, err)
			if !slices.Contains(parted, base+"parted") || !slices.Contains(plain, base+"plain") {
				t.Fatalf("partitioned %v, non-partitioned %v", parted, plain)
			}
		}),
		r("CreateWithProperties", func(t rowT) {
			ok(t, tp.CreateWithProperties(tn(t, "props"), 0, map[string]string{"a": "1"}))
		}),
		r("GetProperties", func(t rowT) {
			got, err := tp.GetProperties(tn(t, "props"))
			ok(t, err)
			same(t, "properties", got, map[string]string{"a": "1"})
		}),
		r("UpdateProperties", func(t rowT) {
			ok(t, tp.UpdateProperties(tn(t, "props"), map[string]string{"b": "2"}))
			got, err := tp.GetProperties(tn(t, "props"))
			ok(t, err)
			same(t, "properties", got, map[string]string{"a": "1", "b": "2"})
		}),
		r("RemoveProperty", func(t rowT) {
			ok(t, tp.RemoveProperty(tn(t, "props"), "a"))
			got, err := tp.GetProperties(tn(t, "props"))
			ok(t, err)
			same(t, "properties", got, map[string]string{"b": "2"})
		}),
		r("Lookup", func(t rowT) {
			got, err := tp.Lookup(tn(t, "plain"))
			ok(t, err)
			same(t, "broker URL", got.BrokerURL, e.p.service)
		}),
		r("GetBundleRange", func(t rowT) {
			got, err := tp.GetBundleRange(tn(t, "plain"))
			ok(t, err)
			if !strings.HasPrefix(got, "0x") || !strings.Contains(got, "_0x") {
				t.Fatalf("bundle range %q", got)
			}
		}),
		r("GetLastMessageID", func(t rowT) {
			sentAt = time.Now()
			ids := e.produce(t, base+"data", 3, nil)
			firstID = utils.MessageID{LedgerID: ids[0].LedgerID(), EntryID: ids[0].EntryID(), PartitionIndex: -1, BatchIndex: -1}
			got, err := tp.GetLastMessageID(tn(t, "data"))
			ok(t, err)
			if got.LedgerID != ids[2].LedgerID() || got.EntryID != ids[2].EntryID() {
				t.Fatalf("last message id %+v, sent %v", got, ids[2])
			}
		}),
		r("GetMessageID", func(t rowT) {
			got, err := tp.GetMessageID(tn(t, "data"), sentAt.Add(-time.Second).UnixMilli())
			ok(t, err)
			if got.LedgerID != firstID.LedgerID || got.EntryID != firstID.EntryID || got.PartitionIndex != -1 {
				t.Fatalf("message id by time %+v, want the first %+v", got, firstID)
			}
			// Past the last message: the position after it.
			got, err = tp.GetMessageID(tn(t, "data"), time.Now().Add(time.Hour).UnixMilli())
			ok(t, err)
			if got.LedgerID != firstID.LedgerID || got.EntryID != firstID.EntryID+3 {
				t.Fatalf("message id past the end %+v, want %d:%d", got, firstID.LedgerID, firstID.EntryID+3)
			}
		}),
		r("GetStats", func(t rowT) {
			st, err := tp.GetStats(tn(t, "data"))
			ok(t, err)
			same(t, "msgInCounter", st.MsgCounterIn, int64(3))
		}),
		r("GetStatsWithOption", func(t rowT) {
			st, err := tp.GetStatsWithOption(tn(t, "data"), utils.GetStatsOptions{GetPreciseBacklog: true, ExcludePublishers: true})
			ok(t, err)
			same(t, "msgInCounter", st.MsgCounterIn, int64(3))
		}),
		r("GetInternalStats", func(t rowT) {
			st, err := tp.GetInternalStats(tn(t, "data"))
			ok(t, err)
			same(t, "entries added", st.EntriesAddedCounter, int64(3))
		}),
		r("GetInternalInfo", func(t rowT) {
			info, err := tp.GetInternalInfo(tn(t, "data"))
			ok(t, err)
			// One ledger, open: its entries are recorded when it closes.
			if len(info.Ledgers) != 1 || info.Ledgers[0].LedgerID != firstID.LedgerID || info.Ledgers[0].Entries != 0 {
				t.Fatalf("internal info: %+v, want the open ledger %d", info, firstID.LedgerID)
			}
		}),
		r("GetPartitionedStats", func(t rowT) {
			st, err := tp.GetPartitionedStats(tn(t, "parted"), true)
			ok(t, err)
			same(t, "partitions", st.Metadata.Partitions, 3)
			same(t, "per-partition stats", len(st.Partitions), 3)
		}),
		r("GetPartitionedStatsWithOption", func(t rowT) {
			st, err := tp.GetPartitionedStatsWithOption(tn(t, "parted"), false, utils.GetStatsOptions{GetPreciseBacklog: true})
			ok(t, err)
			same(t, "partitions", st.Metadata.Partitions, 3)
		}),
		r("GrantPermission", func(t rowT) {
			ok(t, tp.GrantPermission(tn(t, "plain"), "app", []utils.AuthAction{"produce"}))
		}),
		r("GetPermissions", func(t rowT) {
			got, err := tp.GetPermissions(tn(t, "plain"))
			ok(t, err)
			same(t, "actions of app", got["app"], []utils.AuthAction{"produce"})
		}),
		r("RevokePermission", func(t rowT) {
			ok(t, tp.RevokePermission(tn(t, "plain"), "app"))
			got, err := tp.GetPermissions(tn(t, "plain"))
			ok(t, err)
			if _, has := got["app"]; has {
				t.Fatalf("app still granted: %v", got)
			}
		}),
		r("Unload", func(t rowT) {
			ok(t, tp.Unload(tn(t, "data")))
			// The unloaded topic loads again on use, with its data.
			st, err := tp.GetInternalStats(tn(t, "data"))
			ok(t, err)
			same(t, "entries after reload", st.NumberOfEntries, int64(3))
		}),
		r("Compact", func(t rowT) { ok(t, tp.Compact(tn(t, "data"))) }),
		r("CompactStatus", func(t rowT) {
			deadline := time.Now().Add(10 * time.Second)
			for {
				st, err := tp.CompactStatus(tn(t, "data"))
				ok(t, err)
				if st.Status == utils.SUCCESS {
					return
				}
				if st.Status == utils.ERROR || time.Now().After(deadline) {
					t.Fatalf("compaction status %+v", st)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}),
		r("Offload", func(t rowT) {
			// The standalone has no tiered storage configured: Pulsar
			// refuses an offload then.
			err := tp.Offload(tn(t, "data"), utils.Latest)
			if err == nil {
				t.Fatal("offload without tiered storage accepted")
			}
		}),
		r("OffloadStatus", func(t rowT) {
			st, err := tp.OffloadStatus(tn(t, "data"))
			ok(t, err)
			same(t, "offload status", st.Status, utils.NOTRUN)
		}),
		r("Terminate", func(t rowT) {
			id, err := tp.Terminate(tn(t, "data"))
			ok(t, err)
			last, err := tp.GetLastMessageID(tn(t, "data"))
			ok(t, err)
			if id.LedgerID != last.LedgerID || id.EntryID != last.EntryID {
				t.Fatalf("terminated at %+v, last message %+v", id, last)
			}
		}),
		r("GetSchemaCompatibilityStrategyApplied", func(t rowT) {
			got, err := tp.GetSchemaCompatibilityStrategyApplied(tn(t, "pol"), true)
			ok(t, err)
			if got == "" {
				t.Fatal("no strategy applied")
			}
		}),
	}
	// The topic-level policies through Topics, on "pol": Set, then Get
	// answers the value, then Remove brings back what Get answered
	// before the Set.
	bq := utils.BacklogQuota{LimitSize: 2 << 20, LimitTime: -1, Policy: utils.ProducerRequestHold}
	type triple struct {
		name   string
		getM   string
		set    func(utils.TopicName) error
		get    func(utils.TopicName) (any, error)
		remove func(utils.TopicName) error
		want   any
	}
	ints := func(name string, set func(utils.TopicName, int) error, get func(utils.TopicName) (int, error), remove func(utils.TopicName) error, v int) triple {
		return triple{name: name, set: func(x utils.TopicName) error { return set(x, v) },
			get: func(x utils.TopicName) (any, error) { return get(x) }, remove: remove, want: v}
	}
	ptrs := func(name string, get func(utils.TopicName) (any, error), set func(utils.TopicName) error, remove func(utils.TopicName) error, want any) triple {
		return triple{name: name, set: set, get: get, remove: remove, want: want}
	}
	dr := utils.DispatchRateData{DispatchThrottlingRateInMsg: 11, DispatchThrottlingRateInByte: 111, RatePeriodInSecond: 1}
	pers := utils.PersistenceData{BookkeeperEnsemble: 1, BookkeeperWriteQuorum: 1, BookkeeperAckQuorum: 1}
	dd := utils.DelayedDeliveryData{TickTime: 1000, Active: true}
	pub := utils.PublishRateData{PublishThrottlingRateInMsg: 30, PublishThrottlingRateInByte: 3000}
	ret := utils.RetentionPolicies{RetentionTimeInMinutes: 5, RetentionSizeInMB: 6}
	itp := utils.InactiveTopicPolicies{InactiveTopicDeleteMode: ptr(utils.DeleteWhenNoSubscriptions), MaxInactiveDurationSeconds: 60, DeleteWhileInactive: true}
	sr := utils.SubscribeRate{SubscribeThrottlingRatePerConsumer: 2, RatePeriodInSecond: 30}
	off := utils.OffloadPolicies{ManagedLedgerOffloadThresholdInBytes: 1 << 30}
	asc := utils.AutoSubscriptionCreationOverride{AllowAutoSubscriptionCreation: true}
	triples := []triple{
		ints("MessageTTL", tp.SetMessageTTL, tp.GetMessageTTL, tp.RemoveMessageTTL, 33),
		ints("MaxProducers", tp.SetMaxProducers, tp.GetMaxProducers, tp.RemoveMaxProducers, 3),
		ints("MaxConsumers", tp.SetMaxConsumers, tp.GetMaxConsumers, tp.RemoveMaxConsumers, 4),
		ints("MaxUnackMessagesPerConsumer", tp.SetMaxUnackMessagesPerConsumer, tp.GetMaxUnackMessagesPerConsumer, tp.RemoveMaxUnackMessagesPerConsumer, 40),
		ints("MaxUnackMessagesPerSubscription", tp.SetMaxUnackMessagesPerSubscription, tp.GetMaxUnackMessagesPerSubscription, tp.RemoveMaxUnackMessagesPerSubscription, 50),
		ints("MaxConsumersPerSubscription", tp.SetMaxConsumersPerSubscription, tp.GetMaxConsumersPerSubscription, tp.RemoveMaxConsumersPerSubscription, 2),
		ints("MaxMessageSize", tp.SetMaxMessageSize, tp.GetMaxMessageSize, tp.RemoveMaxMessageSize, 2048),
		ints("MaxSubscriptionsPerTopic", tp.SetMaxSubscriptionsPerTopic, tp.GetMaxSubscriptionsPerTopic, tp.RemoveMaxSubscriptionsPerTopic, 5),
		ints("DeduplicationSnapshotInterval", tp.SetDeduplicationSnapshotInterval, tp.GetDeduplicationSnapshotInterval, tp.RemoveDeduplicationSnapshotInterval, 100),
		ptrs("Persistence", func(x utils.TopicName) (any, error) { v, err := tp.GetPersistence(x); return deref(v), err },
			func(x utils.TopicName) error { return tp.SetPersistence(x, pers) }, tp.RemovePersistence, pers),
		ptrs("DelayedDelivery", func(x utils.TopicName) (any, error) { v, err := tp.GetDelayedDelivery(x); return deref(v), err },
			func(x utils.TopicName) error { return tp.SetDelayedDelivery(x, dd) }, tp.RemoveDelayedDelivery, dd),
		ptrs("DispatchRate", func(x utils.TopicName) (any, error) { v, err := tp.GetDispatchRate(x); return deref(v), err },
			func(x utils.TopicName) error { return tp.SetDispatchRate(x, dr) }, tp.RemoveDispatchRate, dr),
		ptrs("PublishRate", func(x utils.TopicName) (any, error) { v, err := tp.GetPublishRate(x); return deref(v), err },
			func(x utils.TopicName) error { return tp.SetPublishRate(x, pub) }, tp.RemovePublishRate, pub),
		ptrs("DeduplicationStatus", func(x utils.TopicName) (any, error) { return tp.GetDeduplicationStatus(x) },
			func(x utils.TopicName) error { return tp.SetDeduplicationStatus(x, true) }, tp.RemoveDeduplicationStatus, true),
		ptrs("Retention", func(x utils.TopicName) (any, error) { v, err := tp.GetRetention(x, false); return deref(v), err },
			func(x utils.TopicName) error { return tp.SetRetention(x, ret) }, tp.RemoveRetention, ret),
		ptrs("CompactionThreshold", func(x utils.TopicName) (any, error) { return tp.GetCompactionThreshold(x, false) },
			func(x utils.TopicName) error { return tp.SetCompactionThreshold(x, 4096) }, tp.RemoveCompactionThreshold, int64(4096)),
		{name: "BacklogQuota", getM: "GetBacklogQuotaMap",
			get: func(x utils.TopicName) (any, error) {
				m, err := tp.GetBacklogQuotaMap(x, false)
				return unset(m), err
			},
			set:    func(x utils.TopicName) error { return tp.SetBacklogQuota(x, bq, utils.DestinationStorage) },
			remove: func(x utils.TopicName) error { return tp.RemoveBacklogQuota(x, utils.DestinationStorage) },
			want:   map[utils.BacklogQuotaType]utils.BacklogQuota{utils.DestinationStorage: bq}},
		ptrs("InactiveTopicPolicies", func(x utils.TopicName) (any, error) { return tp.GetInactiveTopicPolicies(x, false) },
			func(x utils.TopicName) error { return tp.SetInactiveTopicPolicies(x, itp) }, tp.RemoveInactiveTopicPolicies, itp),
		ptrs("ReplicationClusters", func(x utils.TopicName) (any, error) { v, err := tp.GetReplicationClusters(x); return unset(v), err },
			func(x utils.TopicName) error { return tp.SetReplicationClusters(x, []string{e.cluster}) }, tp.RemoveReplicationClusters, []string{e.cluster}),
		ptrs("SubscribeRate", func(x utils.TopicName) (any, error) { v, err := tp.GetSubscribeRate(x); return deref(v), err },
			func(x utils.TopicName) error { return tp.SetSubscribeRate(x, sr) }, tp.RemoveSubscribeRate, sr),
		ptrs("SubscriptionDispatchRate", func(x utils.TopicName) (any, error) {
			v, err := tp.GetSubscriptionDispatchRate(x)
			return deref(v), err
		},
			func(x utils.TopicName) error { return tp.SetSubscriptionDispatchRate(x, dr) }, tp.RemoveSubscriptionDispatchRate, dr),
		ptrs("SchemaValidationEnforced", func(x utils.TopicName) (any, error) { return tp.GetSchemaValidationEnforced(x) },
			func(x utils.TopicName) error { return tp.SetSchemaValidationEnforced(x, true) }, tp.RemoveSchemaValidationEnforced, true),
		ptrs("ReplicatorDispatchRate", func(x utils.TopicName) (any, error) { v, err := tp.GetReplicatorDispatchRate(x); return deref(v), err },
			func(x utils.TopicName) error { return tp.SetReplicatorDispatchRate(x, dr) }, tp.RemoveReplicatorDispatchRate, dr),
		ptrs("OffloadPolicies", func(x utils.TopicName) (any, error) { v, err := tp.GetOffloadPolicies(x); return deref(v), err },
			func(x utils.TopicName) error { return tp.SetOffloadPolicies(x, off) }, tp.RemoveOffloadPolicies, off),
		ptrs("AutoSubscriptionCreation", func(x utils.TopicName) (any, error) {
			v, err := tp.GetAutoSubscriptionCreation(x)
			return deref(v), err
		},
			func(x utils.TopicName) error { return tp.SetAutoSubscriptionCreation(x, asc) }, tp.RemoveAutoSubscriptionCreation, asc),
		ptrs("SchemaCompatibilityStrategy", func(x utils.TopicName) (any, error) { return tp.GetSchemaCompatibilityStrategy(x) },
			func(x utils.TopicName) error {
				return tp.SetSchemaCompatibilityStrategy(x, utils.SchemaCompatibilityStrategyBackwardTransitive)
			}, tp.RemoveSchemaCompatibilityStrategy, utils.SchemaCompatibilityStrategyBackwardTransitive),
	}
	for i, p := range triples {
		var before any
		getM := p.getM
		if getM == "" {
			getM = "Get" + p.name
		}
		rows = append(rows,
			r("Set"+p.name, func(t rowT) {
				if i == 0 {
					ok(t, tp.Create(tn(t, "pol"), 0))
				}
				var err error
				before, err = p.get(tn(t, "pol"))
				ok(t, err)
				ok(t, p.set(tn(t, "pol")))
			}),
			r(getM, func(t rowT) {
				got, err := p.get(tn(t, "pol"))
				ok(t, err)
				same(t, getM, got, p.want)
			}),
			r("Remove"+p.name, func(t rowT) {
				ok(t, p.remove(tn(t, "pol")))
				got, err := p.get(tn(t, "pol"))
				ok(t, err)
				same(t, "after Remove"+p.name+" (the answer before Set)", got, before)
			}),
		)
	}
	rows = append(rows, r("Delete", func(t rowT) {
		ok(t, tp.Delete(tn(t, "plain"), false, true))
		ok(t, tp.Delete(tn(t, "parted"), true, false))
		parted, plain, err := tp.List(nn(t))
		ok(t, err)
		if slices.Contains(parted, base+"parted") || slices.Contains(plain, base+"plain") {
			t.Fatalf("deleted topics listed: %v %v", parted, plain)
		}
		wantStatus(t, tp.Delete(tn(t, "no-such-topic"), false, true), http.StatusNotFound)
	}))
	return rows
}
