package broker

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// HTTP schema endpoints (used by clients whose service URL is http://):
//
//	GET    /admin/v2/schemas/{tenant}/{ns}/{topic}/schema[/{version}]
//	POST   /admin/v2/schemas/{tenant}/{ns}/{topic}/schema  {"type":..,"schema":..,"properties":{}}
//	DELETE /admin/v2/schemas/{tenant}/{ns}/{topic}/schema
//
// They share the registry of GET_SCHEMA / GET_OR_CREATE_SCHEMA.
func (b *Broker) registerSchemaRoutes(rt *Router) {
	rt.Handle("GET", "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema", b.httpGetSchema)
	rt.Handle("GET", "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema/{version}", b.httpGetSchema)
	rt.Handle("POST", "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema", b.httpPostSchema)
	rt.Handle("DELETE", "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema", b.httpDeleteSchema)
}

// schemaTypeNames are the HTTP type strings by pb.Schema_Type value.
var schemaTypeNames = []string{"BYTES", "STRING", "JSON", "PROTOBUF", "AVRO", "BOOLEAN", "INT8", "INT16",
	"INT32", "INT64", "FLOAT", "DOUBLE", "DATE", "TIME", "TIMESTAMP", "KEYVALUE", "INSTANT",
	"LOCAL_DATE", "LOCAL_TIME", "LOCAL_DATE_TIME", "PROTOBUF_NATIVE"}

func schemaTypeName(t int32) string {
	if t >= 0 && int(t) < len(schemaTypeNames) {
		return schemaTypeNames[t]
	}
	return "BYTES"
}

func schemaTypeValue(s string) (int32, bool) {
	s = strings.ToUpper(s)
	if s == "NONE" {
		return 0, true
	}
	for i, n := range schemaTypeNames {
		if n == s {
			return int32(i), true
		}
	}
	return 0, false
}

func (b *Broker) schemaTopicFromParams(w http.ResponseWriter, p Params) (topicName, bool) {
	p2 := Params{"domain": "persistent", "tenant": p["tenant"], "ns": p["ns"], "topic": p["topic"]}
	return TopicFromParams(w, p2)
}

func (b *Broker) httpGetSchema(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := b.schemaTopicFromParams(w, p)
	if !ok {
		return
	}
	v := int64(-1)
	if s, has := p["version"]; has {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "bad schema version")
			return
		}
		v = n
	}
	e, ver, found, err := b.schemas.get(r.Context(), tn, v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "Schema not found")
		return
	}
	props := e.Properties
	if props == nil {
		props = map[string]string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"version": ver, "type": schemaTypeName(e.Type), "timestamp": e.Timestamp,
		"data": string(e.Data), "properties": props,
	})
}

func (b *Broker) httpPostSchema(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := b.schemaTopicFromParams(w, p)
	if !ok {
		return
	}
	var body struct {
		Type       string            `json:"type"`
		Schema     string            `json:"schema"`
		Properties map[string]string `json:"properties"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "bad schema body: "+err.Error())
		return
	}
	typ, ok := schemaTypeValue(body.Type)
	if !ok {
		writeError(w, http.StatusBadRequest, "unknown schema type "+strconv.Quote(body.Type))
		return
	}
	s := &pb.Schema{Name: ptr(tn.Local), SchemaData: []byte(body.Schema), Type: pb.Schema_Type(typ).Enum()}
	for k, v := range body.Properties {
		s.Properties = append(s.Properties, &pb.KeyValue{Key: ptr(k), Value: ptr(v)})
	}
	vb, err := b.schemas.getOrCreate(r.Context(), tn, s)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"version": int64(beUint64(vb))})
}

func (b *Broker) httpDeleteSchema(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := b.schemaTopicFromParams(w, p)
	if !ok {
		return
	}
	if err := b.schemas.delete(r.Context(), tn); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"version": 0})
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}
