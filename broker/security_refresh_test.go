package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// waitChallenge reads frames until AUTH_CHALLENGE (the broker sends one
// within a refresh interval of the token's expiry).
func (r *rawClient) waitChallenge() *pb.CommandAuthChallenge {
	r.t.Helper()
	for {
		f := r.next()
		if f.Type == pb.BaseCommand_AUTH_CHALLENGE {
			return f.Cmd.AuthChallenge
		}
	}
}

func (r *rawClient) respond(method, data string) {
	r.t.Helper()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_AUTH_RESPONSE.Enum(), AuthResponse: &pb.CommandAuthResponse{
		ClientVersion: ptr("raw-test"), ProtocolVersion: ptr(int32(20)),
		Response: &pb.AuthData{AuthMethodName: ptr(method), AuthData: []byte(data)},
	}})
}

func (f *secFixture) rawConnect(t *testing.T, tok string, refresh bool) *rawClient {
	t.Helper()
	r := dialRaw(t, f.testBroker, false)
	r.send(pbBaseConnect{method: "token", data: tok, refresh: refresh}.cmd())
	if fr := r.next(); fr.Type != pb.BaseCommand_CONNECTED {
		t.Fatalf("CONNECT answered %v", fr.Cmd)
	}
	return r
}

// TestSecRefreshRaw drives AUTH_CHALLENGE / AUTH_RESPONSE on the wire.
func TestSecRefreshRaw(t *testing.T) {
	f := startSecure(t, nil)
	t.Run("refreshed", func(t *testing.T) {
		r := f.rawConnect(t, f.token(t, "token-principal", 1500*time.Millisecond), true)
		ch := r.waitChallenge()
		if ch.GetChallenge().GetAuthMethodName() != "token" || string(ch.GetChallenge().GetAuthData()) != "PulsarAuthRefresh" {
			t.Fatalf("challenge %v", ch)
		}
		r.respond("token", f.token(t, "token-principal", time.Hour))
		// Still served after several refresh intervals.
		r.ping()
		deadline := time.Now().Add(2500 * time.Millisecond)
		for time.Now().Before(deadline) {
			r.ping()
		}
	})
	t.Run("unanswered", func(t *testing.T) {
		r := f.rawConnect(t, f.token(t, "token-principal", time.Second), true)
		r.waitChallenge()
		r.expectClosed()
	})
	t.Run("role change", func(t *testing.T) {
		r := f.rawConnect(t, f.token(t, "token-principal", time.Second), true)
		r.waitChallenge()
		r.respond("token", f.token(t, "admin", time.Hour))
		if fr := r.next(); fr.Cmd.Error == nil || fr.Cmd.Error.GetError() != pb.ServerError_AuthenticationError {
			t.Fatalf("answer %v", fr.Cmd)
		}
		r.expectClosed()
	})
	t.Run("expired again", func(t *testing.T) {
		r := f.rawConnect(t, f.token(t, "token-principal", time.Second), true)
		r.waitChallenge()
		r.respond("token", f.token(t, "token-principal", -time.Minute))
		if fr := r.next(); fr.Cmd.Error == nil {
			t.Fatalf("answer %v", fr.Cmd)
		}
		r.expectClosed()
	})
	t.Run("no refresh support", func(t *testing.T) {
		r := f.rawConnect(t, f.token(t, "token-principal", time.Second), false)
		r.expectClosed()
	})
}

// TestSecRefreshClient: pulsar-client-go's token supplier hands out
// short-lived tokens; the producer keeps working across several expiries
// on the same connection.
func TestSecRefreshClient(t *testing.T) {
	f := startSecure(t, nil)
	var calls atomic.Int64
	supplier := func() (string, error) {
		calls.Add(1)
		return f.token(t, "token-principal", 1500*time.Millisecond), nil
	}
	c := f.mustClient(t, pulsar.ClientOptions{Authentication: pulsar.NewAuthenticationTokenFromSupplier(supplier)})
	topic := authTopic()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	n := 0
	for time.Since(start) < 5*time.Second {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
			t.Fatalf("send %d after %v: %v", n, time.Since(start), err)
		}
		n++
		time.Sleep(50 * time.Millisecond) // pacing, not synchronisation
	}
	// The supplier ran for CONNECT and again for challenges.
	if calls.Load() < 3 {
		t.Fatalf("supplier called %d times; no refresh happened", calls.Load())
	}
	m := f.mustClient(t, pulsar.ClientOptions{Authentication: pulsar.NewAuthenticationToken(f.token(t, "token-principal", 0)), OperationTimeout: 15 * time.Second})
	cons, err := m.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "check", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for i := 0; i < n; i++ {
		if _, err := cons.Receive(ctx); err != nil {
			t.Fatalf("receive %d of %d: %v", i, n, err)
		}
	}
}
