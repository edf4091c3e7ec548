package pulsarclient

import (
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

var (
	// ErrClosed is returned by operations on a closed client, producer,
	// consumer or reader. Final.
	ErrClosed = errors.New("pulsarclient: closed")
	// ErrConnectionClosed means the connection a request was sent on went
	// away before the answer came. Retrying (on a new connection) is safe
	// for lookups and metadata; producers and consumers do it themselves.
	ErrConnectionClosed = errors.New("pulsarclient: connection closed")
	// ErrSendTimeout is a send that got no receipt within SendTimeout. The
	// broker may still have stored it.
	ErrSendTimeout = errors.New("pulsarclient: send timeout")
	// ErrMessageTooLarge is a message above the broker's max_message_size
	// (without chunking). Final.
	ErrMessageTooLarge = errors.New("pulsarclient: message too large")
	// ErrInvalidURL is a service URL the client cannot use. Final.
	ErrInvalidURL = errors.New("pulsarclient: invalid service URL")
	// ErrTooManyRedirects is a lookup that kept being redirected.
	ErrTooManyRedirects = errors.New("pulsarclient: too many lookup redirects")
	// ErrDecompress is an entry whose payload could not be decompressed.
	ErrDecompress = errors.New("pulsarclient: cannot decompress")
)

// ServerError is an error the broker answered with (ERROR, SEND_ERROR, a
// failed lookup).
type ServerError struct {
	Code    pb.ServerError
	Message string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("pulsarclient: broker: %s: %s", e.Code, e.Message)
}

// retriable reports whether err is a broker error after which retrying the
// same operation (subscribe, create producer) makes sense: the topic is
// moving or the broker is busy.
func retriable(err error) bool {
	var se *ServerError
	if !errors.As(err, &se) {
		return errors.Is(err, ErrConnectionClosed)
	}
	switch se.Code {
	case pb.ServerError_ServiceNotReady, pb.ServerError_TooManyRequests, pb.ServerError_MetadataError,
		pb.ServerError_PersistenceError, pb.ServerError_UnknownError:
		return true
	}
	return false
}
