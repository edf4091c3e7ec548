package console

import (
	"net/http"
	"sort"
	"time"

	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/topichistory"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// partitionRow is one partition in a partitioned topic's page.
type partitionRow struct {
	Name, Href string
	Loaded     bool
	Backlog    int64
	RateIn     float64
	RateOut    float64
	Storage    int64
}

// subRow is one subscription (summed over partitions).
type subRow struct {
	Name             string
	Type             string
	Backlog          int64
	Unacked          int64
	MsgRateOut       float64
	MsgThroughputOut float64
	Consumers        []topicstats.ConsumerStats
	// AdminPath is the subscription's admin REST path: the page's script
	// calls the admin API itself, so every action passes the same
	// authentication and authorization as any admin client.
	AdminPath string
}

type topicData struct {
	Name        string
	Partitioned bool
	Partitions  []partitionRow
	// Loaded is false when a clustered broker does not serve the topic.
	Loaded      bool
	Stats       topicstats.TopicStats
	Subs        []subRow
	AdminBase   string
	HistoryURL  string
	Charts      []chart
	IntervalSec float64
}

// topic renders one topic's page: a non-partitioned topic, a partition,
// or a partitioned topic (summed over its partitions).
func (c *Console) topic(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	full, ok := c.resolve(w, r, p)
	if !ok {
		return
	}
	ctx := r.Context()
	n, err := c.src.Partitions(ctx, full)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	path, _ := topicPath(full)
	d := topicData{Name: full, Partitioned: n > 0, AdminBase: "/admin/v2/" + path,
		HistoryURL: Prefix + "/topics/" + path + "/history", IntervalSec: c.src.HistoryInterval().Seconds()}
	d.Stats = topicstats.TopicStats{Subscriptions: map[string]topicstats.SubscriptionStats{}}
	if n > 0 {
		for i := 0; i < n; i++ {
			pn := partitionName(full, i)
			row := partitionRow{Name: pn, Href: topicHref(pn)}
			if st, ok := c.stats(r, pn); ok {
				row.Loaded = true
				row.Backlog, row.RateIn, row.RateOut, row.Storage = st.MsgBacklog, st.MsgRateIn, st.MsgRateOut, st.StorageSize
				merge(&d.Stats, st)
				d.Loaded = true
			}
			d.Partitions = append(d.Partitions, row)
		}
	} else {
		if c.src.Cluster() != nil {
			if c.redirectToOwner(w, r, full) {
				return
			}
			st, ok := c.src.LoadedTopicStats(full)
			if ok {
				merge(&d.Stats, st)
				d.Loaded = true
			}
		} else {
			st, err := c.src.TopicStats(ctx, full)
			if err != nil {
				c.fail(w, r, err)
				return
			}
			merge(&d.Stats, st)
			d.Loaded = true
		}
	}
	for name, s := range d.Stats.Subscriptions {
		d.Subs = append(d.Subs, subRow{Name: name, Type: s.Type, Backlog: s.MsgBacklog, Unacked: s.UnackedMessages,
			MsgRateOut: s.MsgRateOut, MsgThroughputOut: s.MsgThroughputOut, Consumers: s.Consumers,
			AdminPath: d.AdminBase + "/subscription/" + pathEscape(name)})
	}
	sort.Slice(d.Subs, func(i, j int) bool { return d.Subs[i].Name < d.Subs[j].Name })
	h := c.historyOf(full, n)
	d.Charts = charts(h)
	crumbs := []crumb{{"Overview", Prefix}}
	if tn, ns, ok := tenantNS(full); ok {
		crumbs = append(crumbs, crumb{tn, Prefix + "/tenants/" + pathEscape(tn)},
			crumb{ns, Prefix + "/namespaces/" + pathEscape(tn) + "/" + pathEscape(ns)})
	}
	crumbs = append(crumbs, crumb{p["topic"], ""})
	c.render(w, http.StatusOK, "topic", page{Title: full, Crumbs: crumbs, Data: d})
}

// resolve canonicalises the path's topic and checks that it exists (a
// partitioned topic, a created topic or partition, or a loaded
// non-persistent one), rendering the error page otherwise.
func (c *Console) resolve(w http.ResponseWriter, r *http.Request, p httpapi.Params) (string, bool) {
	d := p["domain"]
	if d != "persistent" && d != "non-persistent" {
		c.errorPage(w, r, http.StatusNotFound, "Unknown topic domain "+d)
		return "", false
	}
	full := d + "://" + p["tenant"] + "/" + p["ns"] + "/" + p["topic"]
	ctx := r.Context()
	ok, err := c.src.Policies().NamespaceExists(ctx, p["tenant"]+"/"+p["ns"])
	if err != nil {
		c.fail(w, r, err)
		return "", false
	}
	if !ok {
		c.errorPage(w, r, http.StatusNotFound, "Namespace "+p["tenant"]+"/"+p["ns"]+" does not exist")
		return "", false
	}
	n, err := c.src.Partitions(ctx, full)
	if err != nil {
		c.fail(w, r, err)
		return "", false
	}
	if n > 0 {
		return full, true
	}
	exists, err := c.src.TopicExists(ctx, full)
	if err != nil {
		c.fail(w, r, err)
		return "", false
	}
	if !exists {
		c.errorPage(w, r, http.StatusNotFound, "Topic "+full+" not found")
		return "", false
	}
	return full, true
}

// redirectToOwner sends the browser to the console of the broker that
// owns a clustered topic's bundle, when that is another broker.
func (c *Console) redirectToOwner(w http.ResponseWriter, r *http.Request, topic string) bool {
	cl := c.src.Cluster()
	ns, rg, err := cl.TopicBundle(r.Context(), topic)
	if err != nil {
		return false
	}
	od, ok, err := cl.Owner(r.Context(), ns, rg)
	if err != nil || !ok || od.HTTPURL == "" || od.HTTPURL == c.src.WebURL() {
		return false
	}
	http.Redirect(w, r, od.HTTPURL+r.URL.EscapedPath(), http.StatusTemporaryRedirect)
	return true
}

// merge adds one topic's (or partition's) stats to sum.
func merge(sum *topicstats.TopicStats, st topicstats.TopicStats) {
	sum.MsgRateIn += st.MsgRateIn
	sum.MsgRateOut += st.MsgRateOut
	sum.MsgThroughputIn += st.MsgThroughputIn
	sum.MsgThroughputOut += st.MsgThroughputOut
	sum.MsgInCounter += st.MsgInCounter
	sum.MsgOutCounter += st.MsgOutCounter
	sum.BytesInCounter += st.BytesInCounter
	sum.BytesOutCounter += st.BytesOutCounter
	sum.StorageSize += st.StorageSize
	sum.BacklogSize += st.BacklogSize
	sum.MsgBacklog += st.MsgBacklog
	sum.Publishers = append(sum.Publishers, st.Publishers...)
	for name, s := range st.Subscriptions {
		cur, ok := sum.Subscriptions[name]
		if !ok {
			sum.Subscriptions[name] = s
			continue
		}
		cur.MsgBacklog += s.MsgBacklog
		cur.UnackedMessages += s.UnackedMessages
		cur.MsgRateOut += s.MsgRateOut
		cur.MsgThroughputOut += s.MsgThroughputOut
		cur.Consumers = append(cur.Consumers, s.Consumers...)
		sum.Subscriptions[name] = cur
	}
}

// historyOf returns a topic's samples, a partitioned topic's summed
// sample by sample (the sampler stamps one tick's samples alike).
func (c *Console) historyOf(full string, partitions int) []topichistory.Sample {
	if partitions == 0 {
		return c.src.TopicHistory(full)
	}
	byAt := map[int64]*topichistory.Sample{}
	for i := 0; i < partitions; i++ {
		for _, s := range c.src.TopicHistory(partitionName(full, i)) {
			a := byAt[s.At]
			if a == nil {
				a = &topichistory.Sample{At: s.At}
				byAt[s.At] = a
			}
			a.MsgRateIn += s.MsgRateIn
			a.MsgRateOut += s.MsgRateOut
			a.MsgThroughputIn += s.MsgThroughputIn
			a.MsgThroughputOut += s.MsgThroughputOut
			a.MsgBacklog += s.MsgBacklog
			a.StorageSize += s.StorageSize
		}
	}
	out := make([]topichistory.Sample, 0, len(byAt))
	for _, s := range byAt {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// historyJSON is the chart data the page's script polls.
type historyJSON struct {
	Now        int64                 `json:"now"`
	WindowMs   int64                 `json:"windowMs"`
	IntervalMs int64                 `json:"intervalMs"`
	Samples    []topichistory.Sample `json:"samples"`
}

func (c *Console) history(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	full, ok := c.resolveJSON(w, r, p)
	if !ok {
		return
	}
	n, _ := c.src.Partitions(r.Context(), full)
	s := c.historyOf(full, n)
	if s == nil {
		s = []topichistory.Sample{}
	}
	httpapi.WriteJSON(w, http.StatusOK, historyJSON{Now: time.Now().UnixMilli(), WindowMs: window.Milliseconds(),
		IntervalMs: c.src.HistoryInterval().Milliseconds(), Samples: s})
}

// resolveJSON is resolve answering JSON errors ({"reason": ...}).
func (c *Console) resolveJSON(w http.ResponseWriter, r *http.Request, p httpapi.Params) (string, bool) {
	rec := &statusRecorder{}
	full, ok := c.resolve(rec, r, p)
	if !ok {
		httpapi.WriteError(w, rec.status, "Topic not found")
		return "", false
	}
	return full, true
}

// statusRecorder keeps only the status of a response.
type statusRecorder struct {
	status int
	h      http.Header
}

func (s *statusRecorder) Header() http.Header {
	if s.h == nil {
		s.h = http.Header{}
	}
	return s.h
}
func (s *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusRecorder) WriteHeader(code int)        { s.status = code }
