package offload

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// UID identifies one offload attempt of one ledger: a random (version 4)
// UUID, so that two attempts never share object keys.
type UID [16]byte

// NewUID returns a fresh random UID.
func NewUID() UID {
	var u UID
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// IsZero reports whether u is unset.
func (u UID) IsZero() bool { return u == UID{} }

// String is the canonical 36-character form.
func (u UID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// ParseUID parses the canonical form.
func ParseUID(s string) (UID, error) {
	var u UID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, fmt.Errorf("offload: bad uid %q", s)
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, fmt.Errorf("offload: bad uid %q: %w", s, err)
	}
	return u, nil
}

// blobStore is what the offloader needs from an object store. Keys are
// flat names within the store's bucket (or directory).
type blobStore interface {
	// putParts writes object key from the parts next returns (until it
	// returns nil, nil), one multipart part each, with user metadata
	// meta. The object appears whole or not at all: on any error the
	// upload is aborted.
	putParts(ctx context.Context, key string, meta map[string]string, next func() ([]byte, error)) (int64, error)
	// put writes a small object whole.
	put(ctx context.Context, key string, data []byte, meta map[string]string) error
	// getRange reads n bytes at off (n < 0: to the end) and returns the
	// object's user metadata. ErrNotFound when absent.
	getRange(ctx context.Context, key string, off, n int64) ([]byte, map[string]string, error)
	// size returns the object's length. ErrNotFound when absent.
	size(ctx context.Context, key string) (int64, error)
	// remove deletes an object; an absent object is not an error.
	remove(ctx context.Context, key string) error
	// list returns the keys starting with prefix (tests and tools).
	list(ctx context.Context, prefix string) ([]string, error)
}
