package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/fakebroker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

func TestParseURLList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		bad  bool
	}{
		{in: "pulsar://a:6650,b:6651", want: "pulsar://a:6650 pulsar://b:6651"},
		{in: "pulsar://a:6650,pulsar+ssl://b:6651/", want: "pulsar://a:6650 pulsar+ssl://b:6651"},
		{in: "http://[::1]:8080", want: "http://[::1]:8080"},
		{in: "", want: ""},
		{in: "a:6650", bad: true},
		{in: "pulsar://a", bad: true},
		{in: "ftp://a:21", bad: true},
	} {
		got, err := parseURLList(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: no error", c.in)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%q: %v %v, want %s", c.in, got, err, c.want)
		}
	}
}

func TestTopicOfPath(t *testing.T) {
	for in, want := range map[string]string{
		"/admin/v2/persistent/t/ns/topic/stats":   "persistent://t/ns/topic",
		"/admin/v2/non-persistent/t/ns/x":         "non-persistent://t/ns/x",
		"/admin/v2/persistent/t/ns":               "",
		"/admin/v2/persistent/t/ns/partitioned":   "",
		"/admin/v2/persistent/t/ns/p/partitions":  "persistent://t/ns/p",
		"/admin/v2/namespaces/t/ns":               "",
		"/lookup/v2/topic/persistent/t/ns/topic":  "",
		"/admin/v2/persistent//ns/topic":          "",
		"/admin/v2/persistent/t/ns/a%2Fb/subscri": "persistent://t/ns/a%2Fb",
	} {
		if got := topicOfPath(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// fakeBroker is a fake broker (protocol/pulsarproto/fakebroker) whose
// LOOKUP answer the test sets (lookup; nil: Connect to itself) and which
// echoes every byte of a relayed connection (one whose CONNECT announces
// supports_auth_refresh, as the proxy's relay does).
type fakeBroker struct {
	*fakebroker.Broker
	lookup func(m *pb.CommandLookupTopic) *pb.CommandLookupTopicResponse
}

func startFakeBroker(t *testing.T) *fakeBroker {
	fb := &fakeBroker{}
	fb.Broker = fakebroker.Start(t, fakebroker.Options{
		Connected: &pb.CommandConnected{ServerVersion: proto.String("fake"), ProtocolVersion: proto.Int32(20)},
		Echo:      func(m *pb.CommandConnect) bool { return m.GetFeatureFlags().GetSupportsAuthRefresh() },
		Lookup: func(m *pb.CommandLookupTopic) *pb.CommandLookupTopicResponse {
			if fb.lookup != nil {
				return fb.lookup(m)
			}
			return &pb.CommandLookupTopicResponse{RequestId: m.RequestId, Response: pb.CommandLookupTopicResponse_Connect.Enum(),
				BrokerServiceUrl: proto.String(fb.URL), Authoritative: proto.Bool(true)}
		},
	})
	return fb
}

func (fb *fakeBroker) url() string { return fb.URL }

func writeCmd(w io.Writer, cmd *pb.BaseCommand) error {
	b, err := pulsarproto.AppendCommand(nil, cmd)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func dialProxy(t *testing.T, p *Proxy, m *pb.CommandConnect) (net.Conn, *pulsarproto.FrameReader, *pb.BaseCommand) {
	t.Helper()
	nc, err := net.Dial("tcp", p.ServiceAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	m.ClientVersion, m.ProtocolVersion = proto.String("test"), proto.Int32(20)
	if err := writeCmd(nc, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: m}); err != nil {
		t.Fatal(err)
	}
	fr := pulsarproto.NewFrameReader(bufio.NewReader(nc), 0)
	f, err := fr.Next()
	if err != nil {
		t.Fatal(err)
	}
	return nc, fr, proto.Clone(f.Cmd).(*pb.BaseCommand)
}

// The proxy follows a redirect from broker A to B, answers Connect with
// B and proxy_through_service_url, relays a connection to B byte for
// byte, and refuses a relay to an address no broker named.
func TestLookupRedirectAndRelay(t *testing.T) {
	a, b := startFakeBroker(t), startFakeBroker(t)
	a.lookup = func(m *pb.CommandLookupTopic) *pb.CommandLookupTopicResponse {
		return &pb.CommandLookupTopicResponse{RequestId: m.RequestId, Response: pb.CommandLookupTopicResponse_Redirect.Enum(),
			BrokerServiceUrl: proto.String(b.url()), Authoritative: proto.Bool(true)}
	}
	b.lookup = func(m *pb.CommandLookupTopic) *pb.CommandLookupTopicResponse {
		if !m.GetAuthoritative() {
			return &pb.CommandLookupTopicResponse{RequestId: m.RequestId, Response: pb.CommandLookupTopicResponse_Failed.Enum(),
				Error: pb.ServerError_ServiceNotReady.Enum(), Message: proto.String("want authoritative")}
		}
		return &pb.CommandLookupTopicResponse{RequestId: m.RequestId, Response: pb.CommandLookupTopicResponse_Connect.Enum(),
			BrokerServiceUrl: proto.String(b.url()), Authoritative: proto.Bool(true)}
	}
	p, err := Start(context.Background(), Config{ServiceAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", BrokerServiceURL: a.url()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	nc, fr, r := dialProxy(t, p, &pb.CommandConnect{})
	if r.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatalf("lookup connection: %v", r)
	}
	// Concurrent lookups on one connection keep their request ids.
	const n = 20
	for i := range n {
		if err := writeCmd(nc, &pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
			Topic: proto.String("persistent://t/ns/x"), RequestId: proto.Uint64(uint64(1000 + i))}}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[uint64]bool{}
	for range n {
		f, err := fr.Next()
		if err != nil {
			t.Fatal(err)
		}
		lr := f.Cmd.GetLookupTopicResponse()
		if lr.GetResponse() != pb.CommandLookupTopicResponse_Connect || lr.GetBrokerServiceUrl() != b.url() ||
			!lr.GetProxyThroughServiceUrl() || !lr.GetAuthoritative() {
			t.Fatalf("lookup answer %v", lr)
		}
		seen[lr.GetRequestId()] = true
	}
	if len(seen) != n {
		t.Fatalf("request ids %v", seen)
	}

	// Relay to B: bytes come back unchanged (B echoes).
	rc, _, r := dialProxy(t, p, &pb.CommandConnect{ProxyToBrokerUrl: proto.String(b.Addr()),
		FeatureFlags: &pb.FeatureFlags{SupportsAuthRefresh: proto.Bool(true)}})
	if r.GetType() != pb.BaseCommand_CONNECTED || r.GetConnected().GetServerVersion() != "fake" {
		t.Fatalf("relay: %v", r)
	}
	payload := make([]byte, 300<<10)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	go func() { _, _ = rc.Write(payload) }()
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(rc, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(payload) {
		t.Fatal("relayed bytes differ")
	}
	if s := p.Stats(); s.BytesIn < int64(len(payload)) || s.BytesOut < int64(len(payload)) || s.ActiveRelays != 1 || s.Lookups != n {
		t.Fatalf("stats %+v", s)
	}
	connects := b.Connects()
	last := connects[len(connects)-1]
	if last.GetClientVersion() != clientVersion || last.OriginalPrincipal != nil {
		t.Fatalf("CONNECT the broker got: %v", last)
	}

	// Not a broker: refused.
	_, _, r = dialProxy(t, p, &pb.CommandConnect{ProxyToBrokerUrl: proto.String(p.HTTPAddr())})
	if r.GetType() != pb.BaseCommand_ERROR || r.GetError().GetError() != pb.ServerError_ServiceNotReady {
		t.Fatalf("relay to a non-broker: %v", r)
	}
	// A client naming an original principal: refused.
	_, _, r = dialProxy(t, p, &pb.CommandConnect{OriginalPrincipal: proto.String("admin")})
	if r.GetType() != pb.BaseCommand_ERROR || r.GetError().GetError() != pb.ServerError_AuthorizationError {
		t.Fatalf("client with original principal: %v", r)
	}
}

// HTTP forwarding follows a broker's 307 inside the proxy, resends the
// body, drops a forged X-Original-Principal and passes the caller's
// Authorization through when the proxy neither authenticates nor has
// credentials of its own.
func TestHTTPForwardFollowsRedirects(t *testing.T) {
	type seen struct{ method, uri, body, authz, orig string }
	got := make(chan seen, 1)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), string(body), r.Header.Get("Authorization"), r.Header.Get("X-Original-Principal")}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNoContent)
	}))
	defer b.Close()
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, b.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer a.Close()
	fb := startFakeBroker(t)
	p, err := Start(context.Background(), Config{ServiceAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		BrokerServiceURL: fb.url(), BrokerWebServiceURL: a.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	req, _ := http.NewRequest("PUT", "http://"+p.HTTPAddr()+"/admin/v2/namespaces/t/ns?x=1", strings.NewReader(`{"k":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer abc")
	req.Header.Set("X-Original-Principal", "admin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
	s := <-got
	if s != (seen{"PUT", "/admin/v2/namespaces/t/ns?x=1", `{"k":1}`, "Bearer abc", ""}) {
		t.Fatalf("broker saw %+v", s)
	}
	// /metrics and /status.html are the proxy's own.
	for _, path := range []string{"/metrics", "/status.html", "/proxy-stats"} {
		r, err := http.Get("http://" + p.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d", path, r.StatusCode)
		}
	}
}
