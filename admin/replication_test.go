package admin

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestClusterRegistryCRUD: create, read, update and delete a cluster with
// Pulsar's ClusterData fields and status codes, through the Go admin
// client and raw HTTP.
func TestClusterRegistryCRUD(t *testing.T) {
	tb, ac := startAdmin(t)
	// The local cluster registered itself with its URLs.
	local, err := ac.Clusters().Get("standalone")
	if err != nil || local.ServiceURL != "http://"+tb.HTTPAddr() || local.BrokerServiceURL == "" {
		t.Fatalf("local cluster = %+v, %v", local, err)
	}
	cd := utils.ClusterData{Name: "east", ServiceURL: "http://east.example:8080", BrokerServiceURL: "pulsar://east.example:6650",
		BrokerServiceURLTls: "pulsar+ssl://east.example:6651"}
	if err := ac.Clusters().Create(cd); err != nil {
		t.Fatal(err)
	}
	if code, body := httpDo(t, tb, "PUT", "/admin/v2/clusters/east", `{"serviceUrl":"http://x:1"}`); code != http.StatusConflict {
		t.Fatalf("second create: %d %s", code, body)
	}
	for _, bad := range []string{`{"serviceUrl":"ftp://x:1"}`, `{"brokerServiceUrl":"http://x:1"}`, `{"serviceUrlTls":"http://x"}`, `not json`} {
		if code, body := httpDo(t, tb, "PUT", "/admin/v2/clusters/west", bad); code != http.StatusBadRequest {
			t.Fatalf("create with %s: %d %s", bad, code, body)
		}
	}
	if code, _ := httpDo(t, tb, "PUT", "/admin/v2/clusters/global", `{}`); code != http.StatusPreconditionFailed {
		t.Fatalf("cluster named global: %d", code)
	}
	got, err := ac.Clusters().Get("east")
	if err != nil || got.BrokerServiceURL != cd.BrokerServiceURL || got.BrokerServiceURLTls != cd.BrokerServiceURLTls {
		t.Fatalf("get east = %+v, %v", got, err)
	}
	// Unknown fields are accepted; update replaces the whole object.
	if code, body := httpDo(t, tb, "POST", "/admin/v2/clusters/east", `{"serviceUrl":"http://e2:8080","brokerServiceUrl":"pulsar://e2:6650","futureField":1}`); code != http.StatusNoContent {
		t.Fatalf("update: %d %s", code, body)
	}
	code, body := httpDo(t, tb, "GET", "/admin/v2/clusters/east", "")
	var raw map[string]any
	if code != http.StatusOK || json.Unmarshal([]byte(body), &raw) != nil || raw["brokerServiceUrl"] != "pulsar://e2:6650" || raw["brokerServiceUrlTls"] != nil {
		t.Fatalf("after update: %d %s", code, body)
	}
	if code, _ := httpDo(t, tb, "POST", "/admin/v2/clusters/nowhere", `{}`); code != http.StatusNotFound {
		t.Fatalf("update missing: %d", code)
	}
	names, err := ac.Clusters().List()
	if err != nil || !slices.Equal(names, []string{"east", "standalone"}) {
		t.Fatalf("list = %v, %v", names, err)
	}
	// A cluster in use by a namespace cannot be deleted.
	if err := ac.Tenants().Create(utils.TenantData{Name: "geo", AllowedClusters: []string{"standalone", "east"}}); err != nil {
		t.Fatal(err)
	}
	if code, body := httpDo(t, tb, "PUT", "/admin/v2/namespaces/geo/ns", `{"replication_clusters":["standalone","east"]}`); code != http.StatusNoContent {
		t.Fatalf("create ns: %d %s", code, body)
	}
	if code, _ := httpDo(t, tb, "DELETE", "/admin/v2/clusters/east", ""); code != http.StatusPreconditionFailed {
		t.Fatalf("delete cluster in use: %d", code)
	}
	if code, _ := httpDo(t, tb, "DELETE", "/admin/v2/clusters/standalone", ""); code != http.StatusPreconditionFailed {
		t.Fatalf("delete local cluster: %d", code)
	}
	if code, body := httpDo(t, tb, "POST", "/admin/v2/namespaces/geo/ns/replication", `["standalone"]`); code != http.StatusNoContent {
		t.Fatalf("set replication: %d %s", code, body)
	}
	if err := ac.Clusters().Delete("east"); err != nil {
		t.Fatal(err)
	}
	if code, _ := httpDo(t, tb, "GET", "/admin/v2/clusters/east", ""); code != http.StatusNotFound {
		t.Fatalf("get deleted: %d", code)
	}
}

// TestNamespaceReplicationChecks: /replication GET/POST with Pulsar's
// checks in order, and topic-level overrides.
func TestNamespaceReplicationChecks(t *testing.T) {
	tb, ac := startAdmin(t)
	for _, c := range []string{"r2", "r3"} {
		if err := ac.Clusters().Create(utils.ClusterData{Name: c, BrokerServiceURL: "pulsar://" + c + ":6650"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ac.Tenants().Create(utils.TenantData{Name: "geo", AllowedClusters: []string{"standalone", "r2"}}); err != nil {
		t.Fatal(err)
	}
	if err := ac.Namespaces().CreateNamespace("geo/ns"); err != nil {
		t.Fatal(err)
	}
	base := "/admin/v2/namespaces/geo/ns/replication"
	cases := []struct {
		body string
		code int
	}{
		{`[]`, http.StatusPreconditionFailed},
		{`["standalone","global"]`, http.StatusPreconditionFailed},
		{`["standalone","nope"]`, http.StatusForbidden},
		{`["standalone","r3"]`, http.StatusForbidden}, // not allowed for the tenant
		{`"x"`, http.StatusBadRequest},
	}
	for _, c := range cases {
		if code, body := httpDo(t, tb, "POST", base, c.body); code != c.code {
			t.Errorf("POST %s: %d %s, want %d", c.body, code, body, c.code)
		}
	}
	if err := ac.Namespaces().SetNamespaceReplicationClusters("geo/ns", []string{"r2", "standalone", "r2"}); err != nil {
		t.Fatal(err)
	}
	got, err := ac.Namespaces().GetNamespaceReplicationClusters("geo/ns")
	if err != nil || !slices.Equal(got, []string{"r2", "standalone"}) {
		t.Fatalf("replication clusters = %v, %v", got, err)
	}
	// Peers may not both be replication clusters.
	if code, body := httpDo(t, tb, "POST", "/admin/v2/clusters/r2/peers", `["standalone"]`); code != http.StatusNoContent {
		t.Fatalf("set peers: %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "POST", base, `["standalone","r2"]`); code != http.StatusConflict {
		t.Fatalf("peer conflict: %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "POST", "/admin/v2/clusters/r2/peers", `[]`); code != http.StatusNoContent {
		t.Fatalf("clear peers: %d %s", code, body)
	}
	// Topic-level override.
	tp := "/admin/v2/persistent/geo/ns/t1/replication"
	if code, body := httpDo(t, tb, "GET", tp, ""); code != http.StatusOK || body != "[]" {
		t.Fatalf("unset override: %d %q", code, body)
	}
	if code, body := httpDo(t, tb, "GET", tp+"?applied=true", ""); code != http.StatusOK || !json.Valid([]byte(body)) || !containsAll(body, "r2", "standalone") {
		t.Fatalf("applied: %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "POST", tp, `["standalone"]`); code != http.StatusNoContent {
		t.Fatalf("set override: %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "GET", "/admin/v2/persistent/geo/ns/t1-partition-3/replication", ""); code != http.StatusOK || containsAll(body, "r2") || !containsAll(body, "standalone") {
		t.Fatalf("partition sees the parent's override: %d %s", code, body)
	}
	if code, _ := httpDo(t, tb, "POST", tp, `["r3"]`); code != http.StatusForbidden {
		t.Fatalf("override with a cluster the tenant does not allow: %d", code)
	}
	if code, _ := httpDo(t, tb, "DELETE", tp, ""); code != http.StatusNoContent {
		t.Fatalf("delete override: %d", code)
	}
	if code, body := httpDo(t, tb, "GET", tp, ""); code != http.StatusOK || containsAll(body, "standalone") {
		t.Fatalf("after delete: %d %s", code, body)
	}
}

func containsAll(body string, words ...string) bool {
	var list []string
	if json.Unmarshal([]byte(body), &list) != nil {
		return false
	}
	for _, w := range words {
		if !slices.Contains(list, w) {
			return false
		}
	}
	return true
}

// TestReplicatedSubscriptionStatus: create a subscription replicated,
// toggle it, and the errors.
func TestReplicatedSubscriptionStatus(t *testing.T) {
	tb := startBroker(t, nil)
	base := "/admin/v2/persistent/public/default/rsub"
	if code, body := httpDo(t, tb, "PUT", base, ""); code != http.StatusNoContent {
		t.Fatalf("create topic: %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "PUT", base+"/subscription/s?replicated=true", ""); code != http.StatusNoContent {
		t.Fatalf("create subscription: %d %s", code, body)
	}
	replicated := func() bool {
		t.Helper()
		code, body := httpDo(t, tb, "GET", base+"/stats", "")
		var st struct {
			Subscriptions map[string]struct {
				IsReplicated bool `json:"isReplicated"`
			} `json:"subscriptions"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("stats: %d %s", code, body)
		}
		return st.Subscriptions["s"].IsReplicated
	}
	if !replicated() {
		t.Fatal("created with replicated=true but not replicated")
	}
	if code, body := httpDo(t, tb, "POST", base+"/subscription/s/replicatedSubscriptionStatus", "false"); code != http.StatusNoContent || replicated() {
		t.Fatalf("turn off: %d %s", code, body)
	}
	if code, _ := httpDo(t, tb, "POST", base+"/subscription/s/replicatedSubscriptionStatus", "maybe"); code != http.StatusBadRequest {
		t.Fatalf("bad body: %d", code)
	}
	if code, _ := httpDo(t, tb, "POST", base+"/subscription/nope/replicatedSubscriptionStatus", "true"); code != http.StatusNotFound {
		t.Fatalf("missing subscription: %d", code)
	}
	if code, _ := httpDo(t, tb, "PUT", base+"/subscription/pulsar.repl.x", ""); code != http.StatusPreconditionFailed {
		t.Fatalf("reserved subscription name: %d", code)
	}
}
