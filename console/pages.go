package console

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// tenantRow is one line of the overview's tenant table.
type tenantRow struct {
	Name           string
	Namespaces     int
	AdminRoles     string
	AllowedCluster string
}

type overviewData struct {
	Tenants         []tenantRow
	Bookies         []bookieRow
	Writable, RO    int
	WebURL, Service string
	Clustered       bool
	HistoryInterval string
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, _ httpapi.Params) {
	ctx := r.Context()
	pol := c.src.Policies()
	names, err := pol.Tenants(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	sort.Strings(names)
	d := overviewData{WebURL: c.src.WebURL(), Service: c.src.ServiceURL(), Clustered: c.src.Cluster() != nil,
		HistoryInterval: c.src.HistoryInterval().String()}
	for _, t := range names {
		row := tenantRow{Name: t}
		if ns, err := pol.Namespaces(ctx, t); err == nil {
			row.Namespaces = len(ns)
		}
		if ti, err := pol.Tenant(ctx, t); err == nil {
			row.AdminRoles = strings.Join(ti.AdminRoles, ", ")
			row.AllowedCluster = strings.Join(ti.AllowedClusters, ", ")
		}
		d.Tenants = append(d.Tenants, row)
	}
	d.Bookies = bookieRows(c.src.Bookies())
	for _, b := range d.Bookies {
		if b.ReadOnly {
			d.RO++
		} else {
			d.Writable++
		}
	}
	c.render(w, http.StatusOK, "overview", page{Title: "Overview", Data: d})
}

type tenantData struct {
	Tenant     string
	Namespaces []crumb
}

func (c *Console) tenant(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	t := p["tenant"]
	ns, err := c.src.Policies().Namespaces(r.Context(), t)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	sort.Strings(ns)
	d := tenantData{Tenant: t}
	for _, n := range ns {
		_, local, _ := strings.Cut(n, "/")
		d.Namespaces = append(d.Namespaces, crumb{n, Prefix + "/namespaces/" + url.PathEscape(t) + "/" + url.PathEscape(local)})
	}
	c.render(w, http.StatusOK, "tenant", page{Title: "Tenant " + t,
		Crumbs: []crumb{{"Overview", Prefix}, {t, ""}}, Data: d})
}

// topicRow is one topic (partitioned topics summed over their
// partitions) in a namespace's table.
type topicRow struct {
	Name, Href    string
	Domain        string
	Partitions    int
	Loaded        bool
	Producers     int
	Subscriptions int
	Consumers     int
	Backlog       int64
	RateIn        float64
	RateOut       float64
	ThroughputIn  float64
	ThroughputOut float64
	StorageSize   int64
}

type namespaceData struct {
	Namespace string
	Topics    []topicRow
}

func (c *Console) namespace(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	ctx := r.Context()
	ns := p["tenant"] + "/" + p["ns"]
	ok, err := c.src.Policies().NamespaceExists(ctx, ns)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if !ok {
		c.errorPage(w, r, http.StatusNotFound, "Namespace "+ns+" does not exist")
		return
	}
	all, err := c.src.TopicsOfNamespace(ctx, ns, true, true)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	partitioned := map[string]int{}
	for _, d := range []string{"persistent", "non-persistent"} {
		list, err := c.src.PartitionedTopics(ctx, ns, d)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		for _, t := range list {
			n, err := c.src.Partitions(ctx, t)
			if err == nil && n > 0 {
				partitioned[t] = n
			}
		}
	}
	var rows []topicRow
	for t, n := range partitioned {
		row := topicRow{Name: t, Partitions: n}
		for i := 0; i < n; i++ {
			if st, ok := c.stats(r, partitionName(t, i)); ok {
				row.add(st)
			}
		}
		rows = append(rows, row)
	}
	for _, t := range all {
		if base, _, ok := splitPartition(t); ok && partitioned[base] > 0 {
			continue
		}
		row := topicRow{Name: t}
		if st, ok := c.stats(r, t); ok {
			row.add(st)
		}
		rows = append(rows, row)
	}
	for i := range rows {
		rows[i].Href = topicHref(rows[i].Name)
		rows[i].Domain, _, _ = strings.Cut(rows[i].Name, "://")
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	c.render(w, http.StatusOK, "namespace", page{Title: "Namespace " + ns,
		Crumbs: []crumb{{"Overview", Prefix}, {p["tenant"], Prefix + "/tenants/" + url.PathEscape(p["tenant"])}, {p["ns"], ""}},
		Data:   namespaceData{Namespace: ns, Topics: rows}})
}

// stats returns a topic's stats: on a single broker it loads the topic
// (as the admin API's stats do); in a cluster only topics loaded here are
// shown, so listing a namespace never takes bundles from other brokers.
func (c *Console) stats(r *http.Request, topic string) (topicstats.TopicStats, bool) {
	if c.src.Cluster() != nil {
		return c.src.LoadedTopicStats(topic)
	}
	st, err := c.src.TopicStats(r.Context(), topic)
	return st, err == nil
}

func (row *topicRow) add(st topicstats.TopicStats) {
	row.Loaded = true
	row.Producers += len(st.Publishers)
	row.Subscriptions = max(row.Subscriptions, len(st.Subscriptions))
	for _, s := range st.Subscriptions {
		row.Consumers += len(s.Consumers)
	}
	row.Backlog += st.MsgBacklog
	row.RateIn += st.MsgRateIn
	row.RateOut += st.MsgRateOut
	row.ThroughputIn += st.MsgThroughputIn
	row.ThroughputOut += st.MsgThroughputOut
	row.StorageSize += st.StorageSize
}

// partitionSuffix separates a partition's index from its topic's name.
const partitionSuffix = "-partition-"

func partitionName(topic string, i int) string { return topic + partitionSuffix + strconv.Itoa(i) }

// splitPartition splits "name-partition-N" into name and N.
func splitPartition(topic string) (string, int, bool) {
	i := strings.LastIndex(topic, partitionSuffix)
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(topic[i+len(partitionSuffix):])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return topic[:i], n, true
}

// topicPath turns "persistent://t/ns/x" into "persistent/t/ns/x" with
// each segment path-escaped; ok is false for a malformed name.
func topicPath(full string) (string, bool) {
	domain, rest, ok := strings.Cut(full, "://")
	if !ok {
		return "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 {
		return "", false
	}
	return url.PathEscape(domain) + "/" + url.PathEscape(parts[0]) + "/" + url.PathEscape(parts[1]) + "/" + url.PathEscape(parts[2]), true
}

func topicHref(full string) string {
	p, ok := topicPath(full)
	if !ok {
		return ""
	}
	return Prefix + "/topics/" + p
}

// bookieRow is one bookie as the console shows it.
type bookieRow struct {
	ID              string
	ReadOnly        bool
	DiskUsed        string
	DiskPercent     float64
	HasDisk         bool
	JournalSyncMs   float64
	HasJournal      bool
	AddLatencyMs    float64
	HasAddLatency   bool
	ReadOnlyReasons string
}

// Stats keys the console reads from bookieinfo.Status.Stats (the
// standalone fills them; docs/console.md lists them).
const (
	statDiskUsed       = "disk_used_bytes"
	statDiskTotal      = "disk_total_bytes"
	statJournalSyncAvg = "journal_sync_latency_ms_avg"
	statAddLatencyAvg  = "add_latency_ms_avg"
)

func bookieRows(list []bookieinfo.Status) []bookieRow {
	rows := make([]bookieRow, 0, len(list))
	for _, b := range list {
		row := bookieRow{ID: b.BookieID, ReadOnly: b.ReadOnly}
		if total, ok := b.Stats[statDiskTotal]; ok && total > 0 {
			used := b.Stats[statDiskUsed]
			row.HasDisk = true
			row.DiskPercent = used / total * 100
			row.DiskUsed = bytesIEC(used) + " of " + bytesIEC(total)
		}
		if v, ok := b.Stats[statJournalSyncAvg]; ok {
			row.HasJournal, row.JournalSyncMs = true, v
		}
		if v, ok := b.Stats[statAddLatencyAvg]; ok {
			row.HasAddLatency, row.AddLatencyMs = true, v
		}
		var reasons []string
		for k, v := range b.Stats {
			if r, ok := strings.CutPrefix(k, "read_only_reason_"); ok && v != 0 {
				reasons = append(reasons, strings.ReplaceAll(r, "_", " "))
			}
		}
		sort.Strings(reasons)
		row.ReadOnlyReasons = strings.Join(reasons, ", ")
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows
}

func (c *Console) bookies(w http.ResponseWriter, r *http.Request, _ httpapi.Params) {
	c.render(w, http.StatusOK, "bookies", page{Title: "Bookies",
		Crumbs: []crumb{{"Overview", Prefix}, {"Bookies", ""}},
		Data:   bookieRows(c.src.Bookies())})
}
