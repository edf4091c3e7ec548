package georep

import (
	"math"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/broker"
)

func TestReplicatorNames(t *testing.T) {
	if got := replProducerName("us-east", "eu"); got != "pulsar.repl.us-east-->eu" {
		t.Fatalf("producer name %q", got)
	}
	for name, want := range map[string]string{
		"pulsar.repl.us-east-->eu": "us-east",
		"pulsar.repl.old":          "old", // older Pulsar: no "-->"
		"pulsar.replx":             "",
		"producer-1":               "",
		"":                         "",
	} {
		if got := broker.ReplicatorOrigin(name); got != want {
			t.Errorf("broker.ReplicatorOrigin(%q) = %q, want %q", name, got, want)
		}
	}
	for u, want := range map[string]string{
		"pulsar://h:6650":           "h:6650",
		"pulsar://h1:6650,h2:6650/": "h1:6650",
		"pulsar+ssl://h:6651":       "h:6651",
		"http://h:8080":             "",
		"pulsar://":                 "",
	} {
		got, err := hostOf(u)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("hostOf(%q) = %q, %v; want %q", u, got, err, want)
		}
	}
	if a, err := replAuthFrom("org.apache.pulsar.client.impl.auth.AuthenticationToken", "token:abc"); err != nil || a.method != "token" || string(a.data) != "abc" {
		t.Fatalf("token auth = %+v, %v", a, err)
	}
	if a, err := replAuthFrom("org.apache.pulsar.client.impl.auth.AuthenticationTls", ""); err != nil || a.method != "tls" {
		t.Fatalf("tls auth = %+v, %v", a, err)
	}
	if _, err := replAuthFrom("org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2", "{}"); err == nil {
		t.Fatal("unsupported plugin accepted")
	}
}

// TestMarkerPayloadsRoundTrip: the marker encodings decode back, at the
// int64 limits of positions.
func TestMarkerPayloadsRoundTrip(t *testing.T) {
	cps := []clusterPos{{"a", broker.Position{LedgerID: 0, EntryID: 0}}, {"b", broker.Position{LedgerID: math.MaxInt64, EntryID: math.MaxInt64}}}
	var p []byte
	p = appendStr(p, 1, "snap-1")
	p = appendMsgID(p, 2, broker.Position{LedgerID: 7, EntryID: 9})
	for _, c := range cps {
		p = appendClusterPos(p, 3, c)
	}
	f, err := parseMarkerFields(p)
	if err != nil || f.str[1] != "snap-1" || len(f.nested[2]) != 1 {
		t.Fatalf("fields %+v, %v", f, err)
	}
	local, err := parseMsgID(f.nested[2][0])
	if err != nil || local != (broker.Position{LedgerID: 7, EntryID: 9}) {
		t.Fatalf("local %v, %v", local, err)
	}
	got, err := parseClusterList(f.nested[3])
	if err != nil || !slices.Equal(got, cps) {
		t.Fatalf("clusters %v, %v", got, err)
	}
	for _, bad := range [][]byte{{0xff}, {0x0a, 0x05, 'x'}, {0x12, 0x01, 0x08}} {
		if f, err := parseMarkerFields(bad); err == nil {
			if _, err := parseClusterList(f.nested[2]); err == nil && len(f.nested[2]) > 0 {
				t.Errorf("malformed %x accepted", bad)
			}
		}
	}
}
