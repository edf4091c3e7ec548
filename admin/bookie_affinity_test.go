package admin

import (
	"testing"

	"github.com/magnetar-mq/magnetar/policy"
)

// TestBookieAffinityGroup: none set (204, Pulsar's null), set, read back,
// refuse bad group names, delete (204 again; deleting none is done too),
// superusers only; the namespace's topics resolve the group (the broker
// places their new ledgers by it).
func TestBookieAffinityGroup(t *testing.T) {
	s := startSecAdmin(t)
	const p = "/admin/v2/namespaces/acme/ns/persistence/bookieAffinity"
	if body := s.call(t, "root", "GET", p, "", 204); body != "" {
		t.Fatalf("no group: %q", body)
	}
	s.call(t, "root", "DELETE", p, "", 204)
	s.call(t, "root", "GET", "/admin/v2/namespaces/acme/nope/persistence/bookieAffinity", "", 404)
	s.call(t, "acme-admin", "POST", p, `{"bookkeeperAffinityGroupPrimary":"g1"}`, 403)
	s.call(t, "acme-admin", "GET", p, "", 403)
	s.call(t, "root", "POST", p, `{"bookkeeperAffinityGroupPrimary":"g1,g2","bookkeeperAffinityGroupSecondary":"g3"}`, 204)
	var got policy.BookieAffinityGroup
	s.getJSON(t, "root", p, &got)
	if got != (policy.BookieAffinityGroup{Primary: "g1,g2", Secondary: "g3"}) {
		t.Fatalf("read back %+v", got)
	}
	topic := "persistent://acme/ns/placed"
	s.produce(t, "acme-admin", topic, "x")
	if r := s.AppliedPolicies(topic); r == nil || r.BookieAffinity == nil || *r.BookieAffinity != got {
		t.Fatalf("the topic's applied policy: %+v", r)
	}
	s.call(t, "root", "POST", p, `{"bookkeeperAffinityGroupPrimary":"../etc"}`, 412)
	s.call(t, "root", "POST", p, `not json`, 400)
	s.call(t, "root", "POST", "/admin/v2/namespaces/acme/nope/persistence/bookieAffinity", `{"bookkeeperAffinityGroupPrimary":"g1"}`, 404)
	s.call(t, "root", "DELETE", p, "", 204)
	s.call(t, "root", "GET", p, "", 204)
}
