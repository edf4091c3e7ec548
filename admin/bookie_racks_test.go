package admin

import (
	"context"
	"testing"

	"github.com/magnetar-mq/magnetar/ledger"
)

// TestRacksInfo: the bookies' rack information (Pulsar's racks-info),
// superusers only, written where ledger placement reads it.
func TestRacksInfo(t *testing.T) {
	s := startSecAdmin(t)
	const base = "/admin/v2/bookies/racks-info"
	s.call(t, "root", "GET", base+"/b1:3181", "", 404)
	s.call(t, "acme-admin", "POST", base+"/b1:3181?group=g1", `{"rack":"/r1"}`, 403)
	s.call(t, "root", "POST", base+"/b1:3181?group=g1", `{"rack":"/r1","hostname":"b1"}`, 204)
	s.call(t, "root", "POST", base+"/b2:3181?group=g1", `{"rack":"/r2"}`, 204)
	s.call(t, "root", "POST", base+"/b2:3181?group=g2", `{"rack":"/r2"}`, 204) // moves b2
	var ri ledger.RackInfo
	s.getJSON(t, "root", base, &ri)
	want := ledger.RackInfo{"g1": {"b1:3181": {Rack: "/r1", Hostname: "b1"}}, "g2": {"b2:3181": {Rack: "/r2"}}}
	if len(ri) != 2 || ri["g1"]["b1:3181"] != want["g1"]["b1:3181"] || ri["g2"]["b2:3181"] != want["g2"]["b2:3181"] || len(ri["g1"]) != 1 {
		t.Fatalf("racks-info %+v, want %+v", ri, want)
	}
	var bi ledger.BookieInfo
	if s.getJSON(t, "root", base+"/b1:3181", &bi); bi.Rack != "/r1" {
		t.Fatalf("b1's entry %+v", bi)
	}
	// Placement reads the same node.
	stored, err := ledger.ReadRackInfo(context.Background(), s.Metadata())
	if err != nil || stored["g2"]["b2:3181"].Rack != "/r2" {
		t.Fatalf("the rack node as placement reads it: %+v %v", stored, err)
	}
	s.call(t, "root", "POST", base+"/b3?group=../x", `{"rack":"/r"}`, 412)
	s.call(t, "root", "POST", base+"/b3", `{"rack":"/r"}`, 412)
	s.call(t, "root", "POST", base+"/b3?group=g", `{"rack":"/../../etc"}`, 412)
	s.call(t, "root", "POST", base+"/b3?group=g", `nope`, 400)
	s.call(t, "root", "DELETE", base+"/b2:3181", "", 204)
	s.call(t, "root", "GET", base+"/b2:3181", "", 404)
}
