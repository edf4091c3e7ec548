package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// Rows of TestPulsarAdminTable for the cluster-wide interfaces:
// Clusters, Tenants, Brokers, BrokerStats, ResourceQuotas and
// NsIsolationPolicy.

func clusterRows(e *adminEnv) []adminRow {
	cl := e.c.Clusters()
	peer := utils.ClusterData{Name: "tbl-peer", ServiceURL: "http://peer.example:8080", BrokerServiceURL: "pulsar://peer.example:6650"}
	dom := utils.FailureDomainData{ClusterName: e.cluster, DomainName: "rack-a", BrokerList: []string{"b1:8080"}}
	return []adminRow{
		row("Clusters", "List", func(t rowT) {
			got, err := cl.List()
			ok(t, err)
			same(t, "clusters", got, []string{e.cluster})
		}),
		row("Clusters", "Create", func(t rowT) {
			ok(t, cl.Create(peer))
			wantStatus(t, cl.Create(peer), http.StatusConflict)
			got, err := cl.List()
			ok(t, err)
			if !slices.Contains(got, peer.Name) {
				t.Fatalf("created cluster not listed: %v", got)
			}
		}),
		row("Clusters", "Get", func(t rowT) {
			got, err := cl.Get(peer.Name)
			ok(t, err)
			same(t, "service URL", got.ServiceURL, peer.ServiceURL)
			same(t, "broker service URL", got.BrokerServiceURL, peer.BrokerServiceURL)
			_, err = cl.Get("no-such-cluster")
			wantStatus(t, err, http.StatusNotFound)
		}),
		row("Clusters", "Update", func(t rowT) {
			upd := peer
			upd.ServiceURL = "http://peer2.example:8080"
			ok(t, cl.Update(upd))
			got, err := cl.Get(peer.Name)
			ok(t, err)
			same(t, "updated service URL", got.ServiceURL, upd.ServiceURL)
		}),
		row("Clusters", "UpdatePeerClusters", func(t rowT) {
			ok(t, cl.UpdatePeerClusters(e.cluster, []string{peer.Name}))
			got, err := cl.Get(e.cluster)
			ok(t, err)
			same(t, "peers in the cluster data", got.PeerClusterNames, []string{peer.Name})
		}),
		row("Clusters", "GetPeerClusters", func(t rowT) {
			got, err := cl.GetPeerClusters(e.cluster)
			ok(t, err)
			same(t, "peers", got, []string{peer.Name})
			ok(t, cl.UpdatePeerClusters(e.cluster, nil))
		}),
		row("Clusters", "CreateFailureDomain", func(t rowT) {
			ok(t, cl.CreateFailureDomain(dom))
			// A broker is in one domain at most; the cluster must exist.
			wantStatus(t, cl.CreateFailureDomain(utils.FailureDomainData{ClusterName: e.cluster, DomainName: "rack-b", BrokerList: []string{"b1:8080"}}), http.StatusConflict)
			wantStatus(t, cl.CreateFailureDomain(utils.FailureDomainData{ClusterName: "no-such-cluster", DomainName: "rack-c", BrokerList: []string{"b9:8080"}}), http.StatusPreconditionFailed)
		}),
		row("Clusters", "GetFailureDomain", func(t rowT) {
			got, err := cl.GetFailureDomain(e.cluster, dom.DomainName)
			ok(t, err)
			same(t, "brokers", got.BrokerList, dom.BrokerList)
			_, err = cl.GetFailureDomain(e.cluster, "no-such-domain")
			wantStatus(t, err, http.StatusNotFound)
		}),
		row("Clusters", "UpdateFailureDomain", func(t rowT) {
			upd := dom
			upd.BrokerList = []string{"b1:8080", "b2:8080"}
			ok(t, cl.UpdateFailureDomain(upd))
			got, err := cl.GetFailureDomain(e.cluster, dom.DomainName)
			ok(t, err)
			same(t, "brokers", got.BrokerList, upd.BrokerList)
		}),
		row("Clusters", "ListFailureDomains", func(t rowT) {
			got, err := cl.ListFailureDomains(e.cluster)
			ok(t, err)
			if len(got) != 1 || !slices.Equal(got[dom.DomainName].BrokerList, []string{"b1:8080", "b2:8080"}) {
				t.Fatalf("failure domains: %#v", got)
			}
		}),
		row("Clusters", "DeleteFailureDomain", func(t rowT) {
			ok(t, cl.DeleteFailureDomain(dom))
			got, err := cl.ListFailureDomains(e.cluster)
			ok(t, err)
			same(t, "failure domains left", len(got), 0)
			wantStatus(t, cl.DeleteFailureDomain(dom), http.StatusNotFound)
		}),
		row("Clusters", "Delete", func(t rowT) {
			ok(t, cl.Delete(peer.Name))
			_, err := cl.Get(peer.Name)
			wantStatus(t, err, http.StatusNotFound)
		}),
	}
}

func tenantRows(e *adminEnv) []adminRow {
	tn := e.c.Tenants()
	return []adminRow{
		row("Tenants", "Create", func(t rowT) {
			ok(t, tn.Create(utils.TenantData{Name: e.tenant, AllowedClusters: []string{e.cluster}}))
			wantStatus(t, tn.Create(utils.TenantData{Name: e.tenant, AllowedClusters: []string{e.cluster}}), http.StatusConflict)
			ok(t, e.c.Namespaces().CreateNamespace(e.ns))
		}),
		row("Tenants", "Get", func(t rowT) {
			got, err := tn.Get(e.tenant)
			ok(t, err)
			same(t, "allowed clusters", got.AllowedClusters, []string{e.cluster})
			_, err = tn.Get("no-such-tenant")
			wantStatus(t, err, http.StatusNotFound)
		}),
		row("Tenants", "Update", func(t rowT) {
			ok(t, tn.Update(utils.TenantData{Name: e.tenant, AdminRoles: []string{"ops"}, AllowedClusters: []string{e.cluster}}))
			got, err := tn.Get(e.tenant)
			ok(t, err)
			same(t, "admin roles", got.AdminRoles, []string{"ops"})
		}),
		row("Tenants", "List", func(t rowT) {
			got, err := tn.List()
			ok(t, err)
			if !slices.Contains(got, e.tenant) || !slices.Contains(got, "public") {
				t.Fatalf("tenants: %v", got)
			}
		}),
		row("Tenants", "Delete", func(t rowT) {
			ok(t, tn.Create(utils.TenantData{Name: "tbl-gone", AllowedClusters: []string{e.cluster}}))
			ok(t, tn.Delete("tbl-gone"))
			_, err := tn.Get("tbl-gone")
			wantStatus(t, err, http.StatusNotFound)
			// A tenant with a namespace is not deleted.
			wantStatus(t, tn.Delete(e.tenant), http.StatusConflict)
		}),
	}
}

func brokerRows(e *adminEnv) []adminRow {
	br := e.c.Brokers()
	self := strings.TrimPrefix(e.p.http, "http://")
	return []adminRow{
		row("Brokers", "GetListActiveBrokers", func(t rowT) {
			got, err := br.GetListActiveBrokers()
			ok(t, err)
			same(t, "active brokers", got, []string{self})
		}),
		row("Brokers", "GetActiveBrokers", func(t rowT) {
			got, err := br.GetActiveBrokers(e.cluster)
			ok(t, err)
			same(t, "active brokers", got, []string{self})
			_, err = br.GetActiveBrokers("no-such-cluster")
			wantStatus(t, err, http.StatusNotFound)
		}),
		row("Brokers", "GetLeaderBroker", func(t rowT) {
			got, err := br.GetLeaderBroker()
			ok(t, err)
			same(t, "leader service URL", got.ServiceURL, e.p.http)
		}),
		row("Brokers", "GetOwnedNamespaces", func(t rowT) {
			// A lookup makes the standalone own the topic's bundle.
			ok(t, e.c.Topics().Create(topicName(t, "persistent://"+e.ns+"/owned"), 0))
			got, err := br.GetOwnedNamespaces(e.cluster, self)
			ok(t, err)
			found := false
			for k, st := range got {
				if strings.HasPrefix(k, e.ns+"/") {
					found = true
					if !st.IsActive {
						t.Errorf("%s not active: %#v", k, st)
					}
				}
			}
			if !found {
				t.Fatalf("no bundle of %s owned: %#v", e.ns, got)
			}
		}),
		row("Brokers", "GetDynamicConfigurationNames", func(t rowT) {
			got, err := br.GetDynamicConfigurationNames()
			ok(t, err)
			for _, k := range []string{"dispatchThrottlingRatePerTopicInMsg", "maxPublishRatePerTopicInMessages", "brokerDeleteInactiveTopicsEnabled"} {
				if !slices.Contains(got, k) {
					t.Fatalf("dynamic configuration names lack %s: %v", k, got)
				}
			}
			if slices.Contains(got, "maxUnackedMessagesPerConsumer") {
				t.Fatalf("maxUnackedMessagesPerConsumer is not dynamic in Pulsar: %v", got)
			}
		}),
		row("Brokers", "UpdateDynamicConfiguration", func(t rowT) {
			topic := "persistent://" + e.ns + "/dyn-rate"
			ok(t, e.c.Topics().Create(topicName(t, topic), 0))
			ok(t, br.UpdateDynamicConfiguration("dispatchThrottlingRatePerTopicInMsg", "777"))
			// The running broker applies it: the topic's applied dispatch
			// rate (no namespace or topic policy) is the new default.
			var applied struct {
				Msgs int `json:"dispatchThrottlingRateInMsg"`
			}
			getJSON(t, e.p.http+"/admin/v2/persistent/"+e.ns+"/dyn-rate/dispatchRate?applied=true", &applied)
			same(t, "applied dispatch rate", applied.Msgs, 777)
			wantStatus(t, br.UpdateDynamicConfiguration("no-such-key", "1"), http.StatusPreconditionFailed)
			wantStatus(t, br.UpdateDynamicConfiguration("maxUnackedMessagesPerConsumer", "1"), http.StatusPreconditionFailed)
			wantStatus(t, br.UpdateDynamicConfiguration("dispatchThrottlingRatePerTopicInMsg", "lots"), http.StatusPreconditionFailed)
		}),
		row("Brokers", "GetAllDynamicConfigurations", func(t rowT) {
			got, err := br.GetAllDynamicConfigurations()
			ok(t, err)
			same(t, "overrides", got, map[string]string{"dispatchThrottlingRatePerTopicInMsg": "777"})
		}),
		row("Brokers", "GetRuntimeConfigurations", func(t rowT) {
			got, err := br.GetRuntimeConfigurations()
			ok(t, err)
			same(t, "runtime value of a dynamic key", got["dispatchThrottlingRatePerTopicInMsg"], "777")
			same(t, "clusterName", got["clusterName"], e.cluster)
			same(t, "maxUnackedMessagesPerConsumer", got["maxUnackedMessagesPerConsumer"], "50000")
			same(t, "keepAliveIntervalSeconds", got["keepAliveIntervalSeconds"], "30")
			if _, found := got["webServicePort"]; !found {
				t.Fatalf("no webServicePort: %v", got)
			}
			for k, v := range got {
				if low := strings.ToLower(k); (strings.Contains(low, "secret") || strings.Contains(low, "password")) && v != "" && v != "<redacted>" && !strings.HasPrefix(v, "file://") && !strings.HasPrefix(v, "/") {
					t.Fatalf("secret %s shown: %q", k, v)
				}
			}
		}),
		row("Brokers", "DeleteDynamicConfiguration", func(t rowT) {
			ok(t, br.DeleteDynamicConfiguration("dispatchThrottlingRatePerTopicInMsg"))
			got, err := br.GetAllDynamicConfigurations()
			ok(t, err)
			if _, set := got["dispatchThrottlingRatePerTopicInMsg"]; set {
				t.Fatalf("still overridden: %v", got)
			}
			var applied struct {
				Msgs int `json:"dispatchThrottlingRateInMsg"`
			}
			getJSON(t, e.p.http+"/admin/v2/persistent/"+e.ns+"/dyn-rate/dispatchRate?applied=true", &applied)
			same(t, "applied dispatch rate back to the configuration's", applied.Msgs, 0)
			rt, err := br.GetRuntimeConfigurations()
			ok(t, err)
			same(t, "runtime value after delete", rt["dispatchThrottlingRatePerTopicInMsg"], "0")
			wantStatus(t, br.DeleteDynamicConfiguration("clusterName"), http.StatusPreconditionFailed)
		}),
		row("Brokers", "GetInternalConfigurationData", func(t rowT) {
			got, err := br.GetInternalConfigurationData()
			ok(t, err)
			same(t, "ledgersRootPath", got.LedgersRootPath, "/ledgers")
			// The standalone's metadata store is embedded: no ZooKeeper.
			same(t, "zookeeperServers", got.ZookeeperServers, "")
		}),
		row("Brokers", "HealthCheck", func(t rowT) {
			//lint:ignore SA1019 the table calls every method, deprecated ones too
			ok(t, br.HealthCheck())
		}),
		row("Brokers", "HealthCheckWithTopicVersion", func(t rowT) {
			ok(t, br.HealthCheckWithTopicVersion(utils.TopicVersionV2))
		}),
	}
}

func brokerStatsRows(e *adminEnv) []adminRow {
	bs := e.c.BrokerStats()
	return []adminRow{
		row("BrokerStats", "GetLoadReport", func(t rowT) {
			// Stats load the topic.
			ok(t, e.c.Topics().Create(topicName(t, "persistent://"+e.ns+"/loaded"), 0))
			_, err := e.c.Topics().GetStats(topicName(t, "persistent://"+e.ns+"/loaded"))
			ok(t, err)
			got, err := bs.GetLoadReport()
			ok(t, err)
			if got == nil || got.WebServiceURL != e.p.http || got.PulsarServiceURL == "" {
				t.Fatalf("load report: %#v", got)
			}
			if got.NumTopics < 1 || got.NumBundles < 1 || got.Memory.Usage <= 0 || got.Memory.Limit <= 0 || got.CPU.Limit <= 0 {
				t.Fatalf("load report not filled: %#v", got)
			}
			found := false
			for _, b := range got.Bundles {
				found = found || strings.HasPrefix(b, e.ns+"/0x")
			}
			if !found {
				t.Fatalf("no bundle of %s in %v", e.ns, got.Bundles)
			}
		}),
		row("BrokerStats", "GetTopics", func(t rowT) {
			got, err := bs.GetTopics()
			ok(t, err)
			var nested map[string]map[string]map[string]map[string]struct {
				MsgRateIn float64 `json:"msgRateIn"`
			}
			if err := json.Unmarshal([]byte(got), &nested); err != nil {
				t.Fatalf("broker-stats topics: %v: %s", err, got)
			}
			found := false
			for _, domains := range nested[e.ns] {
				if _, found = domains["persistent"]["persistent://"+e.ns+"/loaded"]; found {
					break
				}
			}
			if !found {
				t.Fatalf("broker-stats topics lack %s/loaded under namespace → bundle → persistent: %s", e.ns, got)
			}
		}),
		row("BrokerStats", "GetMetrics", func(t rowT) {
			// A namespace of its own: one topic, one subscription, five
			// messages published and not consumed.
			ns := e.tenant + "/metrics"
			ok(t, e.c.Namespaces().CreateNamespace(ns))
			topic := "persistent://" + ns + "/t"
			tn := topicName(t, topic)
			ok(t, e.c.Topics().Create(tn, 0))
			ok(t, e.c.Subscriptions().Create(tn, "s", utils.Latest))
			e.produce(t, topic, 5, nil)
			got, err := bs.GetMetrics()
			ok(t, err)
			byDims := map[string]map[string]interface{}{}
			for _, m := range got {
				var kv []string
				for k, v := range m.Dimensions {
					kv = append(kv, k+"="+v)
				}
				slices.Sort(kv)
				byDims[strings.Join(kv, ",")] = m.Metrics
			}
			num := func(dims, key string) float64 {
				t.Helper()
				m, found := byDims[dims]
				if !found {
					t.Fatalf("no metrics with dimensions %q: %v", dims, got)
				}
				v, isNum := m[key].(float64)
				if !isNum {
					t.Fatalf("%s of %q: %#v", key, dims, m[key])
				}
				return v
			}
			nsDims := "namespace=" + ns
			same(t, "brk_msg_backlog", num(nsDims, "brk_msg_backlog"), 5.0)
			same(t, "brk_no_of_subscriptions", num(nsDims, "brk_no_of_subscriptions"), 1.0)
			same(t, "brk_no_of_producers", num(nsDims, "brk_no_of_producers"), 0.0)
			same(t, "brk_no_of_consumers", num(nsDims, "brk_no_of_consumers"), 0.0)
			if s := num(nsDims, "brk_storage_size"); s < 5*float64(len("m0")) {
				t.Fatalf("brk_storage_size %v for five messages", s)
			}
			mlDims := "namespace=" + ns + "/persistent"
			same(t, "brk_ml_NumberOfMessagesInBacklog", num(mlDims, "brk_ml_NumberOfMessagesInBacklog"), 5.0)
			same(t, "brk_ml_StoredMessagesSize", num(mlDims, "brk_ml_StoredMessagesSize"), num(nsDims, "brk_storage_size"))
			if n := num("", "brk_ml_count"); n < 1 {
				t.Fatalf("brk_ml_count %v", n)
			}
			if h := num("metric=jvm_metrics", "jvm_heap_used"); h <= 0 {
				t.Fatalf("jvm_heap_used %v", h)
			}
			// The Namespaces rows list the tenant's namespaces.
			ok(t, e.c.Topics().Delete(tn, true, true))
			ok(t, e.c.Namespaces().DeleteNamespace(ns))
		}),
		row("BrokerStats", "GetMBeans", func(t rowT) {
			got, err := bs.GetMBeans()
			ok(t, err)
			beans := map[string]map[string]interface{}{}
			for _, m := range got {
				beans[m.Dimensions["MBean"]] = m.Metrics
			}
			mem, gc, thr := beans["go.runtime:type=Memory"], beans["go.runtime:type=GarbageCollector"], beans["go.runtime:type=Threading"]
			if mem == nil || gc == nil || thr == nil {
				t.Fatalf("mbeans: %v", got)
			}
			if used, _ := mem["HeapMemoryUsage.used"].(float64); used <= 0 {
				t.Fatalf("heap used: %v", mem)
			}
			if n, _ := thr["ThreadCount"].(float64); n < 1 {
				t.Fatalf("goroutines: %v", thr)
			}
			if _, found := gc["CollectionCount"]; !found {
				t.Fatalf("gc: %v", gc)
			}
		}),
		row("BrokerStats", "GetAllocatorStats", func(t rowT) {
			got, err := bs.GetAllocatorStats("default")
			ok(t, err)
			if got.NumHeapArenas != 1 || len(got.HeapArenas) != 1 || len(got.DirectArenas) != 0 {
				t.Fatalf("arenas: %+v", got)
			}
			ar := got.HeapArenas[0]
			if ar.NumAllocations <= 0 || ar.NumAllocations < ar.NumDeallocations || len(ar.SmallSubpages) == 0 || len(ar.ChunkLists) != 1 {
				t.Fatalf("heap arena: %+v", ar)
			}
			_, err = bs.GetAllocatorStats("no-such-allocator")
			wantStatus(t, err, http.StatusNotFound)
		}),
	}
}

func resourceQuotaRows(e *adminEnv) []adminRow {
	rq := e.c.ResourceQuotas()
	q := utils.ResourceQuota{MsgRateIn: 10, MsgRateOut: 20, BandwidthIn: 1000, BandwidthOut: 2000, Memory: 64, Dynamic: false}
	bundle := "0x00000000_0xffffffff"
	return []adminRow{
		row("ResourceQuotas", "GetDefaultResourceQuota", func(t rowT) {
			got, err := rq.GetDefaultResourceQuota()
			ok(t, err)
			// Pulsar's initial default quota.
			same(t, "default quota", *got, utils.ResourceQuota{MsgRateIn: 40, MsgRateOut: 120, BandwidthIn: 100000, BandwidthOut: 300000, Memory: 80, Dynamic: true})
		}),
		row("ResourceQuotas", "SetDefaultResourceQuota", func(t rowT) {
			ok(t, rq.SetDefaultResourceQuota(q))
			got, err := rq.GetDefaultResourceQuota()
			ok(t, err)
			same(t, "default quota", *got, q)
			bad := q
			bad.MsgRateIn = -1
			wantStatus(t, rq.SetDefaultResourceQuota(bad), http.StatusPreconditionFailed)
		}),
		row("ResourceQuotas", "SetNamespaceBundleResourceQuota", func(t rowT) {
			bq := q
			bq.MsgRateIn = 99
			ok(t, rq.SetNamespaceBundleResourceQuota(e.ns, bundle, bq))
			wantStatus(t, rq.SetNamespaceBundleResourceQuota(e.ns, "not-a-range", bq), http.StatusPreconditionFailed)
			wantStatus(t, rq.SetNamespaceBundleResourceQuota(e.tenant+"/no-such-ns", bundle, bq), http.StatusNotFound)
		}),
		row("ResourceQuotas", "GetNamespaceBundleResourceQuota", func(t rowT) {
			got, err := rq.GetNamespaceBundleResourceQuota(e.ns, bundle)
			ok(t, err)
			want := q
			want.MsgRateIn = 99
			same(t, "bundle quota", *got, want)
			// Another bundle has no quota of its own: the default.
			other, err := rq.GetNamespaceBundleResourceQuota(e.ns, "0x00000000_0x40000000")
			ok(t, err)
			same(t, "quota of a bundle without one", *other, q)
		}),
		row("ResourceQuotas", "ResetNamespaceBundleResourceQuota", func(t rowT) {
			ok(t, rq.ResetNamespaceBundleResourceQuota(e.ns, bundle))
			got, err := rq.GetNamespaceBundleResourceQuota(e.ns, bundle)
			ok(t, err)
			same(t, "bundle quota after reset (the default)", *got, q)
		}),
	}
}

func nsIsolationRows(e *adminEnv) []adminRow {
	ip := e.c.NsIsolationPolicy()
	self := strings.TrimPrefix(e.p.http, "http://")
	pol := utils.NamespaceIsolationData{
		Namespaces: []string{e.ns}, Primary: []string{"127.*"}, Secondary: []string{},
		AutoFailoverPolicy: utils.AutoFailoverPolicyData{PolicyType: utils.MinAvailable,
			Parameters: map[string]string{"min_limit": "1", "usage_threshold": "80"}},
	}
	return []adminRow{
		row("NsIsolationPolicy", "CreateNamespaceIsolationPolicy", func(t rowT) {
			_, err := ip.GetNamespaceIsolationPolicies(e.cluster)
			wantStatus(t, err, http.StatusNotFound) // none set yet
			ok(t, ip.CreateNamespaceIsolationPolicy(e.cluster, "tbl-policy", pol))
			bad := pol
			bad.Primary = []string{"broker-(["}
			wantStatus(t, ip.CreateNamespaceIsolationPolicy(e.cluster, "tbl-bad", bad), http.StatusBadRequest)
			wantStatus(t, ip.CreateNamespaceIsolationPolicy("no-such-cluster", "tbl-policy", pol), http.StatusPreconditionFailed)
		}),
		row("NsIsolationPolicy", "GetNamespaceIsolationPolicy", func(t rowT) {
			got, err := ip.GetNamespaceIsolationPolicy(e.cluster, "tbl-policy")
			ok(t, err)
			same(t, "namespaces", got.Namespaces, pol.Namespaces)
			same(t, "primary", got.Primary, pol.Primary)
			same(t, "failover parameters", got.AutoFailoverPolicy, pol.AutoFailoverPolicy)
		}),
		row("NsIsolationPolicy", "GetNamespaceIsolationPolicies", func(t rowT) {
			got, err := ip.GetNamespaceIsolationPolicies(e.cluster)
			ok(t, err)
			if _, found := got["tbl-policy"]; !found || len(got) != 1 {
				t.Fatalf("policies: %#v", got)
			}
		}),
		row("NsIsolationPolicy", "GetBrokersWithNamespaceIsolationPolicy", func(t rowT) {
			got, err := ip.GetBrokersWithNamespaceIsolationPolicy(e.cluster)
			ok(t, err)
			if len(got) != 1 || got[0].BrokerName != self || !got[0].IsPrimary {
				t.Fatalf("brokers with the policy: %#v", got)
			}
		}),
		row("NsIsolationPolicy", "GetBrokerWithNamespaceIsolationPolicy", func(t rowT) {
			got, err := ip.GetBrokerWithNamespaceIsolationPolicy(e.cluster, self)
			ok(t, err)
			same(t, "policy of the broker", got.PolicyName, "tbl-policy")
			same(t, "namespace regexes", got.NamespaceRegex, pol.Namespaces)
			other, err := ip.GetBrokerWithNamespaceIsolationPolicy(e.cluster, "10.9.9.9:8080")
			ok(t, err)
			if other.PolicyName != "" || other.IsPrimary {
				t.Fatalf("a broker no policy names: %#v", other)
			}
		}),
		row("NsIsolationPolicy", "DeleteNamespaceIsolationPolicy", func(t rowT) {
			ok(t, ip.DeleteNamespaceIsolationPolicy(e.cluster, "tbl-policy"))
			_, err := ip.GetNamespaceIsolationPolicy(e.cluster, "tbl-policy")
			wantStatus(t, err, http.StatusNotFound)
			got, err := ip.GetNamespaceIsolationPolicies(e.cluster)
			ok(t, err)
			same(t, "policies left", len(got), 0)
		}),
	}
}

// topicName parses a topic name, failing the row if it is not one.
func topicName(t rowT, s string) utils.TopicName {
	t.Helper()
	tn, err := utils.GetTopicName(s)
	if err != nil {
		t.Fatal(err)
	}
	return *tn
}

// getJSON GETs url and decodes the 200 answer into v.
func getJSON(t rowT, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
