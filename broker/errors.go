package broker

import "errors"

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
	// ErrNamespaceNotFound: the tenant or namespace is not registered.
	ErrNamespaceNotFound = errors.New("broker: namespace not found")
	// ErrTenantNotFound: the tenant is not registered.
	ErrTenantNotFound = errors.New("broker: tenant not found")
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
)
