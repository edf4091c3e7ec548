package admin

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// writeRawMessage answers a peek / get-by-id with the entry's
// (decompressed) payload and X-Pulsar-* headers.
func writeRawMessage(w http.ResponseWriter, id broker.MessageID, data []byte) {
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
