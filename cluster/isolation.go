package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/magnetar-mq/magnetar/isolation"
)

// isolate narrows the candidate brokers (reports, changed in place) for
// bundle key to those its namespace's isolation policy allows (package
// isolation: the primaries, the secondaries too below min_limit, or the
// shared brokers for a namespace no policy matches). No broker allowed
// is ErrNoBroker, as Pulsar's lookup fails then; policies that cannot be
// read are not applied (the placement goes on, as Pulsar's does when it
// cannot read them).
func (s *Service) isolate(ctx context.Context, key string, reports map[string]LocalBrokerData) error {
	if s.o.ClusterName == "" {
		return nil
	}
	ns, _, err := splitKey(key)
	if err != nil {
		return nil
	}
	pols, err := s.iso.Policies(ctx, s.o.ClusterName)
	if err != nil {
		if !errors.Is(err, isolation.ErrNotFound) {
			s.log.Warn("namespace isolation policies unreadable: not applied", "err", err)
		}
		return nil
	}
	live := make([]string, 0, len(reports))
	for id := range reports {
		live = append(live, id)
	}
	slices.Sort(live)
	allowed := isolation.Candidates(pols, ns, live)
	if len(allowed) == 0 {
		return fmt.Errorf("%w: the namespace isolation policies allow none of the live brokers for %s", ErrNoBroker, ns)
	}
	for id := range reports {
		if !slices.Contains(allowed, id) {
			delete(reports, id)
		}
	}
	return nil
}

// failureDomains maps broker ids to their failure domain when failure
// domains are enabled (nil otherwise, or when there are none).
func (s *Service) failureDomains(ctx context.Context) map[string]string {
	if !s.Tuning().FailureDomainsEnabled || s.o.ClusterName == "" {
		return nil
	}
	ds, err := s.iso.FailureDomains(ctx, s.o.ClusterName)
	if err != nil || len(ds) == 0 {
		return nil
	}
	return isolation.Domains(ds)
}
