package brokercluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Member is a broker's cluster membership: broker.Ownership over a
// started cluster.Service.
type Member struct{ svc *cluster.Service }

var _ broker.Ownership = (*Member)(nil)

// Join starts the broker's cluster membership (broker.Deps.JoinCluster).
func Join(ctx context.Context, n broker.ClusterNode) (broker.Ownership, error) {
	cc := n.Config
	svc, err := cluster.Start(ctx, cluster.Options{
		Store:                 n.Metadata,
		BrokerID:              n.BrokerID,
		ServiceURL:            n.ServiceURL,
		WebURL:                n.WebURL,
		ServiceURLTLS:         n.ServiceURLTLS,
		WebURLTLS:             n.WebURLTLS,
		OnBundleLost:          func(ns string, r bundle.Range) { n.UnloadBundle(cluster.BundleKey(ns, r)) },
		AntiAffinityPeers:     n.AntiAffinityPeers,
		ClusterName:           n.ClusterName,
		FailureDomainsEnabled: cc.FailureDomainsEnabled,
		Standalone:            cc.Standalone,
		Stats:                 func() map[string]cluster.BundleStats { return bundleStats(n.BundleLoads()) },
		ReportInterval:        cc.ReportInterval,
		ShedInterval:          cc.ShedInterval,
		ShedThreshold:         cc.ShedThreshold,
		ShedGrace:             cc.ShedGrace,
		UnloadTimeout:         cc.UnloadTimeout,
		SplitMaxTopics:        cc.SplitMaxTopics,
		SplitMaxSessions:      cc.SplitMaxSessions,
		SplitMaxMsgRate:       cc.SplitMaxMsgRate,
		SplitMaxBytesRate:     cc.SplitMaxBytesRate,
		DisableAutoSplit:      cc.DisableAutoSplit,
		Logger:                n.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &Member{svc: svc}, nil
}

// Service returns b's cluster service, nil on a single node (or one
// whose membership is not a Member).
func Service(b *broker.Broker) *cluster.Service {
	if m, ok := b.Ownership().(*Member); ok {
		return m.svc
	}
	return nil
}

// bundleStats converts the core's per-bundle loads to load report rows.
func bundleStats(loads map[string]broker.BundleLoad) map[string]cluster.BundleStats {
	out := make(map[string]cluster.BundleStats, len(loads))
	for k, l := range loads {
		out[k] = cluster.BundleStats{MsgRateIn: l.MsgRateIn, MsgThroughputIn: l.MsgThroughputIn,
			Topics: l.Topics, ProducerCount: l.Producers}
	}
	return out
}

// TopicBundle returns the bundle key of a topic this broker may load.
func (m *Member) TopicBundle(ctx context.Context, topic string) (string, error) {
	return m.svc.CheckTopic(ctx, topic)
}

// Owns reports whether the bundle is served here.
func (m *Member) Owns(key string) bool { return m.svc.Owns(key) }

// Holds reports whether the bundle is held on a live session.
func (m *Member) Holds(key string) bool { return m.svc.Holds(key) }

// NotOwned wraps cluster.ErrNotOwned.
func (m *Member) NotOwned(topic string) error {
	return fmt.Errorf("%w: %s", cluster.ErrNotOwned, topic)
}

// SessionAlive reports whether the session lease holds.
func (m *Member) SessionAlive() bool { return m.svc.SessionAlive() }

// Leave closes the cluster service: deregister, unload every bundle.
func (m *Member) Leave() { m.svc.Close() }

// Lookup finds (or assigns) the broker serving topic and answers LOOKUP
// (the core sets the request id): Connect to the owner or Redirect, with
// its advertised URLs; Failed with Pulsar's code for lookupError's cases.
func (m *Member) Lookup(ctx context.Context, topic string, authoritative bool) *pb.CommandLookupTopicResponse {
	return lookupAnswer(m.svc.Lookup(ctx, topic, authoritative))
}

// lookupAnswer is LOOKUP's answer to a cluster lookup's result.
func lookupAnswer(res cluster.LookupResult, err error) *pb.CommandLookupTopicResponse {
	if err != nil {
		code, msg := lookupError(err)
		return &pb.CommandLookupTopicResponse{Response: pb.CommandLookupTopicResponse_Failed.Enum(), Error: code.Enum(), Message: &msg}
	}
	resp := &pb.CommandLookupTopicResponse{Response: pb.CommandLookupTopicResponse_Connect.Enum(),
		BrokerServiceUrl: &res.Target.NativeURL, Authoritative: &res.Authoritative, ProxyThroughServiceUrl: new(bool)}
	if res.Redirect {
		resp.Response = pb.CommandLookupTopicResponse_Redirect.Enum()
	}
	if res.Target.NativeURLTLS != "" {
		resp.BrokerServiceUrlTls = &res.Target.NativeURLTLS
	}
	return resp
}

// lookupError maps a cluster lookup failure to Pulsar's answer: transient
// ownership states are MetadataError (the client retries the lookup
// without dropping its connection), no broker at all ServiceNotReady.
func lookupError(err error) (pb.ServerError, string) {
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		return pb.ServerError_TopicNotFound, "Namespace does not exist"
	case errors.Is(err, cluster.ErrNoBroker):
		return pb.ServerError_ServiceNotReady, err.Error()
	}
	return pb.ServerError_MetadataError, err.Error()
}
