package auth

import "sync"

// BrokerClientSettings are the broker's identity on the connections it
// opens itself (brokerClientAuthenticationPlugin,
// brokerClientAuthenticationParameters, brokerClientTlsEnabled).
type BrokerClientSettings struct {
	Plugin, Params string
	TLSEnabled     bool
}

// BrokerClient holds the BrokerClientSettings in force. Pulsar marks
// the three keys dynamic: an update (package dynconfig, applied by the
// stack) replaces them here, and every connection the broker opens after
// it (transaction ends on other brokers, replicators without their own
// credentials) uses the new ones; a connection already open keeps its
// identity. Safe for concurrent use; the methods of a nil *BrokerClient
// answer no settings.
type BrokerClient struct {
	mu  sync.Mutex
	cur BrokerClientSettings
	gen uint64
}

// NewBrokerClient starts with cfg's settings.
func NewBrokerClient(cfg *Config) *BrokerClient {
	c := &BrokerClient{}
	if cfg != nil {
		c.cur = BrokerClientSettings{Plugin: cfg.BrokerClientAuthenticationPlugin,
			Params: cfg.BrokerClientAuthenticationParameters, TLSEnabled: cfg.BrokerClientTLSEnabled}
	}
	return c
}

// Current returns the settings in force and their generation, which
// Set increments: a client built from one generation is stale once
// Current answers another.
func (c *BrokerClient) Current() (BrokerClientSettings, uint64) {
	if c == nil {
		return BrokerClientSettings{}, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur, c.gen
}

// Auth parses the credentials in force (ParseClientAuth: nil without a
// plugin).
func (c *BrokerClient) Auth() (*ClientAuth, error) {
	s, _ := c.Current()
	return ParseClientAuth(s.Plugin, s.Params)
}

// Set replaces the settings when they parse; otherwise it returns the
// parse error and keeps the settings in force (an update of the plugin
// whose parameters come in a second update is refused until both
// match).
func (c *BrokerClient) Set(s BrokerClientSettings) error {
	if _, err := ParseClientAuth(s.Plugin, s.Params); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s != c.cur {
		c.cur = s
		c.gen++
	}
	return nil
}
