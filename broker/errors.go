package broker

import (
	"errors"

	"github.com/magnetar-mq/magnetar/broker/outqueue"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// Errors returned by the broker's exported API. Callers use errors.Is.
// The topic registry's are package topicreg's values, the storage's
// package broker/storage's.
var (
	// ErrClosed: the broker (or a topic, subscription or connection) was
	// closed; the operation did not run. Not retryable on this instance.
	ErrClosed = storage.ErrClosed
	// ErrBadConfig: New refused the configuration (brokerconf.Config.Validate)
	// or the dependencies, or Use or Start refused a feature.
	ErrBadConfig = errors.New("broker: bad config")
	// ErrTopicNotFound: the topic does not exist and auto-creation is off
	// (or the request asked not to create it).
	ErrTopicNotFound = topicreg.ErrTopicNotFound
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
	ErrPreconditionFailed = topicreg.ErrPreconditionFailed
	// ErrAlreadyExists: a create found the object already present.
	ErrAlreadyExists = topicreg.ErrAlreadyExists
	// ErrInvalidTopicName: the name cannot be canonicalised.
	ErrInvalidTopicName = topicreg.ErrInvalidTopicName
	// ErrTerminated: the topic was terminated; no more publishes.
	ErrTerminated = storage.ErrTerminated
	// ErrProtocol: a peer sent a frame that breaks the protocol; its
	// connection is closed.
	ErrProtocol = errors.New("broker: protocol violation")
	// ErrSlowConsumer: a connection's outbound queue exceeded its bound;
	// the connection is closed (package outqueue's overflow).
	ErrSlowConsumer = outqueue.ErrOverflow
	// ErrTxnDisabled answers transaction requests (SENDs and ACKs in a
	// transaction, the transaction commands) on a broker without the
	// transaction feature (package txn/server).
	ErrTxnDisabled = errors.New("the broker doesn't enable the transaction coordinator (transactionCoordinatorEnabled=false)")
	// ErrNoSchemaRegistry answers the schema commands on a broker without
	// the schema registry (package schemareg).
	ErrNoSchemaRegistry = errors.New("the broker runs without a schema registry")
	// ErrEntryGone: a position read from a topic's ledger is no longer
	// stored (trimmed or deleted); final for that position.
	ErrEntryGone = storage.ErrEntryGone
	// ErrUnavailable: the data is stored where the broker cannot reach it
	// now (an object store that is down); retrying later is safe. Its
	// text is for clients and names no host or path; the cause is logged.
	ErrUnavailable = errors.New("broker: storage unavailable")
)

var (
	errCursorNotFound   = storage.ErrCursorNotFound
	errTxnDisabled      = ErrTxnDisabled
	errNoSchemaRegistry = ErrNoSchemaRegistry
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

// Reason returns an error of kind (one of the errors above, for
// errors.Is) whose text is msg, the reason a client or the admin API is
// given. Features report their refusals with it.
func Reason(kind error, msg string) error { return reason(kind, msg) }
