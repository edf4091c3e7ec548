package admin

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
)

// HTTP schema endpoints (used by clients whose service URL is http://):
//
//	GET    /admin/v2/schemas/{tenant}/{ns}/{topic}/schema[/{version}]
//	POST   /admin/v2/schemas/{tenant}/{ns}/{topic}/schema  {"type":..,"schema":..,"properties":{}}
//	DELETE /admin/v2/schemas/{tenant}/{ns}/{topic}/schema
//
// They share the broker's registry of GET_SCHEMA / GET_OR_CREATE_SCHEMA.
func (a *API) registerSchemaRoutes(rt routeTable) {
	rt.Handle("GET", "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema", a.httpGetSchema)
	rt.Handle("GET", "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema/{version}", a.httpGetSchema)
	rt.Handle("POST", "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema", a.httpPostSchema)
	rt.Handle("DELETE", "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema", a.httpDeleteSchema)
}

// schemaTypeNames are the HTTP type strings by Pulsar schema type value.
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

// schemaTopic canonicalises the path's topic (schemas are addressed
// without a domain: persistent).
func schemaTopic(w http.ResponseWriter, p params) (string, bool) {
	tn, ok := broker.TopicFromParams(w, params{"domain": "persistent", "tenant": p["tenant"], "ns": p["ns"], "topic": p["topic"]})
	return tn.String(), ok
}

func (a *API) httpGetSchema(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := schemaTopic(w, p)
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
	si, found, err := a.svc.Schema(r.Context(), topic, v)
	if err != nil {
		internalError(w, err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "Schema not found")
		return
	}
	props := si.Properties
	if props == nil {
		props = map[string]string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"version": si.Version, "type": schemaTypeName(si.Type), "timestamp": si.Timestamp,
		"data": string(si.Data), "properties": props,
	})
}

func (a *API) httpPostSchema(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := schemaTopic(w, p)
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
	v, err := a.svc.CreateSchema(r.Context(), topic, broker.SchemaInfo{Type: typ, Data: []byte(body.Schema), Properties: body.Properties})
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"version": v})
}

func (a *API) httpDeleteSchema(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := schemaTopic(w, p)
	if !ok {
		return
	}
	if err := a.svc.DeleteSchema(r.Context(), topic); err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"version": 0})
}
