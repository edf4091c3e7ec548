package broker

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

func (b *Broker) registerTopicRoutes(rt *Router) {
	const tp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	rt.Handle("GET", "/admin/v2/{domain}/{tenant}/{ns}", b.httpListTopics)
	rt.Handle("GET", "/admin/v2/{domain}/{tenant}/{ns}/partitioned", b.httpListPartitioned)
	rt.Handle("PUT", tp, b.httpCreateTopic)
	rt.Handle("DELETE", tp, b.httpDeleteTopic)
	rt.Handle("GET", tp+"/partitioned-stats", b.httpPartitionedStats)
	rt.Handle("GET", tp+"/internalStats", b.httpInternalStats)
	rt.Handle("GET", tp+"/subscriptions", b.httpListSubscriptions)
	rt.Handle("GET", tp+"/lastMessageId", b.httpLastMessageID)
	rt.Handle("POST", tp+"/terminate", b.httpTerminate)
	rt.Handle("PUT", tp+"/unload", b.httpUnload)
	rt.Handle("GET", tp+"/ledger/{ledger}/entry/{entry}", b.httpMessageByID)
	for _, v := range []string{"compaction", "offload", "publishRate", "dispatchRate", "retention", "messageTTL",
		"backlogQuota", "permissions", "properties", "deduplicationEnabled", "maxProducers", "maxConsumers"} {
		for _, m := range []string{"GET", "PUT", "POST", "DELETE"} {
			rt.Handle(m, tp+"/"+v, notImplemented)
		}
	}
}

// loadedOrLoad returns the topic tn, loading it if it exists (never
// creating it).
func (b *Broker) loadedOrLoad(ctx context.Context, tn topicName) (*topic, error) {
	if t := b.lookupTopic(tn.String()); t != nil && !t.isClosed() {
		return t, nil
	}
	return b.getTopic(ctx, tn, false)
}

// topicHTTPError writes the HTTP form of a topic lookup error.
func topicHTTPError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrTopicNotFound):
		writeError(w, http.StatusNotFound, "Topic not found")
	case errors.Is(err, ErrNamespaceNotFound):
		writeError(w, http.StatusNotFound, "Namespace does not exist")
	case errors.Is(err, ErrInvalidTopicName):
		writeError(w, http.StatusPreconditionFailed, err.Error())
	default:
		internalError(w, err)
	}
}

// topicFor resolves the path's topic and loads it.
func (b *Broker) topicFor(w http.ResponseWriter, r *http.Request, p Params) (*topic, bool) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return nil, false
	}
	t, err := b.loadedOrLoad(r.Context(), tn)
	if err != nil {
		topicHTTPError(w, err)
		return nil, false
	}
	return t, true
}

// domainNsFromParams checks the {domain} path parameter and that the
// {tenant}/{ns} namespace exists, writing the 404 otherwise.
func (b *Broker) domainNsFromParams(w http.ResponseWriter, r *http.Request, p Params) (domain, ns string, ok bool) {
	domain = p["domain"]
	if domain != "persistent" && domain != "non-persistent" {
		writeError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return "", "", false
	}
	ns, ok = b.nsFromParams(w, r, p)
	return domain, ns, ok
}

func (b *Broker) httpListTopics(w http.ResponseWriter, r *http.Request, p Params) {
	d, ns, ok := b.domainNsFromParams(w, r, p)
	if !ok {
		return
	}
	ts, err := b.topicsOfNamespace(r.Context(), ns, d == "persistent", d == "non-persistent")
	if err != nil {
		internalError(w, err)
		return
	}
	if ts == nil {
		ts = []string{}
	}
	writeJSON(w, http.StatusOK, ts)
}

func (b *Broker) httpListPartitioned(w http.ResponseWriter, r *http.Request, p Params) {
	d, ns, ok := b.domainNsFromParams(w, r, p)
	if !ok {
		return
	}
	ts, err := b.reg.partitionedTopics(r.Context(), ns, d)
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ts)
}

// topicExists reports whether tn is a created non-partitioned topic (or
// partition), or a loaded non-persistent one.
func (b *Broker) topicExists(ctx context.Context, tn topicName) (bool, error) {
	if !tn.IsPersistent() {
		return b.lookupTopic(tn.String()) != nil, nil
	}
	return b.deps.Metadata.Exists(ctx, topicKey(tn))
}

func (b *Broker) httpCreateTopic(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	ctx := r.Context()
	if n, err := b.reg.partitions(ctx, tn); err != nil {
		internalError(w, err)
		return
	} else if n > 0 {
		writeError(w, http.StatusConflict, "This topic already exists")
		return
	}
	if !tn.IsPersistent() {
		if _, err := b.getTopic(ctx, tn, true); err != nil {
			topicHTTPError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	_, err := b.deps.Metadata.Put(ctx, topicKey(tn), nil, metadata.NotExists)
	if errors.Is(err, metadata.ErrExists) {
		writeError(w, http.StatusConflict, "This topic already exists")
		return
	}
	if err != nil {
		internalError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (b *Broker) httpDeleteTopic(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	ctx := r.Context()
	exists, err := b.topicExists(ctx, tn)
	if err != nil {
		internalError(w, err)
		return
	}
	if !exists {
		writeError(w, http.StatusNotFound, "Topic not found")
		return
	}
	if r.URL.Query().Get("force") != "true" {
		if t := b.lookupTopic(tn.String()); t != nil && topicInUse(t) {
			writeError(w, http.StatusPreconditionFailed, "Topic has active producers/subscriptions")
			return
		}
	}
	if err := b.DeleteTopic(ctx, tn.String()); err != nil && !errors.Is(err, ErrTopicNotFound) {
		internalError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// topicInUse reports whether t has producers or connected consumers.
func topicInUse(t *topic) bool {
	t.mu.Lock()
	n := len(t.mu.producers)
	t.mu.Unlock()
	if n > 0 {
		return true
	}
	for _, s := range *t.subList.Load() {
		s.call(func() { n += len(s.consumers) })
	}
	return n > 0
}

// PartitionedTopicStats is Pulsar's partitioned-stats JSON: the
// aggregate TopicStats plus per-partition stats.
type PartitionedTopicStats struct {
	TopicStats
	Metadata   PartitionedMetadata   `json:"metadata"`
	Partitions map[string]TopicStats `json:"partitions"`
}

func (b *Broker) httpPartitionedStats(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	n, err := b.reg.partitions(r.Context(), tn)
	if err != nil {
		internalError(w, err)
		return
	}
	if n == 0 {
		writeError(w, http.StatusNotFound, "Partitioned Topic not found")
		return
	}
	out := PartitionedTopicStats{Metadata: PartitionedMetadata{Partitions: n}, Partitions: map[string]TopicStats{}}
	agg := &out.TopicStats
	agg.Publishers = []PublisherStats{}
	agg.Subscriptions = map[string]SubscriptionStats{}
	agg.Replication = map[string]any{}
	agg.DeduplicationStatus = "Disabled"
	for i := range n {
		pn := tn.Partition(i).String()
		st, err := b.TopicStats(r.Context(), pn)
		if err != nil {
			if errors.Is(err, ErrTopicNotFound) {
				continue // not created yet
			}
			internalError(w, err)
			return
		}
		agg.DeduplicationStatus = st.DeduplicationStatus
		agg.MsgRateIn += st.MsgRateIn
		agg.MsgRateOut += st.MsgRateOut
		agg.MsgThroughputIn += st.MsgThroughputIn
		agg.MsgThroughputOut += st.MsgThroughputOut
		agg.MsgInCounter += st.MsgInCounter
		agg.MsgOutCounter += st.MsgOutCounter
		agg.BytesInCounter += st.BytesInCounter
		agg.BytesOutCounter += st.BytesOutCounter
		agg.StorageSize += st.StorageSize
		agg.BacklogSize += st.BacklogSize
		agg.MsgBacklog += st.MsgBacklog
		agg.Publishers = append(agg.Publishers, st.Publishers...)
		for name, ss := range st.Subscriptions {
			a, seen := agg.Subscriptions[name]
			if !seen {
				a = ss
				a.Consumers = append([]ConsumerStats{}, ss.Consumers...)
			} else {
				a.MsgRateOut += ss.MsgRateOut
				a.MsgThroughputOut += ss.MsgThroughputOut
				a.MsgBacklog += ss.MsgBacklog
				a.BacklogSize += ss.BacklogSize
				a.UnackedMessages += ss.UnackedMessages
				a.MsgOutCounter += ss.MsgOutCounter
				a.BytesOutCounter += ss.BytesOutCounter
				a.Consumers = append(a.Consumers, ss.Consumers...)
			}
			agg.Subscriptions[name] = a
		}
		if r.URL.Query().Get("perPartition") != "false" {
			out.Partitions[pn] = st
		}
	}
	if agg.MsgInCounter > 0 {
		agg.AverageMsgSize = float64(agg.BytesInCounter) / float64(agg.MsgInCounter)
	}
	writeJSON(w, http.StatusOK, out)
}

// InternalStats is Pulsar's PersistentTopicInternalStats (subset).
type InternalStats struct {
	EntriesAddedCounter  int64                          `json:"entriesAddedCounter"`
	NumberOfEntries      int64                          `json:"numberOfEntries"`
	TotalSize            int64                          `json:"totalSize"`
	CurrentLedgerEntries int64                          `json:"currentLedgerEntries"`
	CurrentLedgerSize    int64                          `json:"currentLedgerSize"`
	LastConfirmedEntry   string                         `json:"lastConfirmedEntry"`
	State                string                         `json:"state"`
	Ledgers              []InternalLedgerInfo           `json:"ledgers"`
	Cursors              map[string]InternalCursorStats `json:"cursors"`
}

// InternalLedgerInfo is one ledger of InternalStats.
type InternalLedgerInfo struct {
	LedgerID  int64 `json:"ledgerId"`
	Entries   int64 `json:"entries"`
	Size      int64 `json:"size"`
	Timestamp int64 `json:"timestamp"`
	Offloaded bool  `json:"offloaded"`
}

// InternalCursorStats is one cursor of InternalStats.
type InternalCursorStats struct {
	MarkDeletePosition                       string `json:"markDeletePosition"`
	ReadPosition                             string `json:"readPosition"`
	CursorLedger                             int64  `json:"cursorLedger"`
	State                                    string `json:"state"`
	NumberOfEntriesSinceFirstNotAckedMessage int64  `json:"numberOfEntriesSinceFirstNotAckedMessage"`
	TotalNonContiguousDeletedMessagesRange   int64  `json:"totalNonContiguousDeletedMessagesRange"`
	MessagesConsumedCounter                  int64  `json:"messagesConsumedCounter"`
	Durable                                  bool   `json:"durable"`
	BacklogMessages                          int64  `json:"backlogMessages"`
}

func posStr(p mledger.Position) string {
	return strconv.FormatInt(p.LedgerID, 10) + ":" + strconv.FormatInt(p.EntryID, 10)
}

// mlOf returns the mledger behind a persistent topic (nil for fakes and
// non-persistent topics).
func mlOf(t *topic) *mledger.ManagedLedger {
	if a, ok := t.ml.(*mlAdapter); ok {
		return a.ml
	}
	return nil
}

func (b *Broker) httpInternalStats(w http.ResponseWriter, r *http.Request, p Params) {
	t, ok := b.topicFor(w, r, p)
	if !ok {
		return
	}
	ml := mlOf(t)
	if ml == nil {
		writeError(w, http.StatusNotImplemented, "internal stats are only available for persistent topics")
		return
	}
	s := ml.Stats()
	out := InternalStats{
		EntriesAddedCounter: s.EntriesAddedCounter,
		NumberOfEntries:     s.NumberOfEntries,
		TotalSize:           s.TotalSize,
		LastConfirmedEntry:  posStr(s.LastConfirmed),
		State:               "LedgerOpened",
		Ledgers:             []InternalLedgerInfo{},
		Cursors:             map[string]InternalCursorStats{},
	}
	if s.Terminated {
		out.State = "Terminated"
	}
	for _, l := range s.Ledgers {
		out.Ledgers = append(out.Ledgers, InternalLedgerInfo{LedgerID: l.LedgerID, Entries: l.Entries, Size: l.Size, Timestamp: l.Timestamp})
	}
	if n := len(s.Ledgers); n > 0 {
		out.CurrentLedgerEntries, out.CurrentLedgerSize = s.Ledgers[n-1].Entries, s.Ledgers[n-1].Size
	}
	for _, c := range s.Cursors {
		out.Cursors[c.Name] = InternalCursorStats{
			MarkDeletePosition:                       posStr(c.MarkDelete),
			ReadPosition:                             posStr(c.ReadPosition),
			CursorLedger:                             c.CursorLedger,
			State:                                    "Open",
			NumberOfEntriesSinceFirstNotAckedMessage: c.BacklogEntries,
			TotalNonContiguousDeletedMessagesRange:   c.IndividuallyDeletedCount,
			Durable:                                  c.Durable,
			BacklogMessages:                          c.BacklogMessages,
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (b *Broker) httpListSubscriptions(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	var names []string
	if n, err := b.reg.partitions(r.Context(), tn); err == nil && n > 0 {
		seen := map[string]bool{}
		for i := range n {
			if t, err := b.loadedOrLoad(r.Context(), tn.Partition(i)); err == nil {
				for _, s := range *t.subList.Load() {
					if !seen[s.name] {
						seen[s.name] = true
						names = append(names, s.name)
					}
				}
			}
		}
	} else {
		t, err := b.loadedOrLoad(r.Context(), tn)
		if err != nil {
			topicHTTPError(w, err)
			return
		}
		for _, s := range *t.subList.Load() {
			names = append(names, s.name)
		}
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

func (b *Broker) httpLastMessageID(w http.ResponseWriter, r *http.Request, p Params) {
	t, ok := b.topicFor(w, r, p)
	if !ok {
		return
	}
	pos, bi, _ := t.lastMessage()
	out := messageIDJSON{LedgerID: pos.LedgerID, EntryID: pos.EntryID, PartitionIndex: t.partition}
	if bi >= 0 {
		v := int(bi)
		out.BatchIndex = &v
	}
	writeJSON(w, http.StatusOK, out)
}

func (b *Broker) httpTerminate(w http.ResponseWriter, r *http.Request, p Params) {
	t, ok := b.topicFor(w, r, p)
	if !ok {
		return
	}
	if !t.persistent() {
		writeError(w, http.StatusMethodNotAllowed, "Termination of a non-persistent topic is not allowed")
		return
	}
	pos, err := t.ml.Terminate()
	if err != nil && !errors.Is(err, ErrTerminated) {
		internalError(w, err)
		return
	}
	// Close the producers: their reconnects are refused with
	// TopicTerminated from now on.
	t.mu.Lock()
	t.mu.terminated = true
	ps := make([]*producer, 0, len(t.mu.producers))
	for _, pr := range t.mu.producers {
		ps = append(ps, pr)
	}
	t.mu.Unlock()
	for _, pr := range ps {
		t.removeProducer(pr)
		pr.sink.closeProducer(pr)
	}
	b.ext.dropHeldOf(t, nil)
	writeJSON(w, http.StatusOK, messageIDJSON{LedgerID: pos.LedgerID, EntryID: pos.EntryID, PartitionIndex: t.partition})
}

func (b *Broker) httpUnload(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	if n, _ := b.reg.partitions(r.Context(), tn); n > 0 {
		for i := range n {
			b.unloadTopic(tn.Partition(i).String())
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if ok, err := b.topicExists(r.Context(), tn); err != nil {
		internalError(w, err)
		return
	} else if !ok {
		writeError(w, http.StatusNotFound, "Topic not found")
		return
	}
	b.unloadTopic(tn.String())
	w.WriteHeader(http.StatusNoContent)
}

func (b *Broker) httpMessageByID(w http.ResponseWriter, r *http.Request, p Params) {
	l, err1 := strconv.ParseInt(p["ledger"], 10, 64)
	e, err2 := strconv.ParseInt(p["entry"], 10, 64)
	if err1 != nil || err2 != nil {
		writeError(w, http.StatusBadRequest, "ledger and entry ids must be integers")
		return
	}
	t, ok := b.topicFor(w, r, p)
	if !ok {
		return
	}
	if !t.persistent() {
		writeError(w, http.StatusMethodNotAllowed, "not supported on non-persistent topics")
		return
	}
	data, err := t.ml.ReadEntry(position{LedgerID: l, EntryID: e})
	if err != nil {
		writeError(w, http.StatusNotFound, "Message not found: "+err.Error())
		return
	}
	writeRawMessage(w, position{LedgerID: l, EntryID: e}, data)
}

// writeRawMessage answers a peek / get-by-id with the entry's
// (decompressed) payload and X-Pulsar-* headers.
func writeRawMessage(w http.ResponseWriter, pos position, data []byte) {
	ent, err := pulsarproto.ParseEntry(data)
	if err != nil {
		internalError(w, err)
		return
	}
	var md pb.MessageMetadata
	if err := proto.Unmarshal(ent.Metadata, &md); err != nil {
		internalError(w, err)
		return
	}
	payload := ent.Payload
	switch md.GetCompression() {
	case pb.CompressionType_NONE:
	case pb.CompressionType_ZLIB:
		zr, err := zlib.NewReader(bytes.NewReader(payload))
		if err == nil {
			payload, err = io.ReadAll(zr)
		}
		if err != nil {
			internalError(w, err)
			return
		}
	default:
		writeError(w, http.StatusNotImplemented, "Magnetar cannot decompress "+md.GetCompression().String()+" payloads")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Pulsar-Message-ID", pos.String())
	h.Set("X-Pulsar-Publish-Time", time.UnixMilli(int64(md.GetPublishTime())).UTC().Format(time.RFC3339Nano))
	h.Set("X-Pulsar-Sequence-Id", strconv.FormatUint(md.GetSequenceId(), 10))
	h.Set("X-Pulsar-Producer-Name", md.GetProducerName())
	if md.NumMessagesInBatch != nil {
		h.Set("X-Pulsar-Num-Batch-Message", strconv.Itoa(int(md.GetNumMessagesInBatch())))
	}
	if md.PartitionKey != nil {
		h.Set("X-Pulsar-Key", md.GetPartitionKey())
	}
	if len(md.Properties) > 0 {
		props := map[string]string{}
		for _, kv := range md.Properties {
			props[kv.GetKey()] = kv.GetValue()
		}
		js, _ := json.Marshal(props)
		h.Set("X-Pulsar-Property", string(js))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(payload)
}
