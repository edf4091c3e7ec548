package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// allowCommands is a CommandAuthorizer that allows every command: the
// core's security tests (authentication, TLS) run with it; package
// brokerauthz has the real rules and their tests.
type allowCommands struct{}

func (allowCommands) Name() string { return "allow-commands" }
func (allowCommands) AuthorizeCommand(context.Context, []string, *pulsarproto.Frame, *Command) *Denial {
	return nil
}

// denyCommands refuses every command it is asked about, counting them.
type denyCommands struct{ asked *atomic.Int64 }

func (denyCommands) Name() string { return "deny-commands" }
func (d denyCommands) AuthorizeCommand(_ context.Context, _ []string, f *pulsarproto.Frame, _ *Command) *Denial {
	d.asked.Add(1)
	rid := f.Cmd.Producer.GetRequestId() // the test sends PRODUCER
	return &Denial{Answer: &pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{
		RequestId: &rid, Error: pb.ServerError_AuthorizationError.Enum(), Message: ptr("no")}}, Op: "test"}
}

// authzConfig is a security configuration with authorization on, token
// authentication, and the role "anonymous" for clients without
// credentials.
func authzConfig(t *testing.T) *auth.Config {
	t.Helper()
	key, _ := auth.NewSecretKey("HS256")
	keyFile := filepath.Join(t.TempDir(), "secret.key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	sc := auth.DefaultConfig()
	for k, v := range map[string]string{"authenticationEnabled": "true", "authorizationEnabled": "true",
		"authenticationProviders": "token", "tokenSecretKey": "file://" + keyFile, "anonymousUserRole": "anonymous"} {
		if err := sc.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	return &sc
}

// TestAuthorizationFailsClosed: with authorization on, a broker without
// a CommandAuthorizer refuses to start; off, it needs none.
func TestAuthorizationFailsClosed(t *testing.T) {
	for _, on := range []bool{true, false} {
		cfg := brokerconf.Config{ServiceAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"}
		if on {
			cfg.Security = authzConfig(t)
		}
		b, err := New(cfg, Deps{Metadata: memmeta.New(), OpenLedger: func(context.Context, string) (storage.ManagedLedger, error) {
			return nil, errors.New("no ledgers")
		}})
		if err != nil {
			t.Fatal(err)
		}
		err = b.Start(context.Background())
		b.Close()
		if on && !errors.Is(err, ErrBadConfig) {
			t.Fatalf("authorization on, no authorizer: Start = %v, want ErrBadConfig", err)
		}
		if !on && err != nil {
			t.Fatalf("authorization off: Start = %v", err)
		}
	}
	// Two authorizers are refused at Use.
	b, err := New(brokerconf.Config{}, Deps{Metadata: memmeta.New(), OpenLedger: func(context.Context, string) (storage.ManagedLedger, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Use(allowCommands{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Use(denyCommands{}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("second authorizer: %v", err)
	}
}

// TestCommandDenied: the core asks the authorizer before serving a
// command naming a topic, sends its refusal and serves nothing (the
// denied PRODUCER creates no producer; the connection stays up).
func TestCommandDenied(t *testing.T) {
	var asked atomic.Int64
	tb := startBrokerOpts(t, brokerOpts{cfg: func(c *brokerconf.Config) { c.Security = authzConfig(t) },
		use: []func(*Broker) error{func(b *Broker) error { return b.Use(denyCommands{&asked}) }}})
	r := dialRaw(t, tb, true)
	topic := "persistent://public/default/" + newTopicName("denied")
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: &topic, ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(9))}})
	if a := r.next().Cmd.Error; a == nil || a.GetRequestId() != 9 || a.GetError() != pb.ServerError_AuthorizationError {
		t.Fatalf("PRODUCER: %v", a)
	}
	if asked.Load() != 1 {
		t.Fatalf("authorizer asked %d times", asked.Load())
	}
	if ok, err := tb.Registry().TopicExists(context.Background(), topic); ok || err != nil {
		t.Fatalf("denied producer created the topic: %v %v", ok, err)
	}
	r.ping()
}
