package topicreg

import "errors"

// The registry's errors; package broker exports the same values under
// the same names, and their texts are the ones its clients have always
// seen.
var (
	// ErrTopicNotFound: the topic (or partitioned topic) is not
	// registered.
	ErrTopicNotFound = errors.New("broker: topic not found")
	// ErrAlreadyExists: a create found the node already present.
	ErrAlreadyExists = errors.New("broker: already exists")
	// ErrInvalidTopicName: the name cannot be canonicalised, or is not
	// the kind of name the operation takes.
	ErrInvalidTopicName = errors.New("broker: invalid topic name")
	// ErrPreconditionFailed: the operation conflicts with the stored
	// state (a listing too long to build).
	ErrPreconditionFailed = errors.New("broker: precondition failed")
)

// reasonError is an error of kind (one of the errors above) whose text
// is the reason Pulsar gives a client for it.
type reasonError struct {
	kind error
	msg  string
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.kind }

func reason(kind error, msg string) error { return &reasonError{kind, msg} }
