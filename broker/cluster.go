package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// ClusterConfig turns on multi-broker operation (package cluster): the
// broker serves only the topics of the namespace bundles it owns, answers
// lookups with the owner, registers itself with a load report and takes
// part in leader election. The zero value of each field is cluster's
// default.
type ClusterConfig struct {
	ReportInterval time.Duration
	ShedInterval   time.Duration
	ShedThreshold  float64
	ShedGrace      time.Duration
	UnloadTimeout  time.Duration
	// Automatic bundle split thresholds (cluster.Options.SplitMax*).
	SplitMaxTopics, SplitMaxSessions   int
	SplitMaxMsgRate, SplitMaxBytesRate float64
	DisableAutoSplit                   bool
	// FailureDomainsEnabled is Pulsar's failureDomainsEnabled
	// (cluster.Options).
	FailureDomainsEnabled bool
	// Standalone marks the only broker of a standalone: it takes a
	// bundle when one of its topics is used (cluster.Options.Standalone).
	Standalone bool
}

// startCluster joins the cluster once the listeners are bound (the URLs
// are known).
func (b *Broker) startCluster(ctx context.Context) error {
	cc := b.cfg.Cluster
	plain, secure := b.net.lookupURLs()
	svc, err := cluster.Start(ctx, cluster.Options{
		Store:                 b.deps.Metadata,
		BrokerID:              b.net.brokerID(),
		ServiceURL:            plain,
		WebURL:                b.net.webURL(),
		ServiceURLTLS:         secure,
		WebURLTLS:             b.net.webURLTLS(),
		OnBundleLost:          b.unloadBundleTopics,
		AntiAffinityPeers:     b.policies.AntiAffinityPeers,
		ClusterName:           b.cfg.ClusterName,
		FailureDomainsEnabled: cc.FailureDomainsEnabled,
		Standalone:            cc.Standalone,
		Stats:                 b.bundleStats,
		ReportInterval:        cc.ReportInterval,
		ShedInterval:          cc.ShedInterval,
		ShedThreshold:         cc.ShedThreshold,
		ShedGrace:             cc.ShedGrace,
		UnloadTimeout:         cc.UnloadTimeout,
		SplitMaxTopics:        cc.SplitMaxTopics, SplitMaxSessions: cc.SplitMaxSessions,
		SplitMaxMsgRate: cc.SplitMaxMsgRate, SplitMaxBytesRate: cc.SplitMaxBytesRate,
		DisableAutoSplit: cc.DisableAutoSplit,
		Logger:           b.log.With("component", "cluster"),
	})
	if err != nil {
		return err
	}
	b.cluster.svc = svc
	return nil
}

// clusterMember is the broker's cluster membership: svc is nil on a
// single node, which serves every topic.
type clusterMember struct{ svc *cluster.Service }

// Cluster returns the broker's cluster membership (nil on a single node).
func (b *Broker) Cluster() *cluster.Service { return b.cluster.svc }

// topicBundle returns the bundle key of a topic this broker may load, or
// an error wrapping cluster.ErrNotOwned / ErrUnloading. "" on a single
// node.
func (m *clusterMember) topicBundle(ctx context.Context, tn topicName) (string, error) {
	if m.svc == nil {
		return "", nil
	}
	key, err := m.svc.CheckTopic(ctx, tn.String())
	if errors.Is(err, metadata.ErrNotFound) {
		return "", fmt.Errorf("%w: namespace %s", ErrNamespaceNotFound, tn.NamespaceName())
	}
	return key, err
}

// owns reports whether t's bundle is still served here (always on a
// single node).
func (m *clusterMember) owns(t *topic) bool {
	return m.svc == nil || m.svc.Owns(t.bundleKey)
}

// mayAck reports whether a write to t may be acknowledged: the bundle is
// held on a live session (possibly while unloading, when pending writes
// complete).
func (m *clusterMember) mayAck(t *topic) bool {
	return m.svc == nil || m.svc.Holds(t.bundleKey)
}

// unloadBundleTopics closes every loaded topic and transaction
// coordinator of a bundle: the cluster's OnBundleLost.
func (b *Broker) unloadBundleTopics(ns string, r bundle.Range) {
	key := cluster.BundleKey(ns, r)
	b.mu.Lock()
	var names []string
	for full, l := range b.mu.topics {
		select {
		case <-l.done:
			if l.t != nil && l.t.bundleKey == key {
				names = append(names, full)
			}
		default:
		}
	}
	b.mu.Unlock()
	for _, full := range names {
		b.unloadTopic(full)
	}
	for _, h := range b.ext.bundles {
		h.BundleReleased(key)
	}
}

// bundleStats sums the loaded topics' rates per bundle for load reports.
func (b *Broker) bundleStats() map[string]cluster.BundleStats {
	b.mu.Lock()
	ts := make([]*topic, 0, len(b.mu.topics))
	for _, l := range b.mu.topics {
		select {
		case <-l.done:
			if l.t != nil {
				ts = append(ts, l.t)
			}
		default:
		}
	}
	b.mu.Unlock()
	out := map[string]cluster.BundleStats{}
	for _, t := range ts {
		st := out[t.bundleKey]
		rate, tput := t.loadRates.Update(t.msgIn.Load(), t.bytesIn.Load())
		st.MsgRateIn += rate
		st.MsgThroughputIn += tput
		st.Topics++
		t.mu.Lock()
		st.ProducerCount += len(t.mu.producers)
		t.mu.Unlock()
		out[t.bundleKey] = st
	}
	return out
}

// fencedByOtherOwner handles a write that failed because another owner
// opened the topic's managed ledger: the topic is unloaded (its clients
// get CLOSE_PRODUCER / CLOSE_CONSUMER and look it up again), once.
func (b *Broker) fencedByOtherOwner(t *topic) {
	if !t.fenceLogged.CompareAndSwap(false, true) {
		return
	}
	t.log.Warn("managed ledger fenced by another owner: unloading topic", "topic", t.full)
	go b.unloadTopic(t.full)
}

// handleClusterLookup answers LOOKUP through the cluster: Connect to the
// owner or Redirect (to the leader or the chosen broker).
func (c *conn) handleClusterLookup(m *pb.CommandLookupTopic) {
	rid := m.GetRequestId()
	resp := &pb.CommandLookupTopicResponse{RequestId: &rid}
	fail := func(code pb.ServerError, msg string) {
		resp.Response = pb.CommandLookupTopicResponse_Failed.Enum()
		resp.Error = code.Enum()
		resp.Message = &msg
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	tn, err := parseTopicName(m.GetTopic())
	if err != nil {
		fail(pb.ServerError_InvalidTopicName, err.Error())
	} else if res, err := c.b.cluster.svc.Lookup(ctx, tn.String(), m.GetAuthoritative()); err != nil {
		code, msg := lookupError(err)
		fail(code, msg)
	} else {
		if res.Redirect {
			resp.Response = pb.CommandLookupTopicResponse_Redirect.Enum()
		} else {
			resp.Response = pb.CommandLookupTopicResponse_Connect.Enum()
		}
		resp.BrokerServiceUrl = ptr(res.Target.NativeURL)
		if res.Target.NativeURLTLS != "" {
			resp.BrokerServiceUrlTls = ptr(res.Target.NativeURLTLS)
		}
		resp.Authoritative = ptr(res.Authoritative)
		resp.ProxyThroughServiceUrl = ptr(false)
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: resp})
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
	case errors.Is(err, cluster.ErrUnloading), errors.Is(err, cluster.ErrNotOwned),
		errors.Is(err, metadata.ErrUnavailable), errors.Is(err, cluster.ErrClosed):
		return pb.ServerError_MetadataError, err.Error()
	}
	return pb.ServerError_MetadataError, err.Error()
}
