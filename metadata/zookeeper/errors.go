package zookeeper

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/magnetar-mq/magnetar/metadata"
)

// mapErr turns a go-zookeeper error into the metadata error callers test
// with errors.Is, keeping the original in the chain.
func (s *Store) mapErr(err error, p string) error {
	var m error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		m = metadata.ErrNotFound
	case errors.Is(err, zk.ErrNodeExists):
		m = metadata.ErrExists
	case errors.Is(err, zk.ErrBadVersion):
		m = metadata.ErrBadVersion
	case errors.Is(err, zk.ErrNotEmpty):
		m = metadata.ErrNotEmpty
	case errors.Is(err, zk.ErrNoChildrenForEphemerals):
		m = metadata.ErrEphemeralParent
	case errors.Is(err, zk.ErrInvalidPath), errors.Is(err, zk.ErrBadArguments):
		m = metadata.ErrInvalidPath
	case s.closed.Load():
		m = metadata.ErrClosed
	case errors.Is(err, zk.ErrClosing), errors.Is(err, zk.ErrConnectionClosed),
		errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrSessionExpired),
		errors.Is(err, zk.ErrSessionMoved):
		m = metadata.ErrUnavailable
	default:
		return fmt.Errorf("zookeeper: %s: %w", p, err)
	}
	return fmt.Errorf("zookeeper: %s: %w (%w)", p, m, err)
}

// retryable reports errors after which the request may be sent again once
// the client has reconnected.
func retryable(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}
