package broker

import (
	"context"
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/policy"
)

// Deps are the broker's collaborators, supplied by the wiring in
// cmd/magnetar (real storage) or by tests (in-memory storage).
type Deps struct {
	// Metadata holds tenants, namespaces and partitioned-topic metadata,
	// and the features' state (schemas, transactions).
	Metadata metadata.Store
	// OpenLedger opens (creating if needed) the managed ledger that backs
	// a persistent topic, named by its canonical topic name.
	OpenLedger func(ctx context.Context, name string) (storage.ManagedLedger, error)
	// DeleteLedger, if set, deletes the managed ledger of a deleted topic
	// with its ledgers (mledger.Factory.Delete); nil leaves the data.
	DeleteLedger func(ctx context.Context, name string) error
	// ConfigStore is the configuration store shared by the clusters of
	// an instance: clusters, tenants, namespace and topic policies and
	// partitioned-topic metadata (package topicreg). nil: Metadata.
	ConfigStore metadata.Store
	// Policies holds tenants, namespaces and their policies; nil: a store
	// over Metadata. Share it with the admin API so that its writes reach
	// the broker at once.
	Policies *policy.Store
	// JoinCluster, called at Start when Config.Cluster is set, makes the
	// broker a member of its cluster (package brokercluster's Join).
	JoinCluster func(ctx context.Context, n ClusterNode) (Ownership, error)
}

// unloadWait bounds how long an unload waits for a topic's writes in
// flight.
func unloadWait(cfg *brokerconf.Config) time.Duration {
	if c := cfg.Cluster; c != nil && c.UnloadTimeout > 0 {
		return c.UnloadTimeout
	}
	return 30 * time.Second
}
