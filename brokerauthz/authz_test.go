package brokerauthz_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerauthz"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// fixture is a broker with token authentication and authorization, and
// the pulsar-client-go suite's ACL layout: superuser "admin", tenant
// "private" with namespace private/auth where "token-principal" may
// produce and consume.
type fixture struct {
	*brokertest.Broker
	key []byte
}

func start(t *testing.T, features func(*broker.Broker) error) *fixture {
	t.Helper()
	f := &fixture{}
	f.key, _ = auth.NewSecretKey("HS256")
	keyFile := filepath.Join(t.TempDir(), "secret.key")
	if err := os.WriteFile(keyFile, f.key, 0o600); err != nil {
		t.Fatal(err)
	}
	sc := auth.DefaultConfig()
	for k, v := range map[string]string{
		"authenticationEnabled":   "true",
		"authorizationEnabled":    "true",
		"authenticationProviders": "token",
		"tokenSecretKey":          "file://" + keyFile,
		"superUserRoles":          "admin",
	} {
		if err := sc.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	f.Broker = brokertest.Start(t, brokertest.Options{Config: func(c *brokerconf.Config) { c.Security = &sc }, Features: features})
	ctx := context.Background()
	if err := f.Policies().CreateTenant(ctx, "private", policy.TenantInfo{AdminRoles: []string{}, AllowedClusters: []string{"standalone"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Policies().CreateNamespace(ctx, "private/auth", &policy.Policies{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Security().Authz.GrantNamespace(ctx, "private/auth", "token-principal", []string{"produce", "consume"}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) token(t *testing.T, role string) string {
	t.Helper()
	tok, err := auth.CreateToken(f.key, auth.TokenSpec{Subject: role})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (f *fixture) client(t *testing.T, role string) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: f.URL, Authentication: pulsar.NewAuthenticationToken(f.token(t, role)),
		OperationTimeout: 3 * time.Second, ConnectionTimeout: 3 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// dial connects as role and completes CONNECT.
func (f *fixture) dial(t *testing.T, role string) *brokertest.Raw {
	t.Helper()
	r := brokertest.DialAddr(t, f.ServiceAddr())
	r.Send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion: ptr("raw-test"), ProtocolVersion: ptr(int32(20)),
		AuthMethodName: ptr("token"), AuthData: []byte(f.token(t, role)),
	}})
	if fr := r.Next(); fr.Type != pb.BaseCommand_CONNECTED {
		t.Fatalf("%s: handshake answer %v", role, fr.Cmd)
	}
	return r
}

func ptr[T any](v T) *T { return &v }

var topicSeq atomic.Int64

func authTopic() string {
	return fmt.Sprintf("persistent://private/auth/t-%d-%d", time.Now().UnixNano(), topicSeq.Add(1))
}

// TestAuthorization: lookups, producers and consumers need their grants
// (topic or namespace, subscription prefix mode), and a revoke takes
// them away again.
func TestAuthorization(t *testing.T) {
	f := start(t, nil)
	c := f.client(t, "bob")
	topic := authTopic()
	// No grant: lookup (partition metadata) fails with AuthorizationError.
	_, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("producer without grant: %v", err)
	}
	// Nothing was done: the denied lookup did not auto-create the topic.
	ctx := context.Background()
	if ok, err := f.Registry().TopicExists(ctx, topic); ok || err != nil {
		t.Fatalf("denied producer created the topic: %v %v", ok, err)
	}
	if _, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"}); err == nil {
		t.Fatal("consumer without grant")
	}
	// Produce only.
	az := f.Security().Authz
	ref, _ := auth.ParseTopic(topic)
	if err := az.GrantTopic(ctx, ref, "bob", []string{"produce"}); err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatalf("producer with grant: %v", err)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	_, err = c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("consumer with produce grant: %v", err)
	}
	// Consume on the namespace, Prefix mode.
	if err := az.GrantNamespace(ctx, "private/auth", "bob", []string{"consume"}); err != nil {
		t.Fatal(err)
	}
	if err := az.SetSubscriptionAuthMode(ctx, "private/auth", "Prefix"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err == nil || !strings.Contains(err.Error(), "prefixed by the authentication role") {
		t.Fatalf("unprefixed subscription: %v", err)
	}
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "bob-s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatalf("prefixed subscription: %v", err)
	}
	cons.Close()
	// Revoke: lookups fail again (new client: fresh lookups).
	if err := az.RevokeNamespace(ctx, "private/auth", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := az.RevokeTopic(ctx, ref, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client(t, "bob").CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil {
		t.Fatal("producer after revoke")
	}
}

// TestDeniedAnswers: over the raw protocol, each checked core command
// refused is answered in Pulsar's shape, with AuthorizationError.
func TestDeniedAnswers(t *testing.T) {
	f := start(t, nil)
	r := f.dial(t, "bob")
	topic := authTopic()
	r.Send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{Topic: &topic, RequestId: ptr(uint64(1))}})
	if a := r.Next().Cmd.LookupTopicResponse; a == nil || a.GetRequestId() != 1 || a.GetResponse() != pb.CommandLookupTopicResponse_Failed ||
		a.GetError() != pb.ServerError_AuthorizationError || a.GetMessage() != "Client is not authorized to Lookup" {
		t.Fatalf("LOOKUP: %v", a)
	}
	r.Send(&pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA.Enum(), PartitionMetadata: &pb.CommandPartitionedTopicMetadata{Topic: &topic, RequestId: ptr(uint64(2))}})
	if a := r.Next().Cmd.PartitionMetadataResponse; a == nil || a.GetRequestId() != 2 || a.GetError() != pb.ServerError_AuthorizationError {
		t.Fatalf("PARTITIONED_METADATA: %v", a)
	}
	r.Send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{Topic: &topic, ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(3))}})
	if a := r.Next().Cmd.Error; a == nil || a.GetRequestId() != 3 || a.GetError() != pb.ServerError_AuthorizationError ||
		a.GetMessage() != "Client is not authorized to Produce" {
		t.Fatalf("PRODUCER: %v", a)
	}
	r.Send(&pb.BaseCommand{Type: pb.BaseCommand_GET_TOPICS_OF_NAMESPACE.Enum(), GetTopicsOfNamespace: &pb.CommandGetTopicsOfNamespace{Namespace: ptr("private/auth"), RequestId: ptr(uint64(4))}})
	if a := r.Next().Cmd.Error; a == nil || a.GetRequestId() != 4 || a.GetError() != pb.ServerError_AuthorizationError {
		t.Fatalf("GET_TOPICS_OF_NAMESPACE: %v", a)
	}
	// The connection still serves: token-principal's grant lets it look up.
	ok := f.dial(t, "token-principal")
	ok.Send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{Topic: &topic, RequestId: ptr(uint64(5))}})
	if a := ok.Next().Cmd.LookupTopicResponse; a == nil || a.GetResponse() == pb.CommandLookupTopicResponse_Failed {
		t.Fatalf("LOOKUP with grant: %v", a)
	}
}

// commandFeature serves one command.
type commandFeature struct{ broker.Command }

func (commandFeature) Name() string                 { return "cmd" }
func (f commandFeature) Commands() []broker.Command { return []broker.Command{f.Command} }

// TestFeatureCommandAccess: a feature's command with an access rule
// reaches the feature only from a role allowed there (token-principal
// may produce on private/auth, bob may not); a refusal is the command's
// own answer with AuthorizationError.
func TestFeatureCommandAccess(t *testing.T) {
	var served atomic.Int64
	f := start(t, func(b *broker.Broker) error {
		return b.Use(commandFeature{broker.Command{Type: pb.BaseCommand_END_TXN_ON_PARTITION,
			Access: func(cmd *pb.BaseCommand) (string, broker.TopicPermission) {
				return cmd.EndTxnOnPartition.GetTopic(), broker.PermitProduce
			},
			Handle: func(c broker.Conn, cmd *pb.BaseCommand) error {
				served.Add(1)
				c.Send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE.Enum(), EndTxnOnPartitionResponse: &pb.CommandEndTxnOnPartitionResponse{
					RequestId: ptr(cmd.EndTxnOnPartition.GetRequestId())}})
				return nil
			}}})
	})
	for _, tc := range []struct {
		role, topic string
		refused     bool
	}{
		{"token-principal", "persistent://private/auth/acc", false},
		{"bob", "persistent://private/auth/acc", true},
		{"token-principal", "persistent://public/default/acc", true},
	} {
		r := f.dial(t, tc.role)
		before := served.Load()
		r.Send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION.Enum(), EndTxnOnPartition: &pb.CommandEndTxnOnPartition{
			RequestId: ptr(uint64(3)), TxnidMostBits: ptr(uint64(0)), TxnidLeastBits: ptr(uint64(1)), Topic: ptr(tc.topic)}})
		resp := r.Next().Cmd.EndTxnOnPartitionResponse
		if resp == nil || resp.GetRequestId() != 3 {
			t.Fatalf("%s on %s: answer %v", tc.role, tc.topic, resp)
		}
		if got := resp.GetError() == pb.ServerError_AuthorizationError; got != tc.refused {
			t.Fatalf("%s on %s: answer %v, refused=%v want %v", tc.role, tc.topic, resp, got, tc.refused)
		}
		if reached := served.Load() > before; reached == tc.refused {
			t.Fatalf("%s on %s: the handler ran=%v", tc.role, tc.topic, reached)
		}
	}
}

// TestFeatureCommandSuperUserOnly: a feature's SuperUserOnly command (as
// END_TXN_ON_PARTITION is for the transaction feature) from a role that
// is not a superuser is answered with AuthorizationError and never
// reaches the feature; a superuser's is served.
func TestFeatureCommandSuperUserOnly(t *testing.T) {
	var served atomic.Int64
	f := start(t, func(b *broker.Broker) error {
		return b.Use(commandFeature{broker.Command{Type: pb.BaseCommand_END_TXN_ON_PARTITION, SuperUserOnly: true,
			Handle: func(c broker.Conn, cmd *pb.BaseCommand) error {
				served.Add(1)
				m := cmd.EndTxnOnPartition
				c.Send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE.Enum(), EndTxnOnPartitionResponse: &pb.CommandEndTxnOnPartitionResponse{
					RequestId: ptr(m.GetRequestId()), TxnidMostBits: ptr(m.GetTxnidMostBits()), TxnidLeastBits: ptr(m.GetTxnidLeastBits())}})
				return nil
			}}})
	})
	for _, tc := range []struct {
		role    string
		refused bool
	}{{"token-principal", true}, {"admin", false}} {
		r := f.dial(t, tc.role)
		before := served.Load()
		r.Send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION.Enum(), EndTxnOnPartition: &pb.CommandEndTxnOnPartition{
			RequestId: ptr(uint64(7)), TxnidMostBits: ptr(uint64(1)), TxnidLeastBits: ptr(uint64(1 << 63)),
			Topic: ptr("persistent://private/auth/txn-end"), TxnAction: pb.TxnAction_ABORT.Enum(),
		}})
		fr := r.Next()
		resp := fr.Cmd.EndTxnOnPartitionResponse
		if resp == nil || resp.GetRequestId() != 7 || resp.GetTxnidLeastBits() != 1<<63 {
			t.Fatalf("%s: answer %v", tc.role, fr.Cmd)
		}
		if got := resp.GetError() == pb.ServerError_AuthorizationError; got != tc.refused {
			t.Fatalf("%s: answer %v, refused=%v want %v", tc.role, resp, got, tc.refused)
		}
		if reached := served.Load() > before; reached == tc.refused {
			t.Fatalf("%s: the handler ran=%v", tc.role, reached)
		}
	}
}

// TestEnableTwice: one command authorizer per broker.
func TestEnableTwice(t *testing.T) {
	b, err := brokertest.New(t, brokertest.Options{}) // the kit enabled one
	if err != nil {
		t.Fatal(err)
	}
	if _, err := brokerauthz.Enable(b.Broker); !errors.Is(err, broker.ErrBadConfig) {
		t.Fatalf("a second authorizer: %v", err)
	}
}
