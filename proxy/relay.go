package proxy

import (
	"bufio"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// relayBuffer is the copy buffer of one relay direction. Each read
// returns what the socket has (up to this much) and is counted at once,
// so the stats are exact at any moment.
const relayBuffer = 64 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, relayBuffer); return &b }}

// pipe copies src to dst until src ends or either fails. Bytes already
// buffered in br (read together with the CONNECT) go first.
func (p *Proxy) pipe(dst, src net.Conn, br *bufio.Reader, n *atomic.Int64, metric *stat) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var r io.Reader = br // drains br's buffer, then reads src directly
	if br.Buffered() == 0 {
		r = src
	}
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return werr
			}
			n.Add(int64(k))
			metric.Add(float64(k))
		}
		if err != nil {
			return err
		}
		if r != src && br.Buffered() == 0 {
			r = src
		}
	}
}

// semaphore is a counting limit with non-blocking acquire.
type semaphore struct {
	n   atomic.Int64
	max int64
}

func (s *semaphore) tryAcquire() bool {
	if s.n.Add(1) > s.max {
		s.n.Add(-1)
		return false
	}
	return true
}

func (s *semaphore) release() { s.n.Add(-1) }
