package cluster

import (
	"context"
	"errors"
	"net/url"
	"sort"

	"github.com/magnetar-mq/magnetar/bundle"
)

// autoSplit (leader) splits every bundle past a threshold (see
// Options.SplitMaxTopics), Pulsar's BundleSplitterTask: bundles with
// fewer than two topics are skipped, and a namespace never goes past
// bundle.MaxCount bundles. The owner splits (here, or through its admin
// API) with range_equally_divide and unloads the halves, which the next
// lookups place again.
func (s *Service) autoSplit(ctx context.Context) {
	ids, err := s.Brokers(ctx)
	if err != nil {
		return
	}
	planned := map[string]int{} // namespace -> splits planned this round
	for _, id := range ids {
		rep, err := s.report(ctx, id)
		if err != nil {
			continue
		}
		keys := make([]string, 0, len(rep.LastStats))
		for k := range rep.LastStats {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			st := rep.LastStats[k]
			if st.Topics < 2 || !s.overSplitThreshold(st) {
				continue
			}
			ns, r, err := splitKey(k)
			if err != nil {
				continue
			}
			bs, err := s.Bundles(ctx, ns)
			if err != nil || !bs.Has(r) || bs.Count()+planned[ns] >= bundle.MaxCount {
				continue
			}
			planned[ns]++
			s.log.Info("splitting bundle past threshold", "bundle", k, "broker", id, "topics", st.Topics,
				"sessions", st.ProducerCount+st.ConsumerCount, "msgRate", st.MsgRateIn+st.MsgRateOut)
			if err := s.splitAnywhere(ctx, ns, r, rep); err != nil {
				s.log.Warn("auto split", "bundle", k, "err", err)
			}
		}
	}
}

func (s *Service) overSplitThreshold(st BundleStats) bool {
	t := s.Tuning()
	return st.Topics > t.SplitMaxTopics ||
		st.ProducerCount+st.ConsumerCount > t.SplitMaxSessions ||
		st.MsgRateIn+st.MsgRateOut > t.SplitMaxMsgRate ||
		st.MsgThroughputIn+st.MsgThroughputOut > t.SplitMaxBytesRate
}

// splitAnywhere asks the bundle's owner (described by rep) to split it.
func (s *Service) splitAnywhere(ctx context.Context, ns string, r bundle.Range, rep LocalBrokerData) error {
	if rep.BrokerID == s.o.BrokerID || rep.PulsarServiceURL == s.o.ServiceURL {
		_, err := s.Split(ctx, ns, r, SplitRangeEqually, nil, true)
		return err
	}
	err := httpPut(ctx, rep.WebServiceURL+"/admin/v2/namespaces/"+ns+"/"+url.PathEscape(r.String())+"/split?unload=true")
	if errors.Is(err, errHTTPNotFound) {
		return nil
	}
	return err
}
