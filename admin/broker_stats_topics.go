package admin

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// /admin/v2/broker-stats/topics: the stats of every topic this broker
// has loaded, nested as Pulsar nests them: namespace → bundle range →
// persistent / non-persistent → topic → topic stats. The standalone
// serves every namespace as one bundle (the full range); a clustered
// broker its owned bundles. And the standalone's load report
// (broker-stats/load-report): Pulsar's LocalBrokerData built from the
// same topic stats.

const fullRange = "0x00000000_0xffffffff"

// loadedTopic is one loaded topic with its bundle ("tenant/ns/range").
type loadedTopic struct {
	name, bundleKey string
}

// loadedTopics lists the topics this broker has loaded, by bundle.
func (a *API) loadedTopics() []loadedTopic { return loadedTopicsOf(a.own) }

// topicLoader is the part of a role that lists the loaded topics.
type topicLoader interface {
	Cluster() *cluster.Service
	LoadedTopicsOf(bundleKey string) []string
}

// loadedTopicsOf lists the topics src has loaded, by bundle: a
// clustered broker's owned bundles, else every loaded topic in its
// namespace's one bundle (the full range).
func loadedTopicsOf(src topicLoader) []loadedTopic {
	var out []loadedTopic
	if c := src.Cluster(); c != nil {
		for _, key := range c.OwnedBundles() {
			for _, t := range src.LoadedTopicsOf(key) {
				out = append(out, loadedTopic{t, key})
			}
		}
		return out
	}
	for _, t := range src.LoadedTopicsOf("") {
		tn, err := broker.ParseTopicName(t)
		if err != nil {
			continue
		}
		out = append(out, loadedTopic{t, tn.NamespaceName() + "/" + fullRange})
	}
	return out
}

func (a *API) registerBrokerStatsTopicRoutes(rt routeTable) {
	rt.Add(httpapi.Route{Method: "GET", Pattern: "/admin/v2/broker-stats/topics", Access: auth.AccessSuperUser,
		Response: map[string]map[string]map[string]map[string]topicstats.TopicStats{}, Handler: a.httpBrokerTopics})
}

func (a *API) httpBrokerTopics(w http.ResponseWriter, r *http.Request, _ params) {
	out := map[string]map[string]map[string]map[string]topicstats.TopicStats{}
	for _, lt := range a.loadedTopics() {
		st, err := a.reads.TopicStats(r.Context(), lt.name)
		if err != nil {
			continue // unloaded meanwhile
		}
		i := strings.LastIndexByte(lt.bundleKey, '/')
		ns, rng := lt.bundleKey[:i], lt.bundleKey[i+1:]
		domain := "persistent"
		if strings.HasPrefix(lt.name, "non-persistent://") {
			domain = "non-persistent"
		}
		if out[ns] == nil {
			out[ns] = map[string]map[string]map[string]topicstats.TopicStats{}
		}
		if out[ns][rng] == nil {
			out[ns][rng] = map[string]map[string]topicstats.TopicStats{}
		}
		if out[ns][rng][domain] == nil {
			out[ns][rng][domain] = map[string]topicstats.TopicStats{}
		}
		out[ns][rng][domain][lt.name] = st
	}
	writeJSON(w, http.StatusOK, out)
}

// standaloneLoadReport is the standalone's LocalBrokerData: its URLs,
// CPU and memory, and the rates, topics, producers and consumers of its
// loaded topics by bundle.
func (a *API) standaloneLoadReport(ctx context.Context) cluster.LocalBrokerData {
	d := cluster.LocalBrokerData{
		WebServiceURL: a.node.WebURL(), WebServiceURLTLS: a.own.WebURLTLS(), PulsarServiceURL: a.node.ServiceURL(),
		PersistentTopicsEnabled: true, NonPersistentTopicsOK: true,
		LastUpdate: time.Now().UnixMilli(), LastStats: map[string]cluster.BundleStats{},
		Bundles: []string{}, LastBundleGains: []string{}, LastBundleLosses: []string{},
		BrokerVersionString: "magnetar", LoadReportType: "LocalBrokerData", BrokerID: a.own.BrokerID(),
		LoadManagerClassName: "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
		AdvertisedListeners:  map[string]string{}, Protocols: map[string]string{},
		CPU: a.cpu.Sample(), Memory: cluster.MemoryUsage(),
	}
	for _, lt := range a.loadedTopics() {
		st, err := a.reads.TopicStats(ctx, lt.name)
		if err != nil {
			continue
		}
		b, seen := d.LastStats[lt.bundleKey]
		if !seen {
			d.Bundles = append(d.Bundles, lt.bundleKey)
		}
		b.MsgRateIn += st.MsgRateIn
		b.MsgRateOut += st.MsgRateOut
		b.MsgThroughputIn += st.MsgThroughputIn
		b.MsgThroughputOut += st.MsgThroughputOut
		b.Topics++
		b.ProducerCount += len(st.Publishers)
		for _, s := range st.Subscriptions {
			b.ConsumerCount += len(s.Consumers)
		}
		d.LastStats[lt.bundleKey] = b
	}
	for _, b := range d.LastStats {
		d.MsgRateIn += b.MsgRateIn
		d.MsgRateOut += b.MsgRateOut
		d.MsgThroughputIn += b.MsgThroughputIn
		d.MsgThroughputOut += b.MsgThroughputOut
		d.NumTopics += b.Topics
		d.NumProducers += b.ProducerCount
		d.NumConsumers += b.ConsumerCount
	}
	d.NumBundles = len(d.Bundles)
	// Bandwidth in KB/s, as Pulsar's load reports carry it (no NIC limit
	// known: 0).
	d.BandwidthIn = cluster.ResourceUsage{Usage: d.MsgThroughputIn * 8 / 1024}
	d.BandwidthOut = cluster.ResourceUsage{Usage: d.MsgThroughputOut * 8 / 1024}
	return d
}
