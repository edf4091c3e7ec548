package cluster

import (
	"context"
	"slices"

	"github.com/magnetar-mq/magnetar/isolation"
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
// of one group spread over the brokers. With failure domains (domains:
// broker id -> domain, nil when disabled) it first keeps the brokers of
// the domains whose brokers own the fewest, as Pulsar's
// filterDomainsNotHavingLeastNumberAntiAffinityNamespaces (a broker in
// no domain is in isolation.DefaultDomain). reports is changed in place
// and keeps at least one broker.
func antiAffinityFilter(ns string, peers []string, reports map[string]LocalBrokerData, pending map[string][]string, domains map[string]string) {
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
	if len(domains) > 0 {
		domainOf := func(id string) string {
			if d, ok := domains[id]; ok {
				return d
			}
			return isolation.DefaultDomain
		}
		perDomain := map[string]int{}
		for id := range reports {
			perDomain[domainOf(id)] += counts[id]
		}
		least := -1
		for _, c := range perDomain {
			if least < 0 || c < least {
				least = c
			}
		}
		for id := range reports {
			if perDomain[domainOf(id)] > least {
				delete(reports, id)
			}
		}
	}
	least := -1
	for id := range reports {
		if c := counts[id]; least < 0 || c < least {
			least = c
		}
	}
	for id := range reports {
		if counts[id] > least {
			delete(reports, id)
		}
	}
}
