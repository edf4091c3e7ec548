package zktest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Session identifies a ZooKeeper session: what a client sends to resume it.
type Session struct {
	ID     int64
	Passwd []byte
}

// Sessions is a dialer for go-zookeeper (zk.WithDialer(s.Dial)) that records
// the session each connection establishes, read from the server's connect
// response. The zero value is ready to use.
type Sessions struct {
	mu   sync.Mutex
	last Session // protected by mu
}

// Last returns the most recently established session (ID 0 if none).
func (s *Sessions) Last() Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *Sessions) record(sess Session) {
	s.mu.Lock()
	s.last = sess
	s.mu.Unlock()
}

// Dial has the signature of zk.Dialer.
func (s *Sessions) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, owner: s}, nil
}

// sniffConn copies the first frame the server sends (the connect response)
// until it can decode it.
type sniffConn struct {
	net.Conn
	owner *Sessions
	buf   []byte
	done  bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done && n > 0 {
		c.buf = append(c.buf, p[:n]...)
		if sess, ok, bad := parseConnectResponse(c.buf); ok || bad {
			c.done = true
			c.buf = nil
			if ok && sess.ID != 0 {
				c.owner.record(sess)
			}
		}
	}
	return n, err
}

// parseConnectResponse decodes a length-prefixed ConnectResponse:
// protocolVersion int32, timeOut int32, sessionId int64, passwd
// (int32 length + bytes), then an optional readOnly byte.
func parseConnectResponse(b []byte) (sess Session, ok, bad bool) {
	if len(b) < 4 {
		return Session{}, false, false
	}
	n := int(binary.BigEndian.Uint32(b))
	if n < 20 || n > 1<<16 {
		return Session{}, false, true
	}
	if len(b) < 4+n {
		return Session{}, false, false
	}
	f := b[4 : 4+n]
	pl := int(int32(binary.BigEndian.Uint32(f[16:])))
	if pl < 0 || 20+pl > len(f) {
		return Session{}, false, true
	}
	return Session{
		ID:     int64(binary.BigEndian.Uint64(f[8:])),
		Passwd: append([]byte(nil), f[20:20+pl]...),
	}, true, false
}

// ExpireSession ends the session now, as an expiry would: ephemeral nodes
// go, and the owning client learns on its next reconnect that its session
// expired. See the package doc.
func (s *Server) ExpireSession(t testing.TB, sess Session) {
	t.Helper()
	if err := ExpireSession(s.Addr(), sess, 30*time.Second); err != nil {
		t.Fatalf("zktest: %v", err)
	}
}

// ExpireSession is Server.ExpireSession for any server address; it retries
// (the victim may win the session back by reconnecting between our connect
// and close) until timeout.
func ExpireSession(addr string, sess Session, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		var gone bool
		if gone, err = closeSession(addr, sess); gone {
			return nil
		}
	}
	return fmt.Errorf("expire session 0x%x: %v", sess.ID, err)
}

// errSessionMoved: our connection was closed before the close reply.
var errSessionMoved = errors.New("connection closed before the closeSession reply")

// closeSession attaches to sess and closes it. gone reports that the session
// no longer exists (closed by us, or already expired).
func closeSession(addr string, sess Session) (gone bool, err error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))

	// ConnectRequest then closeSession, in one write so the server handles
	// them back to back.
	var req []byte
	body := binary.BigEndian.AppendUint32(nil, 0)     // protocolVersion
	body = binary.BigEndian.AppendUint64(body, 0)     // lastZxidSeen
	body = binary.BigEndian.AppendUint32(body, 30000) // timeOut ms
	body = binary.BigEndian.AppendUint64(body, uint64(sess.ID))
	body = binary.BigEndian.AppendUint32(body, uint32(len(sess.Passwd)))
	body = append(body, sess.Passwd...)
	body = append(body, 0) // readOnly=false
	req = binary.BigEndian.AppendUint32(req, uint32(len(body)))
	req = append(req, body...)
	const xid = 1
	var opCloseSession int32 = -11
	req = binary.BigEndian.AppendUint32(req, 8)
	req = binary.BigEndian.AppendUint32(req, xid)
	req = binary.BigEndian.AppendUint32(req, uint32(opCloseSession))
	if _, err := c.Write(req); err != nil {
		return false, err
	}

	frame, err := readFrame(c)
	if err != nil {
		return false, fmt.Errorf("connect response: %w", err)
	}
	resp, ok, _ := parseConnectResponse(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...))
	if !ok {
		return false, fmt.Errorf("undecodable connect response (%d bytes)", len(frame))
	}
	if resp.ID == 0 {
		return true, nil // the server says the session is already gone
	}
	if resp.ID != sess.ID {
		return false, fmt.Errorf("server gave session 0x%x, want 0x%x", resp.ID, sess.ID)
	}
	for {
		frame, err := readFrame(c)
		if err != nil {
			return false, errSessionMoved
		}
		// ReplyHeader: xid int32, zxid int64, err int32.
		if len(frame) >= 16 && int32(binary.BigEndian.Uint32(frame)) == xid {
			if code := int32(binary.BigEndian.Uint32(frame[12:])); code != 0 {
				return false, fmt.Errorf("closeSession: error code %d", code)
			}
			return true, nil
		}
	}
}

func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}
