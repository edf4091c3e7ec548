package brokercluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestLookupErrors: lookup failures get Pulsar's answers; transient
// ownership states keep the client retrying on its connection.
func TestLookupErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want pb.ServerError
	}{
		{fmt.Errorf("ns: %w", metadata.ErrNotFound), pb.ServerError_TopicNotFound},
		{fmt.Errorf("x: %w", cluster.ErrNoBroker), pb.ServerError_ServiceNotReady},
		{fmt.Errorf("x: %w", cluster.ErrUnloading), pb.ServerError_MetadataError},
		{fmt.Errorf("x: %w", cluster.ErrNotOwned), pb.ServerError_MetadataError},
		{metadata.ErrUnavailable, pb.ServerError_MetadataError},
		{cluster.ErrClosed, pb.ServerError_MetadataError},
	} {
		if got, _ := lookupError(c.err); got != c.want {
			t.Errorf("%v: %s, want %s", c.err, got, c.want)
		}
	}
}

// TestNotOwnedIsClusters: the core's not-owned errors match
// cluster.ErrNotOwned, which transactions and admin test for.
func TestNotOwnedIsClusters(t *testing.T) {
	var m Member
	if err := m.NotOwned("persistent://t/ns/x"); !errors.Is(err, cluster.ErrNotOwned) {
		t.Fatalf("NotOwned = %v, not cluster.ErrNotOwned", err)
	}
}

// TestBundleStats: the core's per-bundle loads become load report rows.
func TestBundleStats(t *testing.T) {
	got := bundleStats(map[string]broker.BundleLoad{
		"t/ns/0x00000000_0x40000000": {MsgRateIn: 10, MsgThroughputIn: 2048, Topics: 3, Producers: 2},
	})
	want := cluster.BundleStats{MsgRateIn: 10, MsgThroughputIn: 2048, Topics: 3, ProducerCount: 2}
	if len(got) != 1 || got["t/ns/0x00000000_0x40000000"] != want {
		t.Fatalf("bundleStats = %+v, want one row %+v", got, want)
	}
}

// TestLookupAnswer: a cluster lookup becomes LOOKUP's answer: Connect to
// the owner (its TLS URL only when it has one), Redirect with the
// authoritative flag, Failed with lookupError's code.
func TestLookupAnswer(t *testing.T) {
	owner := cluster.OwnerData{NativeURL: "pulsar://b1:6650"}
	r := lookupAnswer(cluster.LookupResult{Target: owner, Authoritative: true}, nil)
	if r.GetResponse() != pb.CommandLookupTopicResponse_Connect || r.GetBrokerServiceUrl() != "pulsar://b1:6650" ||
		r.BrokerServiceUrlTls != nil || !r.GetAuthoritative() || r.ProxyThroughServiceUrl == nil || r.GetProxyThroughServiceUrl() {
		t.Fatalf("connect: %v", r)
	}
	owner.NativeURLTLS = "pulsar+ssl://b1:6651"
	r = lookupAnswer(cluster.LookupResult{Target: owner, Redirect: true}, nil)
	if r.GetResponse() != pb.CommandLookupTopicResponse_Redirect || r.GetBrokerServiceUrlTls() != "pulsar+ssl://b1:6651" || r.GetAuthoritative() {
		t.Fatalf("redirect: %v", r)
	}
	r = lookupAnswer(cluster.LookupResult{}, fmt.Errorf("x: %w", cluster.ErrNoBroker))
	if r.GetResponse() != pb.CommandLookupTopicResponse_Failed || r.GetError() != pb.ServerError_ServiceNotReady || r.GetMessage() == "" {
		t.Fatalf("failed: %v", r)
	}
}
