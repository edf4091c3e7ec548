package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/topicreg"
	"github.com/magnetar-mq/magnetar/topicstats"
)

func (a *API) registerTopicRoutes(rt routeTable) {
	const tp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	rt.Handle("GET", "/admin/v2/namespaces/{tenant}/{ns}/topics", auth.AccessNamespaceConsume, a.httpNamespaceTopics)
	rt.Handle("GET", "/admin/v2/{domain}/{tenant}/{ns}", auth.AccessNamespaceConsume, a.httpListTopics)
	rt.Handle("GET", "/admin/v2/{domain}/{tenant}/{ns}/partitioned", auth.AccessNamespaceConsume, a.httpListPartitioned)
	rt.Add(httpapi.Route{Method: "GET", Pattern: tp + "/partitions", Access: auth.AccessTopicLookup, Response: map[string]int{},
		Handler: a.onTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
			n, err := a.topics.Partitions(r.Context(), topic)
			if n == 0 && err == nil && r.URL.Query().Get("checkAllowAutoCreation") == "true" {
				n = a.topics.AutoCreatePartitioned(r.Context(), topic)
			}
			if n > 1 && err == nil && a.versionCheck.Load() {
				if reason := clientVersionRefusal(r.Header.Get("User-Agent")); reason != "" {
					writeError(w, http.StatusMethodNotAllowed, reason)
					return
				}
			}
			a.reply(w, map[string]int{"partitions": n}, err)
		})})
	rt.Add(httpapi.Route{Method: "PUT", Pattern: tp + "/partitions", Access: auth.AccessTenantAdmin, Request: topicreg.PartitionedMetadata{},
		Handler: a.withPartitions(func(ctx context.Context, topic string, m topicreg.PartitionedMetadata) error {
			return a.topics.CreatePartitionedTopic(ctx, topic, m)
		})})
	rt.Add(httpapi.Route{Method: "POST", Pattern: tp + "/partitions", Access: auth.AccessTenantAdmin, Request: 0,
		Handler: a.withPartitions(func(ctx context.Context, topic string, m topicreg.PartitionedMetadata) error {
			return a.topics.UpdatePartitionedTopic(ctx, topic, m.Partitions)
		})})
	rt.Handle("DELETE", tp+"/partitions", auth.AccessTenantAdmin, a.topicAction(a.topics.DeletePartitionedTopic))
	rt.Add(httpapi.Route{Method: "PUT", Pattern: tp, Access: auth.AccessTenantAdmin, Request: map[string]string{},
		Handler: a.onTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
			props, err := createTopicProperties(r)
			if err != nil {
				writeError(w, http.StatusPreconditionFailed, "Invalid properties: "+err.Error())
				return
			}
			a.replyDone(w, a.props.CreateTopicWithProperties(r.Context(), topic, props))
		})})
	rt.Handle("DELETE", tp, auth.AccessTenantAdmin, a.httpDeleteTopic)
	rt.Handle("GET", tp+"/stats", auth.AccessTopicLookup, a.onTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
		st, err := a.reads.TopicStats(r.Context(), topic)
		a.reply(w, excludeClients(r, st), err)
	}))
	rt.Handle("GET", tp+"/partitioned-stats", auth.AccessTopicLookup, a.httpPartitionedStats)
	rt.Handle("GET", tp+"/internalStats", auth.AccessTopicLookup, topicValue(a, a.reads.InternalStats))
	rt.Handle("GET", tp+"/subscriptions", auth.AccessTopicConsume, a.httpListSubscriptions)
	rt.Handle("GET", tp+"/lastMessageId", auth.AccessTopicLookup, topicValue(a, messageID(a.reads.LastMessageID)))
	rt.Handle("POST", tp+"/terminate", auth.AccessTenantAdmin, topicValue(a, messageID(a.life.Terminate)))
	rt.Handle("PUT", tp+"/unload", auth.AccessTenantAdmin, a.httpUnload)
	rt.Handle("GET", tp+"/ledger/{ledger}/entry/{entry}", auth.AccessTopicConsume, a.httpMessageByID)
	rt.Handle("GET", tp+"/getMessageIdByIndex", auth.AccessTenantAdmin, a.httpMessageIDByIndex)
	a.registerTopicPolicyRoutes(rt)
	// Compaction: start it (204; 409 while one runs), read its status.
	rt.Handle("PUT", tp+"/compaction", auth.AccessTenantAdmin, a.topicAction(func(ctx context.Context, topic string) error {
		if a.compaction == nil {
			return errNoCompaction
		}
		return a.compaction.Compact(ctx, topic)
	}))
	rt.Handle("GET", tp+"/compaction", auth.AccessTenantAdmin, topicValue(a, func(ctx context.Context, topic string) (map[string]string, error) {
		if a.compaction == nil {
			return nil, errNoCompaction
		}
		st, lastErr, err := a.compaction.CompactionStatus(ctx, topic)
		return map[string]string{"status": st, "lastError": lastErr}, err
	}))
	a.registerTopicPropertiesRoutes(rt)
	// Topic permissions: permissions.go.
}

// errNoCompaction answers the compaction endpoints of a broker without
// the compaction feature.
var errNoCompaction = broker.Reason(broker.ErrNotAllowed, "Compaction is not enabled on this broker")

// domainNsFromParams checks the {domain} path parameter and that the
// {tenant}/{ns} namespace exists, writing the 404 otherwise.
func (a *API) domainNsFromParams(w http.ResponseWriter, r *http.Request, p params) (domain, ns string, ok bool) {
	domain = p["domain"]
	if domain != "persistent" && domain != "non-persistent" {
		writeError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return "", "", false
	}
	ns, ok = a.nsFromParams(w, r, p)
	return domain, ns, ok
}

func (a *API) httpNamespaceTopics(w http.ResponseWriter, r *http.Request, p params) {
	ns, ok := a.nsFromParams(w, r, p)
	if !ok {
		return
	}
	mode := strings.ToUpper(r.URL.Query().Get("mode"))
	pers := mode == "" || mode == "PERSISTENT" || mode == "ALL"
	nonPers := mode == "NON_PERSISTENT" || mode == "ALL"
	a.writeTopics(w, r, ns, pers, nonPers)
}

func (a *API) httpListTopics(w http.ResponseWriter, r *http.Request, p params) {
	d, ns, ok := a.domainNsFromParams(w, r, p)
	if !ok {
		return
	}
	a.writeTopics(w, r, ns, d == "persistent", d == "non-persistent")
}

func (a *API) writeTopics(w http.ResponseWriter, r *http.Request, ns string, pers, nonPers bool) {
	ts, err := a.topics.TopicsOfNamespace(r.Context(), ns, pers, nonPers)
	if err != nil {
		a.serviceError(w, err)
		return
	}
	if ts == nil {
		ts = []string{}
	}
	writeJSON(w, http.StatusOK, ts)
}

func (a *API) httpListPartitioned(w http.ResponseWriter, r *http.Request, p params) {
	d, ns, ok := a.domainNsFromParams(w, r, p)
	if !ok {
		return
	}
	ts, err := a.topics.PartitionedTopics(r.Context(), ns, d)
	a.reply(w, ts, err)
}

// withPartitions serves a write of a partition count (the body, as
// parsePartitionsBody reads it) on one topic, answered with 204.
func (a *API) withPartitions(do func(ctx context.Context, topic string, m topicreg.PartitionedMetadata) error) handler {
	return a.onTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
		m, code, why := parsePartitionsBody(r)
		if why != "" {
			writeError(w, code, why)
			return
		}
		a.replyDone(w, do(r.Context(), topic, m))
	})
}

// parsePartitionsBody accepts a bare integer or {"partitions":N,...}. A
// body that is neither is a 400; a count outside 1..2^31-1 (however
// large) is a 412, as Pulsar answers counts it refuses.
func parsePartitionsBody(r *http.Request) (m topicreg.PartitionedMetadata, code int, reason string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return m, http.StatusBadRequest, err.Error()
	}
	var raw struct {
		Partitions json.Number       `json:"partitions"`
		Properties map[string]string `json:"properties"`
	}
	num := json.Number(strings.TrimSpace(string(body)))
	if !isNumber(string(num)) {
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil || raw.Partitions == "" {
			return m, http.StatusBadRequest, `body must be an integer or {"partitions":N}`
		}
		num, m.Properties = raw.Partitions, raw.Properties
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	switch {
	case !isNumber(string(num)) || strings.ContainsAny(string(num), ".eE"):
		return m, http.StatusBadRequest, fmt.Sprintf("number of partitions %s is not an integer", num)
	case err != nil || n > math.MaxInt32:
		return m, http.StatusPreconditionFailed, fmt.Sprintf("Number of partitions %s is outside 1..%d", num, math.MaxInt32)
	case n <= 0:
		return m, http.StatusPreconditionFailed, "Number of partitions should be more than 0"
	}
	m.Partitions = int(n)
	return m, 0, ""
}

// isNumber reports whether s is a JSON number (not a quoted one).
func isNumber(s string) bool {
	var v json.Number
	return s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Unmarshal([]byte(s), &v) == nil
}

func (a *API) httpDeleteTopic(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := a.topicFromParams(w, r, p)
	if !ok {
		return
	}
	if !a.topicExists(w, r, topic) {
		return
	}
	err := a.topics.DeleteTopic(r.Context(), topic, r.URL.Query().Get("force") == "true")
	if errors.Is(err, broker.ErrTopicNotFound) {
		err = nil // deleted meanwhile
	}
	a.replyDone(w, err)
}

// PartitionedTopicStats is Pulsar's partitioned-stats JSON: the
// aggregate TopicStats plus per-partition stats.
type PartitionedTopicStats struct {
	topicstats.TopicStats
	Metadata   topicreg.PartitionedMetadata     `json:"metadata"`
	Partitions map[string]topicstats.TopicStats `json:"partitions"`
}

// maxStatsPartitions bounds partitioned-stats: a topic with more
// partitions (possible only if created before the broker had a limit) is
// refused rather than collected. Collection also stops when the request
// is cancelled.
const maxStatsPartitions = 1 << 20

func (a *API) httpPartitionedStats(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := a.topicFromParams(w, r, p)
	if !ok {
		return
	}
	n, err := a.topics.Partitions(r.Context(), topic)
	if err != nil {
		a.internalError(w, err)
		return
	}
	if n == 0 {
		writeError(w, http.StatusNotFound, "Partitioned Topic not found")
		return
	}
	if n > maxStatsPartitions {
		writeError(w, http.StatusPreconditionFailed, fmt.Sprintf("%d partitions are too many to collect stats for (at most %d)", n, maxStatsPartitions))
		return
	}
	out := PartitionedTopicStats{Metadata: topicreg.PartitionedMetadata{Partitions: n}, Partitions: map[string]topicstats.TopicStats{}}
	sum := topicstats.NewPartitioned()
	for i := range n {
		if r.Context().Err() != nil {
			return // the client went away: stop collecting
		}
		pn := partitionName(topic, i)
		st, err := a.reads.TopicStats(r.Context(), pn)
		if err != nil {
			if !errors.Is(err, broker.ErrTopicNotFound) {
				a.internalError(w, err)
				return
			}
			// A partition no client created yet: listed with zero
			// stats, as Pulsar lists every partition.
			st = topicstats.Empty("Disabled")
		}
		st = excludeClients(r, st)
		sum.Add(st)
		if r.URL.Query().Get("perPartition") != "false" {
			out.Partitions[pn] = st
		}
	}
	out.TopicStats = sum.Stats()
	writeJSON(w, http.StatusOK, out)
}

// excludeClients applies the stats options excludePublishers and
// excludeConsumers: Pulsar then lists no publishers, and no consumers in
// any subscription (empty lists, not absent ones).
func excludeClients(r *http.Request, st topicstats.TopicStats) topicstats.TopicStats {
	q := r.URL.Query()
	if q.Get("excludePublishers") == "true" {
		st.Publishers = []topicstats.PublisherStats{}
	}
	if q.Get("excludeConsumers") == "true" {
		for name, ss := range st.Subscriptions {
			ss.Consumers = []topicstats.ConsumerStats{}
			st.Subscriptions[name] = ss
		}
	}
	return st
}

// partitionName is the name of partition i of topic.
func partitionName(topic string, i int) string {
	return topic + pulsarproto.PartitionSuffix + strconv.Itoa(i)
}

func (a *API) httpListSubscriptions(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := a.topicFromParams(w, r, p)
	if !ok {
		return
	}
	var names []string
	if n, err := a.topics.Partitions(r.Context(), topic); err == nil && n > 0 {
		seen := map[string]bool{}
		for i := range n {
			subs, err := a.subs.Subscriptions(r.Context(), partitionName(topic, i))
			if err != nil {
				continue
			}
			for _, s := range subs {
				if !seen[s] {
					seen[s] = true
					names = append(names, s)
				}
			}
		}
	} else {
		subs, err := a.subs.Subscriptions(r.Context(), topic)
		if err != nil {
			a.serviceError(w, err)
			return
		}
		names = subs
	}
	if names == nil {
		names = []string{}
	}
	writeJSON(w, http.StatusOK, names)
}

// messageIDJSON is Pulsar's MessageId JSON.
type messageIDJSON struct {
	LedgerID       int64 `json:"ledgerId"`
	EntryID        int64 `json:"entryId"`
	PartitionIndex int   `json:"partitionIndex"`
	BatchIndex     *int  `json:"batchIndex,omitempty"`
}

func toJSONID(id broker.MessageID) messageIDJSON {
	out := messageIDJSON{LedgerID: id.LedgerID, EntryID: id.EntryID, PartitionIndex: id.Partition}
	if id.BatchIndex >= 0 {
		v := int(id.BatchIndex)
		out.BatchIndex = &v
	}
	return out
}

func (a *API) httpUnload(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := a.topicFromParams(w, r, p)
	if !ok {
		return
	}
	if n, _ := a.topics.Partitions(r.Context(), topic); n > 0 {
		for i := range n {
			_, _ = a.life.UnloadTopic(partitionName(topic, i))
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if a.topicExists(w, r, topic) {
		_, err := a.life.UnloadTopic(topic)
		a.replyDone(w, err)
	}
}

func (a *API) httpMessageByID(w http.ResponseWriter, r *http.Request, p params) {
	l, err1 := strconv.ParseInt(p["ledger"], 10, 64)
	e, err2 := strconv.ParseInt(p["entry"], 10, 64)
	if err1 != nil || err2 != nil {
		writeError(w, http.StatusBadRequest, "ledger and entry ids must be integers")
		return
	}
	topic, ok := a.topicFromParams(w, r, p)
	if !ok {
		return
	}
	id := broker.MessageID{LedgerID: l, EntryID: e, BatchIndex: -1}
	data, err := a.reads.ReadEntry(r.Context(), topic, id)
	if err != nil {
		a.serviceError(w, err)
		return
	}
	a.writeRawMessage(w, id, data)
}

// httpMessageIDByIndex answers the id of the entry holding the message
// with broker entry metadata index ?index=N (Pulsar's getMessageIdByIndex).
func (a *API) httpMessageIDByIndex(w http.ResponseWriter, r *http.Request, p params) {
	q := r.URL.Query().Get("index")
	idx, err := strconv.ParseInt(q, 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("index must be an integer, got %q", q))
		return
	}
	topic, ok := a.topicFromParams(w, r, p)
	if !ok {
		return
	}
	id, err := a.reads.MessageIDByIndex(r.Context(), topic, idx)
	a.reply(w, toJSONID(id), err)
}
