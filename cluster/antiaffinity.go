package cluster

import (
	"context"
	"slices"
)

// antiAffinityPeers asks Options.AntiAffinityPeers for the other
// namespaces of the anti-affinity group of bundle key's namespace (nil
// without a group); called without s.mu, as it reads the metadata
// store.
func (s *Service) antiAffinityPeers(ctx context.Context, key string) (string, []string) {
	ns, _, err := splitKey(key)
	if err != nil || s.o.AntiAffinityPeers == nil {
		return ns, nil
	}
	return ns, s.o.AntiAffinityPeers(ctx, ns)
}

// antiAffinityFilter narrows the candidate brokers for a bundle of ns
// to those owning (or just given, pending) bundles of the fewest other
// namespaces of its anti-affinity group (peers), so that the namespaces
// of one group spread over the brokers: Pulsar's anti-affinity with
// every broker its own failure domain. reports is changed in place and
// keeps at least one broker.
func antiAffinityFilter(ns string, peers []string, reports map[string]LocalBrokerData, pending map[string][]string) {
	if len(peers) == 0 || len(reports) < 2 {
		return
	}
	counts := map[string]int{}
	for id, rep := range reports {
		owned := map[string]bool{} // peer namespaces on id
		for _, k := range append(slices.Clone(rep.Bundles), pending[id]...) {
			if pns, _, err := splitKey(k); err == nil && pns != ns && slices.Contains(peers, pns) {
				owned[pns] = true
			}
		}
		counts[id] = len(owned)
	}
	least := -1
	for _, c := range counts {
		if least < 0 || c < least {
			least = c
		}
	}
	for id := range reports {
		if counts[id] > least {
			delete(reports, id)
		}
	}
}
