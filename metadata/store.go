package metadata

import (
	"context"
	"errors"
	"time"
)

// Store is a hierarchical, versioned key-value store in the style of
// ZooKeeper: paths like "/ledgers/available/host:3181", each node holding a
// value and a version that every write increments.
//
// Every method is safe for concurrent use.
type Store interface {
	// Get returns the value and version of path, or ErrNotFound.
	Get(ctx context.Context, path string) ([]byte, Version, error)
	// Put writes value at path. With expected == AnyVersion the write is
	// unconditional and creates the node (and missing parents) if needed;
	// with expected == NotExists it succeeds only if the node is absent
	// (ErrExists otherwise); any other value is a compare-and-set against
	// the node's current version (ErrBadVersion on mismatch, ErrNotFound if
	// absent). It returns the new version.
	Put(ctx context.Context, path string, value []byte, expected Version) (Version, error)
	// Delete removes path if its version matches expected (AnyVersion: any).
	// ErrNotFound if absent, ErrBadVersion on mismatch, ErrNotEmpty if it has
	// children.
	Delete(ctx context.Context, path string, expected Version) error
	// Children lists the names (not paths) of path's children, sorted.
	// ErrNotFound if path does not exist.
	Children(ctx context.Context, path string) ([]string, error)
	// Exists reports whether path exists.
	Exists(ctx context.Context, path string) (bool, error)
	// CreateSequential creates a child of parent named prefix followed by a
	// zero-padded, monotonically increasing 10-digit number, and returns the
	// full path. Parents are created as needed.
	CreateSequential(ctx context.Context, parentPrefix string, value []byte) (string, error)
	// Close releases the store. Ephemeral nodes of its session go away.
	Close() error
}

// Version is a node's version: it starts at 0 on create and increases by one
// on every write.
type Version int64

const (
	// AnyVersion makes Put and Delete unconditional.
	AnyVersion Version = -1
	// NotExists makes Put a create-only write.
	NotExists Version = -2
)

// Ephemeraler is implemented by stores whose sessions own ephemeral nodes.
type Ephemeraler interface {
	// PutEphemeral creates path bound to the store's session: it disappears
	// when the session ends (Close, process death, or session expiry). It is
	// re-created by the store after a new session is established.
	PutEphemeral(ctx context.Context, path string, value []byte) error
}

// Watcher is implemented by stores that can notify about changes.
type Watcher interface {
	// Watch calls fn (on its own goroutine, in order) after every change to
	// path's value or existence and its children list, until ctx is done.
	Watch(ctx context.Context, path string, fn func(Event)) error
}

// Event describes one change seen by a watch.
type Event struct {
	Path string
	Type EventType
}

// EventType classifies an Event.
type EventType int

const (
	EventCreated EventType = iota + 1
	EventChanged
	EventDeleted
	EventChildren
	// EventSessionExpired means the session was lost; ephemeral nodes were
	// gone for a while and have been re-created.
	EventSessionExpired
)

// Errors. Callers use errors.Is.
var (
	// ErrNotFound: the node does not exist.
	ErrNotFound = errors.New("metadata: node not found")
	// ErrExists: a create found the node already there.
	ErrExists = errors.New("metadata: node already exists")
	// ErrBadVersion: a compare-and-set lost a race; re-read and retry.
	ErrBadVersion = errors.New("metadata: version mismatch")
	// ErrNotEmpty: delete of a node that still has children.
	ErrNotEmpty = errors.New("metadata: node has children")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("metadata: store closed")
)

// Sessioner is implemented by stores whose session can expire while the
// process lives on (ZooKeeper). Ownership built on ephemeral nodes needs it
// to stop acting as owner before the server can expire the session and let
// another process take over (see package cluster).
type Sessioner interface {
	// SessionID identifies the current session; 0 while there is none. It
	// changes when a new session replaces an expired one.
	SessionID() int64
	// SessionTimeout is the session timeout asked of the server: a session
	// the server heard from at time t lives at least until t+SessionTimeout
	// (servers may raise it to their minimum, never lower it below the
	// request unless the request exceeds their maximum).
	SessionTimeout() time.Duration
	// CreateEphemeral creates path as an ephemeral node of the current
	// session, ErrExists if the node is there already (whoever owns it).
	// Unlike PutEphemeral, the store never re-creates it: when the session
	// ends the node is gone for good. Locks are built on it.
	CreateEphemeral(ctx context.Context, path string, value []byte) error
}
