package broker

import (
	"errors"
	"log/slog"
	"time"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Connection hygiene before and around CONNECT (Pulsar's ServerCnx does
// the same checks):
//
//   - a connection must complete CONNECT within Config.ConnectTimeout, or
//     it is closed: a client that sends a byte a second no longer holds a
//     connection (and its buffers) forever;
//   - before CONNECT a frame may not exceed preConnectMaxFrame, so no
//     buffer of the announced size (up to the max message size) is
//     allocated for a peer that has not even said who it is; the limit
//     rises to the max message size once CONNECT succeeded;
//   - connections closed for the client's fault (an oversized or malformed
//     frame, a command before CONNECT, a SEND for a producer id it never
//     created) are logged at info with the remote address and the reason,
//     at most one line per second (rateLogs.clientFault).

// preConnectMaxFrame bounds frames before CONNECT. A CONNECT with an
// authentication token is a few KiB.
const preConnectMaxFrame = 64 << 10

// startConnectTimer closes c unless stop is called within ConnectTimeout.
func (c *conn) startConnectTimer() (stop func() bool) {
	t := time.AfterFunc(c.b.cfg.ConnectTimeout, func() {
		c.b.rateLogs.clientFault.Log(c.log, slog.LevelInfo, "closing connection: no CONNECT in time", "timeout", c.b.cfg.ConnectTimeout)
		c.nc.Close() // unblocks the reader
	})
	return t.Stop
}

// isClientFault reports whether a read-loop error is the client's doing
// (as opposed to EOF, a reset or the broker closing).
func isClientFault(err error) bool {
	for _, e := range []error{ErrProtocol, pulsarproto.ErrFrameTooLarge, pulsarproto.ErrBadCommandSize,
		pulsarproto.ErrMalformed, pulsarproto.ErrBadMagic} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// logClosed logs why the read loop of c ended.
func (c *conn) logClosed(err error) {
	if isClientFault(err) {
		c.b.rateLogs.clientFault.Log(c.log, slog.LevelInfo, "closing connection: client fault", "reason", err)
		return
	}
	c.log.Debug("connection closed", "err", err)
}
