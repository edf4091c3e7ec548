package georep

import (
	"math"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/policy"
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
	cps := []clusterPos{{"a", storage.Position{LedgerID: 0, EntryID: 0}}, {"b", storage.Position{LedgerID: math.MaxInt64, EntryID: math.MaxInt64}}}
	var p []byte
	p = appendStr(p, 1, "snap-1")
	p = appendMsgID(p, 2, storage.Position{LedgerID: 7, EntryID: 9})
	for _, c := range cps {
		p = appendClusterPos(p, 3, c)
	}
	f, err := parseMarkerFields(p)
	if err != nil || f.str[1] != "snap-1" || len(f.nested[2]) != 1 {
		t.Fatalf("fields %+v, %v", f, err)
	}
	local, err := parseMsgID(f.nested[2][0])
	if err != nil || local != (storage.Position{LedgerID: 7, EntryID: 9}) {
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

// TestReplTargetFallsBackToBrokerCredentials: a ClusterData without an
// authenticationPlugin takes the broker's own credentials (Pulsar's
// replication client with authentication on); one with its own keeps
// them; the broker's TLS certificate is presented only over TLS.
func TestReplTargetFallsBackToBrokerCredentials(t *testing.T) {
	tok, err := auth.ParseClientAuth("org.apache.pulsar.client.impl.auth.AuthenticationToken", "token:mine")
	if err != nil {
		t.Fatal(err)
	}
	cd := policy.ClusterData{BrokerServiceURL: "pulsar://remote:6650"}
	if to, err := replTargetOf("r", cd, tok); err != nil || to.auth.method != "token" || string(to.auth.data) != "mine" {
		t.Fatalf("no cluster credentials: %+v %v", to, err)
	}
	if to, err := replTargetOf("r", cd, nil); err != nil || to.auth.method != "" {
		t.Fatalf("no credentials at all: %+v %v", to, err)
	}
	own := cd
	own.AuthenticationPlugin, own.AuthenticationParameters = "token", "token:theirs"
	if to, err := replTargetOf("r", own, tok); err != nil || string(to.auth.data) != "theirs" {
		t.Fatalf("cluster credentials: %+v %v", to, err)
	}
	cert, err := auth.ParseClientAuth("tls", "tlsCertFile:/c.pem,tlsKeyFile:/k.pem")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replTargetOf("r", cd, cert); err == nil {
		t.Fatal("a TLS identity over plaintext was taken")
	}
	tlsCD := policy.ClusterData{BrokerServiceURLTLS: "pulsar+ssl://remote:6651", BrokerClientTLSEnabled: true}
	if to, err := replTargetOf("r", tlsCD, cert); err != nil || to.auth.method != "tls" || to.certFile != "/c.pem" || to.keyFile != "/k.pem" {
		t.Fatalf("broker certificate over TLS: %+v %v", to, err)
	}
}
