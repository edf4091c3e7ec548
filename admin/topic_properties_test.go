package admin

import (
	"maps"
	"net/http"
	"strings"
	"testing"
)

// TestTopicPropertiesRoundTripAndRestart: create with properties, update
// (merge), remove a key, for a non-partitioned and a partitioned topic;
// the properties survive a broker restart and go with the topic.
func TestTopicPropertiesRoundTripAndRestart(t *testing.T) {
	r, tb := startRestartable(t)
	ac := adminClient(t, tb)
	np := mustTopic(t, "persistent://public/default/"+uniqueName("props"))
	pt := mustTopic(t, "persistent://public/default/"+uniqueName("pprops"))
	if err := ac.Topics().CreateWithProperties(np, 0, map[string]string{"owner": "team-a", "tier": "1"}); err != nil {
		t.Fatal(err)
	}
	if err := ac.Topics().CreateWithProperties(pt, 3, map[string]string{"owner": "team-b"}); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want map[string]map[string]string) {
		t.Helper()
		for name, w := range want {
			got, err := ac.Topics().GetProperties(mustTopic(t, name))
			if err != nil || !maps.Equal(got, w) {
				t.Fatalf("%s: properties of %s %v %v, want %v", when, name, got, err, w)
			}
		}
	}
	check("created", map[string]map[string]string{
		np.String(): {"owner": "team-a", "tier": "1"},
		pt.String(): {"owner": "team-b"},
	})
	if err := ac.Topics().UpdateProperties(np, map[string]string{"tier": "2", "region": "eu"}); err != nil {
		t.Fatal(err)
	}
	if err := ac.Topics().UpdateProperties(pt, map[string]string{"x": ""}); err != nil {
		t.Fatal(err)
	}
	if err := ac.Topics().RemoveProperty(np, "owner"); err != nil {
		t.Fatal(err)
	}
	if err := ac.Topics().RemoveProperty(np, "absent"); err != nil {
		t.Fatalf("removing an absent key: %v", err)
	}
	want := map[string]map[string]string{
		np.String(): {"tier": "2", "region": "eu"},
		pt.String(): {"owner": "team-b", "x": ""},
	}
	check("updated", want)
	if err := ac.Topics().Update(pt, 4); err != nil {
		t.Fatal(err)
	}
	tb = r.restart(t)
	ac = adminClient(t, tb)
	check("after restart", want)

	// Refusals: no key, no map, empty key, too big, unknown topic,
	// non-persistent creation with properties.
	base := "/admin/v2/persistent/public/default/" + np.GetLocalName() + "/properties"
	mustHTTP(t, tb, "DELETE", base, "", http.StatusPreconditionFailed)
	mustHTTP(t, tb, "PUT", base, "", http.StatusPreconditionFailed)
	mustHTTP(t, tb, "PUT", base, `["a"]`, http.StatusPreconditionFailed)
	mustHTTP(t, tb, "PUT", base, `{"":"v"}`, http.StatusPreconditionFailed)
	mustHTTP(t, tb, "PUT", base, `{"big":"`+strings.Repeat("v", 70<<10)+`"}`, http.StatusPreconditionFailed)
	mustHTTP(t, tb, "GET", "/admin/v2/persistent/public/default/nope/properties", "", http.StatusNotFound)
	mustHTTP(t, tb, "PUT", "/admin/v2/persistent/public/default/nope/properties", `{"a":"b"}`, http.StatusNotFound)
	mustHTTP(t, tb, "PUT", "/admin/v2/non-persistent/public/default/np-props", `{"a":"b"}`, http.StatusPreconditionFailed)
	check("after refusals", want)

	// Deleting and re-creating the topic starts without properties.
	if err := ac.Topics().Delete(np, true, true); err != nil {
		t.Fatal(err)
	}
	if err := ac.Topics().Create(np, 0); err != nil {
		t.Fatal(err)
	}
	check("re-created", map[string]map[string]string{np.String(): {}})
}
