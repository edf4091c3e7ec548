package broker

import (
	"encoding/binary"
	"testing"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// TestLargeFrameHeaderDoesNotAllocate: clients announcing 100 MB frames
// (within a 128 MiB max message size) and sending 200 KiB of them cost
// the broker a few hundred KiB each, not 100 MB: the frame buffer grows
// as bytes arrive. A frame announced over the limit closes that
// connection only.
func TestLargeFrameHeaderDoesNotAllocate(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) {
		c.MaxMessageSize = 128 << 20
		c.MaxOutboundBytes = 256 << 20
	})
	healthy := dialRaw(t, tb, true)
	const conns, sent = 3, 200 << 10
	var raws []*rawClient
	for i := 0; i < conns; i++ {
		raws = append(raws, dialRaw(t, tb, true))
	}
	before := testenv.LiveHeap()
	start := tb.connBytesIn.Load()
	for _, r := range raws {
		msg := binary.BigEndian.AppendUint32(nil, 100<<20)
		r.write(append(msg, make([]byte, sent-4)...))
	}
	// The broker has read every byte sent (so each reader is inside the
	// announced frame, past its first chunks).
	waitUntil(t, "bytes read", func() bool { return tb.connBytesIn.Load()-start >= conns*sent })
	after := testenv.LiveHeap()
	growth := int64(after) - int64(before)
	t.Logf("heap growth %d KiB with %d connections inside 100 MB frames", growth>>10, conns)
	if growth > 32<<20 {
		t.Fatalf("heap grew by %d MiB for %d announced 100 MB frames with %d KiB sent each", growth>>20, conns, sent>>10)
	}
	healthy.ping()

	// Over the limit: the connection (only) is closed.
	over := dialRaw(t, tb, true)
	over.write(binary.BigEndian.AppendUint32(nil, uint32(128<<20+pulsarproto.FramePadding+1)))
	over.expectClosed()
	healthy.ping()
	for _, r := range raws {
		r.nc.Close()
	}
}
