package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// registerAdmin installs the broker's own HTTP endpoints. Other admin
// endpoints are added through Router().Handle.
func (b *Broker) registerAdmin(rt *Router) {
	b.registerAdminAPI(rt)
	b.registerSchemaRoutes(rt)
	b.registerClusterRoutes(rt)
	rt.Handle("GET", "/admin/v2/brokers/health", b.httpHealth)
	rt.Handle("GET", "/metrics", func(w http.ResponseWriter, _ *http.Request, _ Params) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		b.writeMetrics(w)
	})
	rt.Handle("GET", "/admin/v2/clusters", func(w http.ResponseWriter, r *http.Request, _ Params) {
		cs, err := b.reg.clusters(r.Context())
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, cs)
	})
	rt.Handle("GET", "/admin/v2/{domain}/{tenant}/{ns}/{topic}/stats", b.httpTopicStats)
	rt.Handle("GET", "/admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions", b.httpGetPartitions)
	rt.Handle("PUT", "/admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions", b.httpCreatePartitions)
	rt.Handle("POST", "/admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions", b.httpUpdatePartitions)
	rt.Handle("DELETE", "/admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions", b.httpDeletePartitions)
	rt.Handle("GET", "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}", b.httpLookup)
	rt.Handle("GET", "/admin/v2/namespaces/{tenant}/{ns}/topics", b.httpNamespaceTopics)
}

// TopicFromParams canonicalises the {domain}/{tenant}/{ns}/{topic} path
// parameters, writing a 4xx and returning ok=false on bad input.
func TopicFromParams(w http.ResponseWriter, p Params) (topicName, bool) {
	d := p["domain"]
	if d != "persistent" && d != "non-persistent" {
		writeError(w, http.StatusNotFound, "unknown topic domain "+strconv.Quote(d))
		return topicName{}, false
	}
	tn, err := parseTopicName(d + "://" + p["tenant"] + "/" + p["ns"] + "/" + p["topic"])
	if err != nil {
		writeError(w, http.StatusPreconditionFailed, err.Error())
		return topicName{}, false
	}
	return tn, true
}

func (b *Broker) nsExists(ctx context.Context, w http.ResponseWriter, tn topicName) bool {
	ok, err := b.reg.namespaceExists(ctx, tn.NamespaceName())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return false
	}
	if !ok {
		writeError(w, http.StatusNotFound, "Namespace does not exist")
		return false
	}
	return true
}

// TopicStats returns the stats of a topic, loading it if it exists.
func (b *Broker) TopicStats(ctx context.Context, name string) (TopicStats, error) {
	tn, err := parseTopicName(name)
	if err != nil {
		return TopicStats{}, err
	}
	t := b.lookupTopic(tn.String())
	if t == nil {
		t, err = b.getTopic(ctx, tn, false)
		if err != nil {
			return TopicStats{}, err
		}
	}
	return t.stats(), nil
}

func (b *Broker) httpTopicStats(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok {
		return
	}
	st, err := b.TopicStats(r.Context(), tn.String())
	if err != nil {
		if errors.Is(err, ErrTopicNotFound) || errors.Is(err, ErrNamespaceNotFound) {
			writeError(w, http.StatusNotFound, "Topic not found")
			return
		}
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (b *Broker) httpGetPartitions(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	n, err := b.reg.partitions(r.Context(), tn)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if n == 0 && !tn.IsPartition() && r.URL.Query().Get("checkAllowAutoCreation") == "true" {
		n = b.autoCreatePartitioned(r.Context(), tn) // namespace override (policies.go)
	}
	writeJSON(w, http.StatusOK, map[string]int{"partitions": n})
}

// parsePartitionsBody accepts a bare integer or {"partitions":N,...}.
func parsePartitionsBody(r *http.Request) (PartitionedMetadata, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return PartitionedMetadata{}, err
	}
	var m PartitionedMetadata
	s := strings.TrimSpace(string(body))
	if n, err := strconv.Atoi(s); err == nil {
		m.Partitions = n
	} else if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("body must be an integer or {\"partitions\":N}: %w", err)
	}
	if m.Partitions <= 0 {
		return m, errors.New("number of partitions must be more than 0")
	}
	return m, nil
}

func (b *Broker) httpCreatePartitions(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	m, err := parsePartitionsBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := b.CreatePartitionedTopic(r.Context(), tn.String(), m); err != nil {
		if errors.Is(err, ErrAlreadyExists) {
			writeError(w, http.StatusConflict, "This topic already exists")
			return
		}
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// CreatePartitionedTopic registers a partitioned topic; creating an
// existing one with the same count is a no-op, another count fails with
// ErrAlreadyExists.
func (b *Broker) CreatePartitionedTopic(ctx context.Context, name string, m PartitionedMetadata) error {
	tn, err := parseTopicName(name)
	if err != nil {
		return err
	}
	if tn.IsPartition() {
		return fmt.Errorf("%w: %s is a partition", ErrInvalidTopicName, tn)
	}
	err = b.reg.setPartitions(ctx, tn, m, true)
	if errors.Is(err, ErrAlreadyExists) {
		if n, gerr := b.reg.partitions(ctx, tn); gerr == nil && n == m.Partitions {
			return nil
		}
	}
	return err
}

func (b *Broker) httpUpdatePartitions(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	m, err := parsePartitionsBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	cur, err := b.reg.partitions(r.Context(), tn)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if cur == 0 {
		writeError(w, http.StatusNotFound, "Partitioned topic does not exist")
		return
	}
	if m.Partitions < cur {
		writeError(w, http.StatusPreconditionFailed, "The number of partitions can only be increased")
		return
	}
	if err := b.reg.setPartitions(r.Context(), tn, m, false); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (b *Broker) httpDeletePartitions(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	n, err := b.reg.partitions(r.Context(), tn)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if n == 0 {
		writeError(w, http.StatusNotFound, "Partitioned topic does not exist")
		return
	}
	for i := 0; i < n; i++ {
		if err := b.DeleteTopic(r.Context(), tn.Partition(i).String()); err != nil && !errors.Is(err, ErrTopicNotFound) {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	if err := b.reg.deletePartitioned(r.Context(), tn); err != nil && !errors.Is(err, ErrTopicNotFound) {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	_ = b.schemas.delete(r.Context(), tn)
	w.WriteHeader(http.StatusNoContent)
}

// DeleteTopic force-deletes a non-partitioned topic (or one partition):
// producers and consumers are disconnected, then its registration is
// removed. Stored data is left to the managed ledger's retention.
func (b *Broker) DeleteTopic(ctx context.Context, name string) error {
	tn, err := parseTopicName(name)
	if err != nil {
		return err
	}
	b.unloadTopic(tn.String())
	if !tn.IsPersistent() {
		return nil
	}
	err = b.deps.Metadata.Delete(ctx, topicKey(tn), -1)
	if err != nil {
		if ok, _ := b.deps.Metadata.Exists(ctx, topicKey(tn)); !ok {
			return ErrTopicNotFound
		}
	}
	return err
}

func (b *Broker) httpLookup(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	if b.cluster != nil {
		b.httpClusterLookup(w, r, tn)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"brokerUrl":    b.serviceURL(),
		"brokerUrlTls": "",
		"httpUrl":      b.webURL(),
		"httpUrlTls":   "",
		"nativeUrl":    b.serviceURL(),
	})
}

func (b *Broker) httpNamespaceTopics(w http.ResponseWriter, r *http.Request, p Params) {
	ns := p["tenant"] + "/" + p["ns"]
	ok, err := b.reg.namespaceExists(r.Context(), ns)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "Namespace does not exist")
		return
	}
	mode := strings.ToUpper(r.URL.Query().Get("mode"))
	pers := mode == "" || mode == "PERSISTENT" || mode == "ALL"
	nonPers := mode == "NON_PERSISTENT" || mode == "ALL"
	ts, err := b.topicsOfNamespace(r.Context(), ns, pers, nonPers)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if ts == nil {
		ts = []string{}
	}
	writeJSON(w, http.StatusOK, ts)
}

// writeMetrics writes a minimal Prometheus text exposition of topic
// counters; the full metrics endpoint belongs to the admin API.
func (b *Broker) writeMetrics(w io.Writer) {
	b.mu.Lock()
	var ts []*topic
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
	fmt.Fprintf(w, "# TYPE pulsar_topics_count gauge\npulsar_topics_count %d\n", len(ts))
	for _, t := range ts {
		fmt.Fprintf(w, "pulsar_in_messages_total{topic=%q} %d\n", t.full, t.msgIn.Load())
		fmt.Fprintf(w, "pulsar_in_bytes_total{topic=%q} %d\n", t.full, t.bytesIn.Load())
	}
}
