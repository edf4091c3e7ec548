package index

import "sync"

// maxSharedKeys bounds the distinct master keys keyTable shares.
const maxSharedKeys = 1024

// keyTable shares one copy of each master key among the ledgers that have
// it. A client derives the key from the ledger's password, so a broker's
// ledgers (one password) all carry the same 20 bytes: a million ledgers
// kept a million copies (~24 MB plus allocation headroom). Shared slices
// are never written: ledger metadata is replaced, not changed in place,
// and GetMeta hands out copies. Past maxSharedKeys distinct keys (clients
// with a password per ledger) a key gets its own copy, as before.
type keyTable struct {
	mu sync.Mutex
	m  map[string][]byte
}

// share returns the table's copy of key (a new one if the table is full),
// clipped so that no append reaches another ledger's key. nil stays nil.
func (t *keyTable) share(key []byte) []byte {
	if key == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if k, ok := t.m[string(key)]; ok {
		return k
	}
	k := append(make([]byte, 0, len(key)), key...)
	if len(t.m) < maxSharedKeys {
		if t.m == nil {
			t.m = make(map[string][]byte)
		}
		t.m[string(k)] = k
	}
	return k
}
