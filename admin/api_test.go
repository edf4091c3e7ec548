package admin

import (
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
)

func TestAdminClustersBrokersTenantsNamespaces(t *testing.T) {
	tb, ac := startAdmin(t)

	cs, err := ac.Clusters().List()
	if err != nil || !slices.Equal(cs, []string{"standalone"}) {
		t.Fatalf("clusters %v %v", cs, err)
	}
	cd, err := ac.Clusters().Get("standalone")
	if err != nil || !strings.HasPrefix(cd.BrokerServiceURL, "pulsar://") {
		t.Fatalf("cluster get %+v %v", cd, err)
	}
	brokers, err := ac.Brokers().GetActiveBrokers("standalone")
	if err != nil || len(brokers) != 1 {
		t.Fatalf("brokers %v %v", brokers, err)
	}

	ts := ac.Tenants()
	if err := ts.Create(utils.TenantData{Name: "acme", AdminRoles: []string{"root"}, AllowedClusters: []string{"standalone"}}); err != nil {
		t.Fatal(err)
	}
	if err := ts.Create(utils.TenantData{Name: "acme", AllowedClusters: []string{"standalone"}}); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("duplicate tenant create: %v", err)
	}
	if err := ts.Create(utils.TenantData{Name: "bad", AllowedClusters: []string{"nowhere"}}); err == nil {
		t.Fatal("tenant with unknown cluster accepted")
	}
	td, err := ts.Get("acme")
	if err != nil || !slices.Equal(td.AdminRoles, []string{"root"}) {
		t.Fatalf("tenant get %+v %v", td, err)
	}
	if err := ts.Update(utils.TenantData{Name: "acme", AdminRoles: []string{"ops"}, AllowedClusters: []string{"standalone"}}); err != nil {
		t.Fatal(err)
	}
	if td, _ = ts.Get("acme"); !slices.Equal(td.AdminRoles, []string{"ops"}) {
		t.Fatalf("tenant update not applied: %+v", td)
	}
	list, err := ts.List()
	if err != nil || !slices.Contains(list, "acme") || !slices.Contains(list, "public") {
		t.Fatalf("tenants %v %v", list, err)
	}

	ns := ac.Namespaces()
	if err := ns.CreateNamespace("acme/ns1"); err != nil {
		t.Fatal(err)
	}
	if err := ns.CreateNamespace("acme/ns1"); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("duplicate namespace: %v", err)
	}
	if err := ns.CreateNamespace("nosuch/ns1"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("namespace of unknown tenant: %v", err)
	}
	nss, err := ns.GetNamespaces("acme")
	if err != nil || !slices.Equal(nss, []string{"acme/ns1"}) {
		t.Fatalf("namespaces %v %v", nss, err)
	}
	pol, err := ns.GetPolicies("acme/ns1")
	if err != nil || !slices.Equal(pol.ReplicationClusters, []string{"standalone"}) {
		t.Fatalf("policies %+v %v", pol, err)
	}
	// A tenant with namespaces cannot be deleted.
	if err := ts.Delete("acme"); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("delete non-empty tenant: %v", err)
	}
	// A namespace with topics needs force.
	if code, body := httpDo(t, tb, "PUT", "/admin/v2/persistent/acme/ns1/t1", ""); code != http.StatusNoContent {
		t.Fatalf("create topic %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "DELETE", "/admin/v2/namespaces/acme/ns1", ""); code != http.StatusConflict {
		t.Fatalf("delete non-empty namespace %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "DELETE", "/admin/v2/namespaces/acme/ns1?force=true", ""); code != http.StatusNoContent {
		t.Fatalf("force delete namespace %d %s", code, body)
	}
	if nss, _ = ns.GetNamespaces("acme"); len(nss) != 0 {
		t.Fatalf("namespaces after delete %v", nss)
	}
	if err := ts.Delete("acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Get("acme"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("get deleted tenant: %v", err)
	}
	code, body := httpDo(t, tb, "GET", "/admin/v2/bookies/all", "")
	if code != 200 || !strings.Contains(body, `"bookies":[]`) {
		t.Fatalf("bookies %d %s", code, body)
	}
}

func TestAdminErrorShapesAndTenantIsolation(t *testing.T) {
	tb, ac := startAdmin(t)
	for _, tn := range []string{"ta", "tb"} {
		if err := ac.Tenants().Create(utils.TenantData{Name: tn, AllowedClusters: []string{"standalone"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ac.Namespaces().CreateNamespace("ta/secret"); err != nil {
		t.Fatal(err)
	}
	if code, _ := httpDo(t, tb, "PUT", "/admin/v2/persistent/ta/secret/x", ""); code != 204 {
		t.Fatal(code)
	}
	// ta's namespace is invisible through tb's paths.
	nss, err := ac.Namespaces().GetNamespaces("tb")
	if err != nil || len(nss) != 0 {
		t.Fatalf("tb namespaces %v %v", nss, err)
	}
	for _, path := range []string{
		"/admin/v2/namespaces/tb/secret",
		"/admin/v2/namespaces/tb/secret/topics",
		"/admin/v2/persistent/tb/secret",
		"/admin/v2/persistent/tb/secret/x/stats",
		"/admin/v2/namespaces/tb/secret/retention",
	} {
		code, body := httpDo(t, tb, "GET", path, "")
		if code != http.StatusNotFound {
			t.Errorf("GET %s: %d %s", path, code, body)
			continue
		}
		reasonOf(t, body)
	}
	// Unknown paths: 404 with a reason; bad bodies: 412.
	cases := []struct {
		method, path string
		code         int
	}{
		{"GET", "/admin/v2/nothing/here", 404},
		{"GET", "/admin/v3/whatever", 404},
		{"PUT", "/admin/v2/persistent/ta/secret/x/properties", 412}, // no properties map
		{"POST", "/admin/v2/namespaces/ta/secret/permissions", 405}, // Pulsar grants at .../permissions/{role}
		{"PUT", "/admin/v2/clusters/other", 400},                    // no ClusterData body
		{"PATCH", "/admin/v2/tenants/ta", 405},
		{"PUT", "/admin/v2/persistent/ta/secret/x", 409},
		{"DELETE", "/admin/v2/persistent/ta/secret/nope", 404},
		{"POST", "/admin/v2/namespaces/ta/secret/messageTTL", 412},
		{"POST", "/admin/v2/namespaces/ta/secret/backlogQuota", 412},
	}
	for _, c := range cases {
		code, body := httpDo(t, tb, c.method, c.path, "")
		if c.method == "POST" && strings.HasSuffix(c.path, "messageTTL") {
			code, body = httpDo(t, tb, c.method, c.path, `"abc"`)
		}
		if code != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, code, body, c.code)
			continue
		}
		reasonOf(t, body)
	}
}

func TestAdminTopicsAndSubscriptions(t *testing.T) {
	tb, ac := startAdmin(t)
	tp := ac.Topics()
	np := mustTopic(t, "persistent://public/default/adm-np")
	pt := mustTopic(t, "persistent://public/default/adm-pt")
	if err := tp.Create(np, 0); err != nil {
		t.Fatal(err)
	}
	if err := tp.Create(np, 0); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("re-create non-partitioned: %v", err)
	}
	if err := tp.Create(pt, 2); err != nil {
		t.Fatal(err)
	}
	if err := tp.Create(pt, 2); err != nil {
		t.Fatalf("same-count re-create must be idempotent: %v", err)
	}
	if err := tp.Update(pt, 3); err != nil {
		t.Fatal(err)
	}
	if md, err := tp.GetMetadata(pt); err != nil || md.Partitions != 3 {
		t.Fatalf("metadata %+v %v", md, err)
	}
	if err := tp.Update(pt, 2); err == nil {
		t.Fatal("shrinking partitions accepted")
	}
	parts, nonParts, err := tp.List(mustNS(t, "public/default"))
	if err != nil || !slices.Contains(parts, pt.String()) || !slices.Contains(nonParts, np.String()) {
		t.Fatalf("list %v %v %v", parts, nonParts, err)
	}

	// Produce to the non-partitioned topic, then inspect it.
	c := tb.client(t)
	if err := ac.Subscriptions().Create(np, "early", utils.Earliest); err != nil {
		t.Fatal(err)
	}
	if err := ac.Subscriptions().Create(np, "early", utils.Earliest); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("duplicate subscription: %v", err)
	}
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: np.String(), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []pulsar.MessageID
	for i := range 10 {
		id, err := prod.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte{byte('a' + i)}, Properties: map[string]string{"idx": string(rune('0' + i))}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := ac.Subscriptions().Create(np, "late", utils.Latest); err != nil {
		t.Fatal(err)
	}
	subs, err := ac.Subscriptions().List(np)
	slices.Sort(subs)
	if err != nil || !slices.Equal(subs, []string{"early", "late"}) {
		t.Fatalf("subscriptions %v %v", subs, err)
	}
	st, err := tp.GetStats(np)
	if err != nil || st.MsgCounterIn != 10 || st.Subscriptions["early"].MsgBacklog != 10 || st.Subscriptions["late"].MsgBacklog != 0 || len(st.Publishers) != 1 {
		t.Fatalf("stats %+v %v", st, err)
	}
	is, err := tp.GetInternalStats(np)
	if err != nil || is.NumberOfEntries != 10 || len(is.Ledgers) == 0 || is.Cursors["early"].MarkDeletePosition == "" {
		t.Fatalf("internal stats %+v %v", is, err)
	}
	// Message by id and peek.
	ms, err := ac.Subscriptions().GetMessagesByID(np, ids[3].LedgerID(), ids[3].EntryID())
	if err != nil || len(ms) != 1 {
		t.Fatalf("messages by id %+v %v", ms, err)
	}
	m := ms[0]
	if string(m.Payload) != "d" || m.Properties["idx"] != "3" {
		t.Fatalf("message by id %+v %v", m, err)
	}
	peek, err := ac.Subscriptions().PeekMessages(np, "early", 2)
	if err != nil || len(peek) != 2 || string(peek[0].Payload) != "a" || string(peek[1].Payload) != "b" {
		t.Fatalf("peek %v %v", peek, err)
	}
	backlog := func(sub string) int64 {
		t.Helper()
		st, err := tp.GetStats(np)
		if err != nil {
			t.Fatal(err)
		}
		return st.Subscriptions[sub].MsgBacklog
	}
	// Skip, reset, expire, skip all: each step and the backlog after it.
	sa := ac.Subscriptions()
	for _, step := range []struct {
		what    string
		do      func() error
		backlog int64
	}{
		{"skip 4", func() error { return sa.SkipMessages(np, "early", 4) }, 6},
		{"reset to #1", func() error {
			return sa.ResetCursorToMessageID(np, "early", utils.MessageID{LedgerID: ids[1].LedgerID(), EntryID: ids[1].EntryID(), PartitionIndex: -1})
		}, 9},
		{"reset to time 0", func() error { return sa.ResetCursorToTimestamp(np, "early", 0) }, 10},
		{"expire hour-old messages", func() error { return sa.ExpireMessages(np, "early", 3600) }, 10},
		{"expire 0 s", func() error { return sa.ExpireMessages(np, "early", 0) }, 0},
		{"reset to earliest", func() error { return sa.ResetCursorToMessageID(np, "early", utils.Earliest) }, 10},
		{"skip all", func() error { return sa.ClearBacklog(np, "early") }, 0},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if n := backlog("early"); n != step.backlog {
			t.Fatalf("backlog after %s: %d, want %d", step.what, n, step.backlog)
		}
		if step.what == "skip 4" {
			if peek, _ = sa.PeekMessages(np, "early", 1); len(peek) != 1 || string(peek[0].Payload) != "e" {
				t.Fatalf("peek after skip %v", peek)
			}
		}
	}
	if err := ac.Subscriptions().Delete(np, "late"); err != nil {
		t.Fatal(err)
	}
	if err := ac.Subscriptions().Delete(np, "late"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("delete missing subscription: %v", err)
	}
	// A subscription with a connected consumer needs force.
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: np.String(), SubscriptionName: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.Subscriptions().Delete(np, "busy"); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("delete busy subscription: %v", err)
	}
	if err := ac.Subscriptions().ForceDelete(np, "busy"); err != nil {
		t.Fatal(err)
	}
	cons.Close() // or its reconnect would re-create the topic after delete

	lid, err := tp.GetLastMessageID(np)
	if err != nil || lid.LedgerID != ids[9].LedgerID() || lid.EntryID != ids[9].EntryID() {
		t.Fatalf("last message id %+v %v", lid, err)
	}
	// Delete refuses a topic with a producer unless forced.
	if code, _ := httpDo(t, tb, "DELETE", "/admin/v2/persistent/public/default/adm-np", ""); code != http.StatusPreconditionFailed {
		t.Fatalf("delete in-use topic: %d", code)
	}
	// Close the producer first: the Go client races with itself when a
	// reconnect overlaps a send (seen under -race).
	prod.Close()
	if err := tp.Unload(np); err != nil {
		t.Fatal(err)
	}
	if st, err := tp.GetStats(np); err != nil || st.Subscriptions["early"].MsgBacklog != 0 {
		t.Fatalf("stats after unload (reload) %+v %v", st, err)
	}
	last, err := tp.Terminate(np)
	if err != nil || last.LedgerID != ids[9].LedgerID() || last.EntryID != ids[9].EntryID() {
		t.Fatalf("terminate %+v %v (last sent %v)", last, err, ids[9])
	}
	if p2, err := c.CreateProducer(pulsar.ProducerOptions{Topic: np.String()}); err == nil {
		p2.Close()
		t.Fatal("producer created on a terminated topic")
	}
	if err := tp.Delete(np, true, true); err != nil {
		t.Fatal(err)
	}
	if _, err := tp.GetStats(np); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("stats of deleted topic: %v", err)
	}

	// Partitioned stats aggregate the partitions.
	pp := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: pt.String()})
	for i := range 6 {
		if _, err := pp.Send(ctxT(t), &pulsar.ProducerMessage{Key: string(rune('a' + i)), Payload: []byte("p")}); err != nil {
			t.Fatal(err)
		}
	}
	// One partitioned producer: one publisher on each partition, merged
	// by position into one, as Pulsar's TopicStatsImpl.add does.
	ps, err := tp.GetPartitionedStats(pt, true)
	if err != nil || ps.Metadata.Partitions != 3 || len(ps.Partitions) != 3 || len(ps.Publishers) != 1 {
		t.Fatalf("partitioned stats %+v %v", ps, err)
	}
	var in int64
	for _, s := range ps.Partitions {
		in += s.MsgCounterIn
	}
	if in != 6 {
		t.Fatalf("partitions hold %d messages, want 6", in)
	}
	// Subscription operations on a partitioned topic apply to every
	// partition.
	if err := ac.Subscriptions().Create(pt, "all", utils.Earliest); err != nil {
		t.Fatal(err)
	}
	if subs, err := ac.Subscriptions().List(pt); err != nil || !slices.Equal(subs, []string{"all"}) {
		t.Fatalf("partitioned subscriptions %v %v", subs, err)
	}
	if ps, _ = tp.GetPartitionedStats(pt, false); ps.Subscriptions["all"].MsgBacklog != 6 {
		t.Fatalf("partitioned backlog %+v", ps.Subscriptions["all"])
	}
	if err := ac.Subscriptions().ClearBacklog(pt, "all"); err != nil {
		t.Fatal(err)
	}
	if ps, _ = tp.GetPartitionedStats(pt, false); ps.Subscriptions["all"].MsgBacklog != 0 {
		t.Fatalf("partitioned backlog after skip_all %+v", ps.Subscriptions["all"])
	}
	if err := ac.Subscriptions().Delete(pt, "all"); err != nil {
		t.Fatal(err)
	}
	if err := tp.Delete(pt, true, false); err != nil {
		t.Fatal(err)
	}
}

func TestAdminMetrics(t *testing.T) {
	tb := startBroker(t, nil)
	c := tb.client(t)
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: "persistent://public/default/metrics-t"})
	_ = brokertest.Consumer(t, c, pulsar.ConsumerOptions{Topic: "persistent://public/default/metrics-t", SubscriptionName: "m"})
	for range 3 {
		if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("hello")}); err != nil {
			t.Fatal(err)
		}
	}
	code, body := httpDo(t, tb, "GET", "/metrics", "")
	if code != 200 {
		t.Fatal(code)
	}
	for _, want := range []string{
		`pulsar_in_messages_total{cluster="standalone",namespace="public/default",topic="persistent://public/default/metrics-t"} 3`,
		`pulsar_producers_count{cluster="standalone",namespace="public/default",topic="persistent://public/default/metrics-t"} 1`,
		`pulsar_consumers_count{cluster="standalone",namespace="public/default",topic="persistent://public/default/metrics-t"} 1`,
		`pulsar_subscription_back_log{cluster="standalone",namespace="public/default",subscription="m",topic="persistent://public/default/metrics-t"}`,
		`pulsar_storage_size{`, `pulsar_rate_in{`, `pulsar_msg_backlog{`, `pulsar_throughput_out{`,
		`pulsar_topics_count{cluster="standalone",namespace="public/default"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestAdminBookiesAndBookieMetrics(t *testing.T) {
	var ro atomic.Bool
	tb := startBrokerOpts(t, brokerOpts{bookies: bookieinfo.Local{ID: "127.0.0.1:3181", ReadOnly: ro.Load, Stats: func() map[string]float64 {
		return map[string]float64{"journal_fsync_latency_ms_avg": 1.5, "group_commit_size_avg": 12}
	}}})
	code, body := httpDo(t, tb, "GET", "/admin/v2/bookies/all", "")
	if code != 200 || !strings.Contains(body, `"bookieId":"127.0.0.1:3181","state":"writable"`) {
		t.Fatalf("bookies %d %s", code, body)
	}
	ro.Store(true)
	if _, body = httpDo(t, tb, "GET", "/admin/v2/bookies/all", ""); !strings.Contains(body, `"state":"read-only"`) {
		t.Fatalf("read-only bookie listed as %s", body)
	}
	_, body = httpDo(t, tb, "GET", "/metrics", "")
	for _, want := range []string{
		`bookie_SERVER_STATUS{bookie="127.0.0.1:3181"} 0`,
		`bookie_read_only{bookie="127.0.0.1:3181"} 1`,
		`bookie_journal_fsync_latency_ms_avg{bookie="127.0.0.1:3181"} 1.5`,
		`bookie_group_commit_size_avg{bookie="127.0.0.1:3181"} 12`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
