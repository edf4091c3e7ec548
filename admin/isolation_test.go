package admin

import (
	"net/http"
	"strings"
	"testing"
)

// TestIsolationStatuses: the failure-domain and isolation-policy routes
// answer Pulsar's status codes and texts on their error paths.
func TestIsolationStatuses(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.Config().ClusterName
	c := "/admin/v2/clusters/" + cl
	const pol = `{"namespaces":["public/iso-.*"],"primary":["b1.*"],"secondary":[],` +
		`"auto_failover_policy":{"policy_type":"min_available","parameters":{"min_limit":"1","usage_threshold":"80"}}}`
	steps := []struct {
		method, path, body string
		code               int
		text               string
	}{
		{"GET", "/admin/v2/clusters/nope/failureDomains/d1", "", http.StatusPreconditionFailed, "Cluster nope does not exist."},
		{"GET", "/admin/v2/clusters/nope/namespaceIsolationPolicies", "", http.StatusNotFound, "Cluster nope does not exist."},
		{"GET", "/admin/v2/clusters/nope/failureDomains", "", http.StatusOK, "{}"},
		{"POST", c + "/failureDomains/d1", `{"brokers":`, http.StatusBadRequest, "body must be a FailureDomain"},
		{"GET", c + "/failureDomains/d1", "", http.StatusNotFound, ""},
		{"POST", c + "/failureDomains/d1", `{"brokers":["b1:8080"]}`, http.StatusNoContent, ""},
		{"POST", c + "/failureDomains/d2", `{"brokers":["b1:8080"]}`, http.StatusConflict, ""},
		{"GET", c + "/failureDomains/d1", "", http.StatusOK, `"b1:8080"`},
		{"DELETE", c + "/failureDomains/d1", "", http.StatusOK, ""},
		{"GET", c + "/namespaceIsolationPolicies/p1", "", http.StatusNotFound, "not found"},
		{"POST", c + "/namespaceIsolationPolicies/p0", pol, http.StatusNoContent, ""},
		{"GET", c + "/namespaceIsolationPolicies/p1", "", http.StatusNotFound, "Cannot find NamespaceIsolationPolicy p1 for cluster " + cl},
		{"GET", c + "/namespaceIsolationPolicies/p0", "", http.StatusOK, `"public/iso-.*"`},
		{"POST", c + "/namespaceIsolationPolicies/p1", `[`, http.StatusBadRequest, "body must be a NamespaceIsolationData"},
		{"GET", c + "/namespaceIsolationPolicies/bad%20name", "", http.StatusPreconditionFailed, "invalid policy name"},
		{"DELETE", c + "/namespaceIsolationPolicies/p0", "", http.StatusNoContent, ""},
		{"GET", c + "/namespaceIsolationPolicies/brokers/b9:8080", "", http.StatusOK, `"b9:8080"`},
	}
	for _, s := range steps {
		code, body := httpDo(t, tb, s.method, s.path, s.body)
		if code != s.code || !strings.Contains(body, s.text) {
			t.Errorf("%s %s: %d %s; want %d with %q", s.method, s.path, code, body, s.code, s.text)
		}
	}
}
