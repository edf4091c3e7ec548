package ledger

import (
	"context"
	"fmt"
	"sync"
)

// BookieClient is the client's view of one bookie. It uses plain types and
// the bkproto status sentinels only, so transports outside this package
// (the in-process adapter in bookie/server) implement it without importing
// ledger. Errors wrap the bkproto sentinels (bkproto.ErrFenced, ...).
//
// Implementations are safe for concurrent use.
type BookieClient interface {
	// AddEntry sends the framed entry. done runs exactly once with the
	// outcome (nil after the bookie made it durable); it may run on any
	// goroutine, including the caller's before AddEntry returns, and must
	// not block. entry is not modified or retained after done.
	AddEntry(ledgerID, entryID int64, masterKey, entry []byte, recovery bool, done func(error))
	// ReadEntry returns the framed entry (entryID -1: the last one stored).
	// With fence the bookie first fences the ledger durably (masterKey
	// required).
	ReadEntry(ctx context.Context, ledgerID, entryID int64, fence bool, masterKey []byte) ([]byte, error)
	// ReadLAC returns the explicit LAC (-1 if none) and the last framed
	// entry stored (nil if none).
	ReadLAC(ctx context.Context, ledgerID int64) (lac int64, lastEntry []byte, err error)
	// WriteLAC stores an explicit LAC.
	WriteLAC(ctx context.Context, ledgerID, lac int64, masterKey, body []byte) error
}

// LocalClient is optionally implemented by in-process clients: their calls
// return without a network round trip, so reads skip speculative retries.
type LocalClient interface {
	Local() bool
}

// LedgerDeleter is optionally implemented by bookie clients that can drop a
// ledger's data at once (the in-process bookie). Client.Delete calls it on
// every bookie of the ledger, best effort.
type LedgerDeleter interface {
	DeleteLedger(ctx context.Context, ledgerID int64) error
}

// BookieResolver gives the client for a bookie id.
type BookieResolver interface {
	Client(id string) (BookieClient, error)
}

// Resolvers tries each resolver of a list in turn and returns the first
// client found.
type Resolvers []BookieResolver

// Client implements BookieResolver.
func (rs Resolvers) Client(id string) (BookieClient, error) {
	var last error
	for _, r := range rs {
		c, err := r.Client(id)
		if err == nil {
			return c, nil
		}
		last = err
	}
	if last == nil {
		last = fmt.Errorf("%w: unknown bookie %q", ErrBookieUnavailable, id)
	}
	return nil, last
}

// StaticResolver maps bookie ids to fixed clients (in-process bookies,
// tests). Safe for concurrent use.
type StaticResolver struct {
	mu sync.RWMutex
	m  map[string]BookieClient
}

// NewStaticResolver returns a resolver for the given clients.
func NewStaticResolver(m map[string]BookieClient) *StaticResolver {
	r := &StaticResolver{m: make(map[string]BookieClient, len(m))}
	for k, v := range m {
		r.m[k] = v
	}
	return r
}

// Set adds or replaces the client of id (nil removes it).
func (r *StaticResolver) Set(id string, c BookieClient) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c == nil {
		delete(r.m, id)
		return
	}
	r.m[id] = c
}

// Client implements BookieResolver.
func (r *StaticResolver) Client(id string) (BookieClient, error) {
	r.mu.RLock()
	c, ok := r.m[id]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: unknown bookie %q", ErrBookieUnavailable, id)
	}
	return c, nil
}
