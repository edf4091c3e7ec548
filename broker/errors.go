package broker

import (
	"errors"

	"github.com/magnetar-mq/magnetar/policy"
)

// Errors returned by the broker's exported API. Callers use errors.Is.
var (
	// ErrClosed: the broker (or a topic, subscription or connection) was
	// closed; the operation did not run. Not retryable on this instance.
	ErrClosed = errors.New("broker: closed")
	// ErrBadConfig: Config.Validate refused the configuration.
	ErrBadConfig = errors.New("broker: bad config")
	// ErrTopicNotFound: the topic does not exist and auto-creation is off
	// (or the request asked not to create it).
	ErrTopicNotFound = errors.New("broker: topic not found")
	// ErrNamespaceNotFound: the tenant or namespace is not registered
	// (the policy store's error).
	ErrNamespaceNotFound = policy.ErrNamespaceNotFound
	// ErrTenantNotFound: the tenant is not registered.
	ErrTenantNotFound = policy.ErrTenantNotFound
	// ErrSubscriptionNotFound: the topic has no such subscription.
	ErrSubscriptionNotFound = errors.New("broker: subscription not found")
	// ErrNotAllowed: the operation does not apply to this kind of topic
	// or subscription (e.g. terminating a non-persistent topic).
	ErrNotAllowed = errors.New("broker: not allowed")
	// ErrPreconditionFailed: the operation conflicts with the object's
	// state (a topic in use, a position that does not exist).
	ErrPreconditionFailed = errors.New("broker: precondition failed")
	// ErrAlreadyExists: a create found the object already present.
	ErrAlreadyExists = errors.New("broker: already exists")
	// ErrInvalidTopicName: the name cannot be canonicalised.
	ErrInvalidTopicName = errors.New("broker: invalid topic name")
	// ErrTerminated: the topic was terminated; no more publishes.
	ErrTerminated = errors.New("broker: topic terminated")
	// ErrProtocol: a peer sent a frame that breaks the protocol; its
	// connection is closed.
	ErrProtocol = errors.New("broker: protocol violation")
	// ErrSlowConsumer: a connection's outbound queue exceeded its bound;
	// the connection is closed.
	ErrSlowConsumer = errors.New("broker: outbound queue overflow")
)

var (
	errNoEntries      = errors.New("broker: no entries")
	errCursorNotFound = errors.New("broker: cursor not found")
	// errEntryGone: a position to re-read is no longer stored.
	errEntryGone = errors.New("broker: entry no longer stored")
)

// reasonError is an error of kind (one of the errors above) whose text is
// the reason Pulsar gives a client for it.
type reasonError struct {
	kind error
	msg  string
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.kind }

func reason(kind error, msg string) error { return &reasonError{kind, msg} }
