package zookeeper

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// hostProvider hands the client the servers round-robin. Unlike
// go-zookeeper's DNSHostProvider, which with a single server asks for a
// one-second pause (and fails queued requests) on every reconnect, it asks
// for a pause only after two full passes over the servers without a
// successful session, so a reconnect after a dropped connection or an
// expired session is immediate and a down ensemble is retried once a second.
type hostProvider struct {
	mu      sync.Mutex
	servers []string // protected by mu
	curr    int      // protected by mu
	tries   int      // protected by mu: Next calls since Connected
}

func (h *hostProvider) Init(servers []string) error {
	if len(servers) == 0 {
		return errors.New("zookeeper: no servers")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers, h.curr = servers, -1
	return nil
}

func (h *hostProvider) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *hostProvider) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	h.tries++
	return h.servers[h.curr], h.tries > 2*len(h.servers)
}

func (h *hostProvider) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries = 0
}

// zkLogger sends the client library's log lines to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zk: " + fmt.Sprintf(format, args...))
}
