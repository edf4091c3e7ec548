package broker

import (
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

func httpDo(t testing.TB, tb *testBroker, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+tb.HTTPAddr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRouterPrefersLiteralSegments(t *testing.T) {
	rt := newRouter()
	var hit string
	rt.Handle("GET", "/a/{x}/{y}", func(http.ResponseWriter, *http.Request, Params) { hit = "wild" })
	rt.Handle("GET", "/a/lit/{y}", func(_ http.ResponseWriter, _ *http.Request, p Params) { hit = "lit:" + p["y"] })
	rt.Handle("GET", "/r/{rest...}", func(_ http.ResponseWriter, _ *http.Request, p Params) { hit = "rest:" + p["rest"] })
	for path, want := range map[string]string{"/a/lit/q": "lit:q", "/a/b/c": "wild", "/r/x/y%2Fz": "rest:x/y/z"} {
		hit = ""
		req, _ := http.NewRequest("GET", path, nil)
		rt.ServeHTTP(discardWriter{}, req)
		if hit != want {
			t.Errorf("%s -> %q, want %q", path, hit, want)
		}
	}
}

type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}

func TestRawSchemaAndNamespaceCommands(t *testing.T) {
	// Schema types other than AVRO/JSON are compatible only when equal:
	// this test registers two STRING versions, so it allows any change.
	tb := startBroker(t, func(c *Config) { c.SchemaCompatibilityStrategy = "ALWAYS_COMPATIBLE" })
	r := dialRaw(t, tb, true)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_TOPICS_OF_NAMESPACE.Enum(), GetTopicsOfNamespace: &pb.CommandGetTopicsOfNamespace{
		RequestId: ptr(uint64(1)), Namespace: ptr("nope/nothing"),
	}})
	f := r.next()
	if f.Type != pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE || len(f.Cmd.GetTopicsOfNamespaceResponse.Topics) != 0 {
		t.Fatalf("unknown namespace: %s %v", f.Type, f.Cmd)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA.Enum(), GetSchema: &pb.CommandGetSchema{
		RequestId: ptr(uint64(2)), Topic: ptr("sch"),
	}})
	f = r.next()
	if f.Type != pb.BaseCommand_GET_SCHEMA_RESPONSE || f.Cmd.GetSchemaResponse.Schema != nil || f.Cmd.GetSchemaResponse.ErrorMessage == nil {
		t.Fatalf("GET_SCHEMA without schema: %v", f.Cmd)
	}
	for i, data := range []string{"s1", "s2", "s1"} {
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA.Enum(), GetOrCreateSchema: &pb.CommandGetOrCreateSchema{
			RequestId: ptr(uint64(3 + i)), Topic: ptr("persistent://public/default/sch-partition-1"),
			Schema: &pb.Schema{Name: ptr("x"), SchemaData: []byte(data), Type: pb.Schema_String.Enum()},
		}})
		f = r.next()
		v := f.Cmd.GetOrCreateSchemaResponse.SchemaVersion
		want := []uint64{0, 1, 0}[i]
		if len(v) != 8 || binary.BigEndian.Uint64(v) != want {
			t.Fatalf("GET_OR_CREATE_SCHEMA %s: version %x, want %d", data, v, want)
		}
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA.Enum(), GetSchema: &pb.CommandGetSchema{
		RequestId: ptr(uint64(9)), Topic: ptr("sch"),
	}})
	f = r.next()
	if s := f.Cmd.GetSchemaResponse.Schema; s == nil || string(s.SchemaData) != "s2" {
		t.Fatalf("GET_SCHEMA latest: %v", f.Cmd)
	}
}

func TestAutoCreationDisabled(t *testing.T) {
	tb := startBroker(t, func(c *Config) { c.DisableAutoTopicCreation = true })
	r := dialRaw(t, tb, true)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr("no-such-topic"), ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(1)),
	}})
	f := r.next()
	if f.Type != pb.BaseCommand_ERROR || f.Cmd.Error.GetError() != pb.ServerError_TopicNotFound {
		t.Fatalf("PRODUCER on missing topic: %s %v", f.Type, f.Cmd)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
		Topic: ptr("t/ns-missing/x"), RequestId: ptr(uint64(2)),
	}})
	f = r.next()
	if f.Cmd.LookupTopicResponse.GetResponse() != pb.CommandLookupTopicResponse_Failed {
		t.Fatalf("lookup in missing namespace: %v", f.Cmd)
	}
}
