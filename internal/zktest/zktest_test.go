package zktest

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/magnetar-mq/magnetar/internal/zkserver"
)

// TestServer runs its checks on one server: a JVM start costs seconds.
func TestServer(t *testing.T) {
	t0 := time.Now()
	srv := StartServer(t)
	t.Logf("server up in %v", time.Since(t0))
	t.Run("ExpireSession", func(t *testing.T) { testExpireSession(t, srv) })
	t.Run("StopRestart", func(t *testing.T) { testStopRestart(t, srv) })
}

func testStopRestart(t *testing.T, srv *Server) {
	if !zkserver.Ruok(srv.Addr()) {
		t.Fatalf("ruok after Start: not imok")
	}
	out, err := zkserver.FourLetter(srv.Addr(), "srvr")
	if err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("srvr = %q, %v; want standalone mode", out, err)
	}
	conn := connect(t, srv.Addr(), nil)
	if _, err := conn.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	srv.Stop()
	if zkserver.Ruok(srv.Addr()) {
		t.Fatalf("ruok after Stop: still imok")
	}
	srv.Stop() // idempotent
	srv.Restart(t)
	conn = connect(t, srv.Addr(), nil)
	defer conn.Close()
	if v, _, err := conn.Get("/kept"); err != nil || string(v) != "v" {
		t.Fatalf("Get(/kept) after restart = %q, %v; want v", v, err)
	}
}

func connect(t *testing.T, addr string, sess *Sessions) *zk.Conn {
	t.Helper()
	dial := zk.Dialer(net.DialTimeout)
	if sess != nil {
		dial = sess.Dial
	}
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(discard{}), zk.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

type discard struct{}

func (discard) Printf(string, ...any) {}

func testExpireSession(t *testing.T, srv *Server) {
	var rec Sessions
	conn := connect(t, srv.Addr(), &rec)
	defer conn.Close()
	if _, err := conn.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sess := rec.Last()
	if sess.ID == 0 || sess.ID != conn.SessionID() || len(sess.Passwd) == 0 {
		t.Fatalf("recorded session 0x%x (%d-byte password), client has 0x%x", sess.ID, len(sess.Passwd), conn.SessionID())
	}
	other := connect(t, srv.Addr(), nil)
	defer other.Close()
	ok, _, ch, err := other.ExistsW("/eph")
	if err != nil || !ok {
		t.Fatalf("ExistsW(/eph) = %v, %v", ok, err)
	}
	t0 := time.Now()
	srv.ExpireSession(t, sess)
	t.Logf("ExpireSession took %v", time.Since(t0))
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("event %+v, want node deleted", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ephemeral node not deleted within 10 s of ExpireSession")
	}
	// The victim gets a new session.
	deadline := time.Now().Add(10 * time.Second)
	for conn.SessionID() == sess.ID || conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("client still on session 0x%x (state %v)", conn.SessionID(), conn.State())
		}
		time.Sleep(20 * time.Millisecond) // polling the client's state; it has no signal we can wait on here
	}
	t.Logf("new session after %v", time.Since(t0))
	// Expiring a gone session succeeds at once.
	srv.ExpireSession(t, sess)
}
