package admin

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/internal/codec"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// writeRawMessage answers a peek / get-by-id with the entry's
// (decompressed) payload and X-Pulsar-* headers.
func (a *API) writeRawMessage(w http.ResponseWriter, id broker.MessageID, data []byte) {
	ent, err := pulsarproto.ParseEntry(data)
	if err != nil {
		a.internalError(w, err)
		return
	}
	var md pb.MessageMetadata
	if err := proto.Unmarshal(ent.Metadata, &md); err != nil {
		a.internalError(w, err)
		return
	}
	payload := ent.Payload
	// An encrypted payload was compressed before it was encrypted: only
	// the key holder can undo either, so it is returned as stored.
	if len(md.EncryptionKeys) == 0 {
		if payload, err = codec.Decompress(codec.Type(md.GetCompression()), payload, int(md.GetUncompressedSize())); err != nil {
			a.internalError(w, err)
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Pulsar-Message-ID", strconv.FormatInt(id.LedgerID, 10)+":"+strconv.FormatInt(id.EntryID, 10))
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
