package broker

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// syncBuf is a bytes.Buffer safe for a logger and a test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func logInto(buf *syncBuf) func(*brokerconf.Config) {
	return func(c *brokerconf.Config) { c.Logger = slog.New(slog.NewTextHandler(buf, nil)) }
}

// TestConnectTimeoutClosesSlowHandshake: a peer that trickles a CONNECT
// one byte at a time is closed after ConnectTimeout (logged at info with
// its address); a client that connected stays past it.
func TestConnectTimeoutClosesSlowHandshake(t *testing.T) {
	var logs syncBuf
	tb := startBroker(t, func(c *brokerconf.Config) {
		logInto(&logs)(c)
		c.ConnectTimeout = 300 * time.Millisecond
	})
	good := dialRaw(t, tb, true)
	slow := dialRaw(t, tb, false)
	connect := mustCmd(t, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion: ptr("slow"), ProtocolVersion: ptr(int32(20)),
	}})
	start := time.Now()
	closed := false
	for i := 0; i < len(connect)-1; i++ {
		if _, err := slow.nc.Write(connect[i : i+1]); err != nil {
			closed = true
			break
		}
		time.Sleep(50 * time.Millisecond) // the trickle itself
		if time.Since(start) > 5*time.Second {
			break
		}
	}
	if !closed {
		slow.expectClosed()
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("slow handshake closed after %v, timeout 300ms", took)
	}
	good.ping() // past the timeout: still open
	if !strings.Contains(logs.String(), "no CONNECT in time") || !strings.Contains(logs.String(), "remote=127.0.0.1:") {
		t.Fatalf("no info line with the remote address for the closed handshake:\n%s", logs.String())
	}
}

// TestPreConnectFrameLimit: before CONNECT a frame may not exceed 64 KiB
// (the broker does not allocate an announced megabyte for an anonymous
// peer); after CONNECT frames up to the max message size pass.
func TestPreConnectFrameLimit(t *testing.T) {
	var logs syncBuf
	tb := startBroker(t, logInto(&logs))
	r := dialRaw(t, tb, false)
	hdr := binary.BigEndian.AppendUint32(nil, 512<<10) // announces 512 KiB, sends nothing more
	r.write(hdr)
	r.expectClosed()
	if !strings.Contains(logs.String(), "client fault") || !strings.Contains(logs.String(), "frame too large") {
		t.Fatalf("no client-fault line for the oversized pre-CONNECT frame:\n%s", logs.String())
	}
	c := dialRaw(t, tb, true)
	pid := c.producer("big-after-connect")
	big := strings.Repeat("x", 512<<10)
	c.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: 0}, testEntry(0, big)))
	if f := c.next(); f.Type != pb.BaseCommand_SEND_RECEIPT {
		t.Fatalf("512 KiB SEND after CONNECT answered %s", f.Type)
	}
}

// TestSendUnknownProducerCloses: a SEND for a producer id the connection
// never created closes the connection, as in Pulsar; other connections
// are untouched.
func TestSendUnknownProducerCloses(t *testing.T) {
	var logs syncBuf
	tb := startBroker(t, logInto(&logs))
	other := dialRaw(t, tb, true)
	r := dialRaw(t, tb, true)
	r.producer("known")
	r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: 99, SequenceID: 0}, testEntry(0, "who am i")))
	r.expectClosed()
	other.ping()
	if !strings.Contains(logs.String(), "SEND for producer 99") {
		t.Fatalf("no client-fault line for the unknown producer:\n%s", logs.String())
	}
}
