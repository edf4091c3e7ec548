package e2e

import (
	"fmt"
	"hash/crc32"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// Rows of TestPulsarAdminTable for Namespaces. They work on tbl/nsp
// (created by CreateNamespace) and namespaces of their own.

func namespaceRows(e *adminEnv) []adminRow {
	n := e.c.Namespaces()
	const ns = "tbl/nsp"
	nn := func(t rowT) utils.NameSpaceName {
		x, err := utils.GetNamespaceName(ns)
		ok(t, err)
		return *x
	}
	full := "0x00000000_0xffffffff"
	// boundaries reads a namespace's bundle boundaries in force.
	boundaries := func(t rowT, ns string) []string {
		t.Helper()
		p, err := n.GetPolicies(ns)
		ok(t, err)
		if p.Bundles == nil {
			t.Fatalf("%s: no bundles in the policies", ns)
		}
		return p.Bundles.Boundaries
	}
	r := func(m string, run func(t rowT)) adminRow { return row("Namespaces", m, run) }
	// setGet is a Set row and a Get row: what Get answers after Set.
	setGet := func(setM, getM string, set func(t rowT) error, get func(t rowT) (any, error), want any) []adminRow {
		return []adminRow{
			r(setM, func(t rowT) { ok(t, set(t)) }),
			r(getM, func(t rowT) {
				got, err := get(t)
				ok(t, err)
				same(t, getM, got, want)
			}),
		}
	}
	// removed is a Remove row: after it, Get answers unset.
	removed := func(m string, remove func(t rowT) error, get func(t rowT) (any, error), unset any) adminRow {
		return r(m, func(t rowT) {
			ok(t, remove(t))
			got, err := get(t)
			ok(t, err)
			same(t, "after "+m, got, unset)
		})
	}
	// An unset value: pulsaradmin starts an int at -1 and keeps it,
	// and answers a nil pointer, when Pulsar answers 204 No Content
	// (maxTopicsPerNamespace answers 0).
	var rows []adminRow
	add := func(rs ...adminRow) { rows = append(rows, rs...) }
	add(
		r("CreateNamespace", func(t rowT) {
			ok(t, n.CreateNamespace(ns))
			wantStatus(t, n.CreateNamespace(ns), http.StatusConflict)
			wantStatus(t, n.CreateNamespace("no-such-tenant/x"), http.StatusNotFound)
		}),
		r("GetNamespaces", func(t rowT) {
			got, err := n.GetNamespaces("tbl")
			ok(t, err)
			slices.Sort(got)
			same(t, "namespaces of tbl", got, []string{"tbl/ns", ns})
		}),
		r("CreateNsWithNumBundles", func(t rowT) {
			ok(t, n.CreateNsWithNumBundles("tbl/nb4", 4))
			p, err := n.GetPolicies("tbl/nb4")
			ok(t, err)
			if p.Bundles == nil || p.Bundles.NumBundles != 4 || len(p.Bundles.Boundaries) != 5 {
				t.Fatalf("bundles: %+v", p.Bundles)
			}
		}),
		r("CreateNsWithPolices", func(t rowT) {
			ttl := 77
			ok(t, n.CreateNsWithPolices("tbl/withpol", utils.Policies{MessageTTLInSeconds: &ttl, Bundles: &utils.BundlesData{NumBundles: 1}}))
			got, err := n.GetNamespaceMessageTTL("tbl/withpol")
			ok(t, err)
			same(t, "ttl given at creation", got, 77)
		}),
		r("CreateNsWithBundlesData", func(t rowT) {
			bd := utils.NewBundlesData([]string{"0x00000000", "0x80000000", "0xffffffff"})
			ok(t, n.CreateNsWithBundlesData("tbl/nbd", &bd))
			p, err := n.GetPolicies("tbl/nbd")
			ok(t, err)
			if p.Bundles == nil || !slices.Equal(p.Bundles.Boundaries, bd.Boundaries) {
				t.Fatalf("bundles: %+v", p.Bundles)
			}
		}),
		r("GetPolicies", func(t rowT) {
			p, err := n.GetPolicies(ns)
			ok(t, err)
			if p.Bundles == nil || p.Bundles.NumBundles < 1 {
				t.Fatalf("policies: %+v", p)
			}
			_, err = n.GetPolicies("tbl/no-such-ns")
			wantStatus(t, err, http.StatusNotFound)
		}),
		r("GetTopics", func(t rowT) {
			ok(t, e.c.Topics().Create(topicName(t, "persistent://"+ns+"/listed"), 0))
			got, err := n.GetTopics(ns)
			ok(t, err)
			same(t, "topics", got, []string{"persistent://" + ns + "/listed"})
		}),
	)
	add(setGet("SetNamespaceMessageTTL", "GetNamespaceMessageTTL",
		func(t rowT) error { return n.SetNamespaceMessageTTL(ns, 90) },
		func(t rowT) (any, error) { return n.GetNamespaceMessageTTL(ns) }, 90)...)
	add(removed("RemoveNamespaceMessageTTL", func(t rowT) error { return n.RemoveNamespaceMessageTTL(ns) },
		func(t rowT) (any, error) { return n.GetNamespaceMessageTTL(ns) }, -1))
	ret := utils.NewRetentionPolicies(30, 20)
	add(setGet("SetRetention", "GetRetention",
		func(t rowT) error { return n.SetRetention(ns, ret) },
		func(t rowT) (any, error) { p, err := n.GetRetention(ns); return deref(p), err }, ret)...)
	add(removed("RemoveRetention", func(t rowT) error { return n.RemoveRetention(ns) },
		func(t rowT) (any, error) { p, err := n.GetRetention(ns); return deref(p), err }, nil))
	bq := utils.NewBacklogQuota(1<<20, -1, utils.ProducerRequestHold)
	add(setGet("SetBacklogQuota", "GetBacklogQuotaMap",
		func(t rowT) error { return n.SetBacklogQuota(ns, bq, utils.DestinationStorage) },
		func(t rowT) (any, error) {
			m, err := n.GetBacklogQuotaMap(ns)
			return m[utils.DestinationStorage], err
		}, bq)...)
	add(removed("RemoveBacklogQuota", func(t rowT) error { return n.RemoveBacklogQuota(ns) },
		func(t rowT) (any, error) { m, err := n.GetBacklogQuotaMap(ns); return len(m), err }, 0))
	parts := 3
	tac := utils.TopicAutoCreationConfig{Allow: true, Type: utils.Partitioned, Partitions: &parts}
	add(setGet("SetTopicAutoCreation", "GetTopicAutoCreation",
		func(t rowT) error { return n.SetTopicAutoCreation(nn(t), tac) },
		func(t rowT) (any, error) { c, err := n.GetTopicAutoCreation(nn(t)); return deref(c), err }, tac)...)
	add(removed("RemoveTopicAutoCreation", func(t rowT) error { return n.RemoveTopicAutoCreation(nn(t)) },
		func(t rowT) (any, error) { c, err := n.GetTopicAutoCreation(nn(t)); return deref(c), err }, nil))
	add(setGet("SetSchemaValidationEnforced", "GetSchemaValidationEnforced",
		func(t rowT) error { return n.SetSchemaValidationEnforced(nn(t), true) },
		func(t rowT) (any, error) { return n.GetSchemaValidationEnforced(nn(t)) }, true)...)
	add(setGet("SetSchemaAutoUpdateCompatibilityStrategy", "GetSchemaAutoUpdateCompatibilityStrategy",
		func(t rowT) error { return n.SetSchemaAutoUpdateCompatibilityStrategy(nn(t), utils.BackwardTransitive) },
		func(t rowT) (any, error) { return n.GetSchemaAutoUpdateCompatibilityStrategy(nn(t)) }, utils.BackwardTransitive)...)
	add(setGet("SetSchemaCompatibilityStrategy", "GetSchemaCompatibilityStrategy",
		func(t rowT) error {
			return n.SetSchemaCompatibilityStrategy(nn(t), utils.SchemaCompatibilityStrategyForward)
		},
		func(t rowT) (any, error) { return n.GetSchemaCompatibilityStrategy(nn(t)) }, utils.SchemaCompatibilityStrategyForward)...)
	add(setGet("SetOffloadDeleteLag", "GetOffloadDeleteLag",
		func(t rowT) error { return n.SetOffloadDeleteLag(nn(t), 5000) },
		func(t rowT) (any, error) { return n.GetOffloadDeleteLag(nn(t)) }, int64(5000))...)
	add(removed("ClearOffloadDeleteLag", func(t rowT) error { return n.ClearOffloadDeleteLag(nn(t)) },
		func(t rowT) (any, error) { return n.GetOffloadDeleteLag(nn(t)) }, int64(-1)))
	add(setGet("SetOffloadThreshold", "GetOffloadThreshold",
		func(t rowT) error { return n.SetOffloadThreshold(nn(t), 1<<30) },
		func(t rowT) (any, error) { return n.GetOffloadThreshold(nn(t)) }, int64(1<<30))...)
	add(setGet("SetOffloadThresholdInSeconds", "GetOffloadThresholdInSeconds",
		func(t rowT) error { return n.SetOffloadThresholdInSeconds(nn(t), 3600) },
		func(t rowT) (any, error) { return n.GetOffloadThresholdInSeconds(nn(t)) }, int64(3600))...)
	add(setGet("SetCompactionThreshold", "GetCompactionThreshold",
		func(t rowT) error { return n.SetCompactionThreshold(nn(t), 1<<20) },
		func(t rowT) (any, error) { return n.GetCompactionThreshold(nn(t)) }, int64(1<<20))...)
	for _, lim := range []struct {
		name     string
		set      func(utils.NameSpaceName, int) error
		get      func(utils.NameSpaceName) (int, error)
		remove   func(utils.NameSpaceName) error
		val, gon int
	}{
		{"MaxConsumersPerSubscription", n.SetMaxConsumersPerSubscription, n.GetMaxConsumersPerSubscription, n.RemoveMaxConsumersPerSubscription, 4, -1},
		{"MaxConsumersPerTopic", n.SetMaxConsumersPerTopic, n.GetMaxConsumersPerTopic, n.RemoveMaxConsumersPerTopic, 5, -1},
		{"MaxProducersPerTopic", n.SetMaxProducersPerTopic, n.GetMaxProducersPerTopic, n.RemoveMaxProducersPerTopic, 6, -1},
		{"MaxTopicsPerNamespace", n.SetMaxTopicsPerNamespace, n.GetMaxTopicsPerNamespace, n.RemoveMaxTopicsPerNamespace, 50, 0},
	} {
		add(setGet("Set"+lim.name, "Get"+lim.name,
			func(t rowT) error { return lim.set(nn(t), lim.val) },
			func(t rowT) (any, error) { return lim.get(nn(t)) }, lim.val)...)
		add(removed("Remove"+lim.name, func(t rowT) error { return lim.remove(nn(t)) },
			func(t rowT) (any, error) { return lim.get(nn(t)) }, lim.gon))
	}
	add(setGet("SetNamespaceReplicationClusters", "GetNamespaceReplicationClusters",
		func(t rowT) error { return n.SetNamespaceReplicationClusters(ns, []string{e.cluster}) },
		func(t rowT) (any, error) { return n.GetNamespaceReplicationClusters(ns) }, []string{e.cluster})...)
	add(setGet("SetNamespaceAntiAffinityGroup", "GetNamespaceAntiAffinityGroup",
		func(t rowT) error { return n.SetNamespaceAntiAffinityGroup(ns, "grp") },
		func(t rowT) (any, error) { return n.GetNamespaceAntiAffinityGroup(ns) }, "grp")...)
	add(
		r("GetAntiAffinityNamespaces", func(t rowT) {
			got, err := n.GetAntiAffinityNamespaces("tbl", e.cluster, "grp")
			ok(t, err)
			same(t, "namespaces of the group", got, []string{ns})
		}),
		removed("DeleteNamespaceAntiAffinityGroup", func(t rowT) error { return n.DeleteNamespaceAntiAffinityGroup(ns) },
			func(t rowT) (any, error) { return n.GetNamespaceAntiAffinityGroup(ns) }, ""),
		r("SetDeduplicationStatus", func(t rowT) {
			ok(t, n.SetDeduplicationStatus(ns, true))
			p, err := n.GetPolicies(ns)
			ok(t, err)
			if p.DeduplicationEnabled == nil || !*p.DeduplicationEnabled {
				t.Fatalf("deduplicationEnabled: %v", p.DeduplicationEnabled)
			}
		}),
	)
	pers := utils.NewPersistencePolicies(1, 1, 1, 3)
	add(setGet("SetPersistence", "GetPersistence",
		func(t rowT) error { return n.SetPersistence(ns, pers) },
		func(t rowT) (any, error) { p, err := n.GetPersistence(ns); return deref(p), err }, pers)...)
	add(removed("RemovePersistence", func(t rowT) error { return n.RemovePersistence(ns) },
		func(t rowT) (any, error) { p, err := n.GetPersistence(ns); return deref(p), err }, nil))
	bag := utils.BookieAffinityGroupData{BookkeeperAffinityGroupPrimary: "rack-a", BookkeeperAffinityGroupSecondary: "rack-b"}
	add(setGet("SetBookieAffinityGroup", "GetBookieAffinityGroup",
		func(t rowT) error { return n.SetBookieAffinityGroup(ns, bag) },
		func(t rowT) (any, error) { p, err := n.GetBookieAffinityGroup(ns); return deref(p), err }, bag)...)
	add(r("DeleteBookieAffinityGroup", func(t rowT) {
		ok(t, n.DeleteBookieAffinityGroup(ns))
		// As Pulsar: none is a null (204), which pulsaradmin reads as nil.
		if g, err := n.GetBookieAffinityGroup(ns); err != nil || g != nil {
			t.Fatalf("after delete: %+v, %v; want nil", g, err)
		}
	}))
	add(
		r("Unload", func(t rowT) { ok(t, n.Unload(ns)) }),
		r("UnloadNamespaceBundle", func(t rowT) {
			b := boundaries(t, ns)
			ok(t, n.UnloadNamespaceBundle(ns, b[0]+"_"+b[1]))
			wantStatus(t, n.UnloadNamespaceBundle(ns, "0x00000000_0x00000001"), http.StatusPreconditionFailed)
		}),
		r("SplitNamespaceBundle", func(t rowT) {
			// A namespace has 4 bundles by default, on the standalone too.
			b := boundaries(t, ns)
			same(t, "boundaries before", b, []string{"0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"})
			wantStatus(t, n.SplitNamespaceBundle(ns, full, false), http.StatusPreconditionFailed)
			ok(t, n.SplitNamespaceBundle(ns, b[0]+"_"+b[1], false))
			same(t, "boundaries after", boundaries(t, ns), []string{"0x00000000", "0x20000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"})
			// A topic's bundle is found by its hash in the new ranges.
			tp := topicInRange(ns, 0, 0x20000000)
			got, err := e.c.Topics().GetBundleRange(topicName(t, tp))
			ok(t, err)
			same(t, "bundle of "+tp, got, "0x00000000_0x20000000")
		}),
		r("GrantNamespacePermission", func(t rowT) {
			ok(t, n.GrantNamespacePermission(nn(t), "app", []utils.AuthAction{utils.AuthAction("produce"), utils.AuthAction("consume")}))
		}),
		r("GetNamespacePermissions", func(t rowT) {
			got, err := n.GetNamespacePermissions(nn(t))
			ok(t, err)
			acts := got["app"]
			slices.Sort(acts)
			same(t, "actions of app", acts, []utils.AuthAction{utils.AuthAction("consume"), utils.AuthAction("produce")})
		}),
		r("RevokeNamespacePermission", func(t rowT) {
			ok(t, n.RevokeNamespacePermission(nn(t), "app"))
			got, err := n.GetNamespacePermissions(nn(t))
			ok(t, err)
			if _, has := got["app"]; has {
				t.Fatalf("app still granted: %v", got)
			}
		}),
		r("GrantSubPermission", func(t rowT) { ok(t, n.GrantSubPermission(nn(t), "sub", []string{"app", "ops"})) }),
		r("GetSubPermissions", func(t rowT) {
			got, err := n.GetSubPermissions(nn(t))
			ok(t, err)
			roles := got["sub"]
			slices.Sort(roles)
			same(t, "roles of sub", roles, []string{"app", "ops"})
		}),
		r("RevokeSubPermission", func(t rowT) {
			ok(t, n.RevokeSubPermission(nn(t), "sub", "ops"))
			got, err := n.GetSubPermissions(nn(t))
			ok(t, err)
			same(t, "roles of sub", got["sub"], []string{"app"})
		}),
		r("SetSubscriptionAuthMode", func(t rowT) {
			ok(t, n.SetSubscriptionAuthMode(nn(t), utils.Prefix))
			p, err := n.GetPolicies(ns)
			ok(t, err)
			same(t, "subscription auth mode", p.SubscriptionAuthMode, utils.Prefix)
			ok(t, n.SetSubscriptionAuthMode(nn(t), utils.None))
		}),
		r("SetEncryptionRequiredStatus", func(t rowT) {
			ok(t, n.SetEncryptionRequiredStatus(nn(t), true))
			p, err := n.GetPolicies(ns)
			ok(t, err)
			same(t, "encryption required", p.EncryptionRequired, true)
			ok(t, n.SetEncryptionRequiredStatus(nn(t), false))
		}),
	)
	// Backlog and unsubscribe: a topic of ns with subscription s and
	// three messages.
	topic := "persistent://" + ns + "/backlog"
	prime := func(t rowT) {
		e.produce(t, topic, 3, nil)
		if err := e.c.Subscriptions().Create(topicName(t, topic), "s", utils.Earliest); err != nil {
			wantStatus(t, err, http.StatusConflict) // made by an earlier row
		}
		if e.backlog(t, topicName(t, topic), "s") == 0 {
			t.Fatalf("no backlog to clear")
		}
	}
	bundleOf := func(t rowT) string {
		got, err := e.c.Topics().GetBundleRange(topicName(t, topic))
		ok(t, err)
		return got
	}
	add(
		r("ClearNamespaceBacklogForSubscription", func(t rowT) {
			prime(t)
			ok(t, n.ClearNamespaceBacklogForSubscription(nn(t), "s"))
			same(t, "backlog", e.backlog(t, topicName(t, topic), "s"), int64(0))
		}),
		r("ClearNamespaceBacklog", func(t rowT) {
			prime(t)
			ok(t, n.ClearNamespaceBacklog(nn(t)))
			same(t, "backlog", e.backlog(t, topicName(t, topic), "s"), int64(0))
		}),
		r("ClearNamespaceBundleBacklogForSubscription", func(t rowT) {
			prime(t)
			ok(t, n.ClearNamespaceBundleBacklogForSubscription(nn(t), bundleOf(t), "s"))
			same(t, "backlog", e.backlog(t, topicName(t, topic), "s"), int64(0))
		}),
		r("ClearNamespaceBundleBacklog", func(t rowT) {
			prime(t)
			ok(t, n.ClearNamespaceBundleBacklog(nn(t), bundleOf(t)))
			same(t, "backlog", e.backlog(t, topicName(t, topic), "s"), int64(0))
		}),
		r("UnsubscribeNamespaceBundle", func(t rowT) {
			prime(t)
			ok(t, n.UnsubscribeNamespaceBundle(nn(t), bundleOf(t), "s"))
			subs, err := e.c.Subscriptions().List(topicName(t, topic))
			ok(t, err)
			same(t, "subscriptions", len(subs), 0)
		}),
		r("UnsubscribeNamespace", func(t rowT) {
			prime(t)
			ok(t, n.UnsubscribeNamespace(nn(t), "s"))
			subs, err := e.c.Subscriptions().List(topicName(t, topic))
			ok(t, err)
			same(t, "subscriptions", len(subs), 0)
		}),
	)
	dr := utils.DispatchRate{DispatchThrottlingRateInMsg: 10, DispatchThrottlingRateInByte: 1000, RatePeriodInSecond: 1}
	add(setGet("SetReplicatorDispatchRate", "GetReplicatorDispatchRate",
		func(t rowT) error { return n.SetReplicatorDispatchRate(nn(t), dr) },
		func(t rowT) (any, error) { return n.GetReplicatorDispatchRate(nn(t)) }, dr)...)
	add(setGet("SetSubscriptionDispatchRate", "GetSubscriptionDispatchRate",
		func(t rowT) error { return n.SetSubscriptionDispatchRate(nn(t), dr) },
		func(t rowT) (any, error) { return n.GetSubscriptionDispatchRate(nn(t)) }, dr)...)
	sr := utils.SubscribeRate{SubscribeThrottlingRatePerConsumer: 3, RatePeriodInSecond: 30}
	add(setGet("SetSubscribeRate", "GetSubscribeRate",
		func(t rowT) error { return n.SetSubscribeRate(nn(t), sr) },
		func(t rowT) (any, error) { return n.GetSubscribeRate(nn(t)) }, sr)...)
	add(setGet("SetDispatchRate", "GetDispatchRate",
		func(t rowT) error { return n.SetDispatchRate(nn(t), dr) },
		func(t rowT) (any, error) { return n.GetDispatchRate(nn(t)) }, dr)...)
	pr := utils.PublishRate{PublishThrottlingRateInMsg: 20, PublishThrottlingRateInByte: 2000}
	add(setGet("SetPublishRate", "GetPublishRate",
		func(t rowT) error { return n.SetPublishRate(nn(t), pr) },
		func(t rowT) (any, error) { return n.GetPublishRate(nn(t)) }, pr)...)
	add(setGet("SetIsAllowAutoUpdateSchema", "GetIsAllowAutoUpdateSchema",
		func(t rowT) error { return n.SetIsAllowAutoUpdateSchema(nn(t), false) },
		func(t rowT) (any, error) { return n.GetIsAllowAutoUpdateSchema(nn(t)) }, false)...)
	itp := utils.InactiveTopicPolicies{InactiveTopicDeleteMode: ptr(utils.DeleteWhenSubscriptionsCaughtUp), MaxInactiveDurationSeconds: 300, DeleteWhileInactive: true}
	add(setGet("SetInactiveTopicPolicies", "GetInactiveTopicPolicies",
		func(t rowT) error { return n.SetInactiveTopicPolicies(nn(t), itp) },
		func(t rowT) (any, error) { return n.GetInactiveTopicPolicies(nn(t)) }, itp)...)
	add(removed("RemoveInactiveTopicPolicies", func(t rowT) error { return n.RemoveInactiveTopicPolicies(nn(t)) },
		func(t rowT) (any, error) { return n.GetInactiveTopicPolicies(nn(t)) }, utils.InactiveTopicPolicies{}))
	add(setGet("SetSubscriptionExpirationTime", "GetSubscriptionExpirationTime",
		func(t rowT) error { return n.SetSubscriptionExpirationTime(nn(t), 45) },
		func(t rowT) (any, error) { return n.GetSubscriptionExpirationTime(nn(t)) }, 45)...)
	add(removed("RemoveSubscriptionExpirationTime", func(t rowT) error { return n.RemoveSubscriptionExpirationTime(nn(t)) },
		func(t rowT) (any, error) { return n.GetSubscriptionExpirationTime(nn(t)) }, -1))
	props := map[string]string{"team": "core", "tier": "1"}
	add(setGet("UpdateProperties", "GetProperties",
		func(t rowT) error { return n.UpdateProperties(nn(t), props) },
		func(t rowT) (any, error) { return n.GetProperties(nn(t)) }, props)...)
	add(removed("RemoveProperties", func(t rowT) error { return n.RemoveProperties(nn(t)) },
		func(t rowT) (any, error) { m, err := n.GetProperties(nn(t)); return len(m), err }, 0))
	add(
		r("DeleteNamespaceBundle", func(t rowT) {
			ok(t, n.CreateNsWithNumBundles("tbl/delb", 2))
			b := boundaries(t, "tbl/delb")
			// A bundle with a topic is not deleted (Pulsar's 409).
			tp := topicName(t, topicInRange("tbl/delb", 0x80000000, 0xffffffff))
			ok(t, e.c.Topics().Create(tp, 0))
			wantStatus(t, n.DeleteNamespaceBundle("tbl/delb", b[1]+"_"+b[2]), http.StatusConflict)
			ok(t, e.c.Topics().Delete(tp, false, true))
			ok(t, n.DeleteNamespaceBundle("tbl/delb", b[0]+"_"+b[1]))
			wantStatus(t, n.DeleteNamespaceBundle("tbl/delb", "0x00000000_0x00000001"), http.StatusPreconditionFailed)
		}),
		r("DeleteNamespace", func(t rowT) {
			for _, x := range []string{"tbl/nb4", "tbl/withpol", "tbl/nbd", "tbl/delb"} {
				ok(t, n.DeleteNamespace(x))
			}
			got, err := n.GetNamespaces("tbl")
			ok(t, err)
			for _, x := range got {
				if strings.HasPrefix(x, "tbl/nb") {
					t.Fatalf("deleted namespace still listed: %v", got)
				}
			}
			wantStatus(t, n.DeleteNamespace("tbl/no-such-ns"), http.StatusNotFound)
		}),
	)
	return rows
}

// deref is *p, or nil for a nil p.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// topicInRange names a topic of ns whose hash (CRC-32 of the full name,
// as Pulsar's) falls in [lo, hi).
func topicInRange(ns string, lo, hi uint32) string {
	for i := 0; ; i++ {
		tp := fmt.Sprintf("persistent://%s/in-range-%d", ns, i)
		if h := crc32.ChecksumIEEE([]byte(tp)); h >= lo && h < hi {
			return tp
		}
	}
}
