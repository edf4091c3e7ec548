package zookeeper

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Options configures Open. The zero value is usable.
type Options struct {
	// SessionTimeout is the session timeout asked of the server (default
	// 10 s, BookKeeper's zkTimeout). The server clamps it to its
	// [minSessionTimeout, maxSessionTimeout] (2 and 20 ticks by default).
	SessionTimeout time.Duration
	// ConnectTimeout bounds how long Open waits for the first session
	// (default 15 s).
	ConnectTimeout time.Duration
	// Logger receives session changes and the client library's messages
	// (at debug level); nil discards them.
	Logger *slog.Logger
	// Dialer replaces net.DialTimeout for connections to the servers (tests
	// use it to record session ids, see internal/zktest).
	Dialer zk.Dialer
}

// EnsureDefaults fills unset fields.
func (o *Options) EnsureDefaults() {
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports nonsensical settings.
func (o *Options) Validate() error {
	if o.SessionTimeout < time.Millisecond || o.SessionTimeout > 10*time.Minute {
		return fmt.Errorf("zookeeper: SessionTimeout %v out of range", o.SessionTimeout)
	}
	if o.ConnectTimeout < 0 {
		return errors.New("zookeeper: negative ConnectTimeout")
	}
	return nil
}

// ParseURL splits "zk://host:port[,host:port...][/chroot]" into the server
// addresses and the chroot ("" for none).
func ParseURL(url string) (servers []string, chroot string, err error) {
	rest, ok := strings.CutPrefix(url, "zk://")
	if !ok {
		return nil, "", fmt.Errorf("zookeeper: url %q does not start with zk://", url)
	}
	hosts := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		hosts, chroot = rest[:i], rest[i:]
		if err := metadata.ValidatePath(chroot); err != nil {
			return nil, "", fmt.Errorf("zookeeper: url %q: chroot: %w", url, err)
		}
		if chroot == "/" {
			chroot = ""
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return nil, "", fmt.Errorf("zookeeper: url %q has an empty server", url)
		}
		if !strings.Contains(h, ":") {
			h += ":2181"
		}
		servers = append(servers, h)
	}
	return servers, chroot, nil
}
