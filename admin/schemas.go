package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/schema"
)

// HTTP schema endpoints (Pulsar's /admin/v2/schemas API; also used by
// clients whose service URL is http://):
//
//	GET    /admin/v2/schemas/{tenant}/{ns}/{topic}/schema[/{version}]
//	GET    /admin/v2/schemas/{tenant}/{ns}/{topic}/schemas           all live versions
//	POST   /admin/v2/schemas/{tenant}/{ns}/{topic}/schema            upload {"type","schema","properties"}
//	POST   /admin/v2/schemas/{tenant}/{ns}/{topic}/compatibility     test an upload
//	POST   /admin/v2/schemas/{tenant}/{ns}/{topic}/version           version of an equal schema
//	DELETE /admin/v2/schemas/{tenant}/{ns}/{topic}/schema
//
// An upload refused by the compatibility strategy answers 409, a
// malformed schema 422. The per-topic strategy override is
// {GET,PUT,DELETE} /admin/v2/{domain}/{tenant}/{ns}/{topic}/schemaCompatibilityStrategy.
func (a *API) registerSchemaRoutes(rt routeTable) {
	const base = "/admin/v2/schemas/{tenant}/{ns}/{topic}/"
	rt.Handle("GET", base+"schema", a.httpGetSchema)
	rt.Handle("GET", base+"schema/{version}", a.httpGetSchema)
	rt.Handle("GET", base+"schemas", a.httpGetSchemas)
	rt.Handle("POST", base+"schema", a.httpPostSchema)
	rt.Handle("POST", base+"compatibility", a.httpTestSchema)
	rt.Handle("POST", base+"version", a.httpSchemaVersion)
	rt.Handle("DELETE", base+"schema", a.httpDeleteSchema)
	const tp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/schemaCompatibilityStrategy"
	rt.Handle("GET", tp, a.httpGetTopicStrategy)
	rt.Handle("PUT", tp, a.httpSetTopicStrategy)
	rt.Handle("POST", tp, a.httpSetTopicStrategy)
	rt.Handle("DELETE", tp, a.httpSetTopicStrategy)
}

// schemaTypeName is the HTTP type string of a type value (NONE is BYTES
// there, as in Pulsar's REST API).
func schemaTypeName(t int32) string {
	if t == schema.TypeNone {
		return "BYTES"
	}
	return schema.TypeName(t)
}

func schemaTypeValue(s string) (int32, bool) {
	if strings.EqualFold(s, "NONE") {
		return schema.TypeNone, true
	}
	t, err := schema.TypeFromName(s)
	return t, err == nil
}

// schemaTopic canonicalises the path's topic (schemas are addressed
// without a domain: persistent).
func schemaTopic(w http.ResponseWriter, p params) (string, bool) {
	tn, ok := broker.TopicFromParams(w, params{"domain": "persistent", "tenant": p["tenant"], "ns": p["ns"], "topic": p["topic"]})
	return tn.String(), ok
}

func schemaJSON(si broker.SchemaInfo) map[string]any {
	props := si.Properties
	if props == nil {
		props = map[string]string{}
	}
	return map[string]any{
		"version": si.Version, "type": schemaTypeName(si.Type), "timestamp": si.Timestamp,
		"data": string(si.Data), "properties": props,
	}
}

// schemaError answers a registry error: 409 incompatible, 422 invalid.
func schemaError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, schema.ErrIncompatible):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, schema.ErrInvalid):
		writeError(w, http.StatusUnprocessableEntity, err.Error())
	default:
		serviceError(w, err)
	}
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
	writeJSON(w, http.StatusOK, schemaJSON(si))
}

func (a *API) httpGetSchemas(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := schemaTopic(w, p)
	if !ok {
		return
	}
	all, err := a.svc.Schemas(r.Context(), topic)
	if err != nil {
		internalError(w, err)
		return
	}
	out := make([]map[string]any, 0, len(all))
	for _, si := range all {
		out = append(out, schemaJSON(si))
	}
	writeJSON(w, http.StatusOK, map[string]any{"getSchemaResponses": out})
}

// readSchemaBody decodes Pulsar's PostSchemaPayload.
func readSchemaBody(w http.ResponseWriter, r *http.Request) (broker.SchemaInfo, bool) {
	var body struct {
		Type       string            `json:"type"`
		Schema     string            `json:"schema"`
		Properties map[string]string `json:"properties"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "bad schema body: "+err.Error())
		return broker.SchemaInfo{}, false
	}
	typ, ok := schemaTypeValue(body.Type)
	if !ok {
		writeError(w, http.StatusBadRequest, "unknown schema type "+strconv.Quote(body.Type))
		return broker.SchemaInfo{}, false
	}
	return broker.SchemaInfo{Type: typ, Data: []byte(body.Schema), Properties: body.Properties}, true
}

func (a *API) httpPostSchema(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := schemaTopic(w, p)
	if !ok {
		return
	}
	si, ok := readSchemaBody(w, r)
	if !ok {
		return
	}
	v, err := a.svc.CreateSchema(r.Context(), topic, si)
	if err != nil {
		schemaError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"version": v})
}

func (a *API) httpTestSchema(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := schemaTopic(w, p)
	if !ok {
		return
	}
	si, ok := readSchemaBody(w, r)
	if !ok {
		return
	}
	st, err := a.svc.TestSchema(r.Context(), topic, si)
	resp := map[string]any{"compatibility": err == nil, "schemaCompatibilityStrategy": st}
	if err != nil {
		if !errors.Is(err, schema.ErrIncompatible) && !errors.Is(err, schema.ErrInvalid) {
			serviceError(w, err)
			return
		}
		resp["reason"] = err.Error()
	}
	writeJSON(w, http.StatusOK, resp)
}

func (a *API) httpSchemaVersion(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := schemaTopic(w, p)
	if !ok {
		return
	}
	si, ok := readSchemaBody(w, r)
	if !ok {
		return
	}
	v, found, err := a.svc.SchemaVersion(r.Context(), topic, si)
	if err != nil {
		serviceError(w, err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "Not found schema")
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"version": v})
}

func (a *API) httpDeleteSchema(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := schemaTopic(w, p)
	if !ok {
		return
	}
	v, err := a.svc.DeleteSchema(r.Context(), topic)
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"version": v})
}

// httpGetTopicStrategy answers the topic's override (JSON null when
// none) or, with ?applied=true, the strategy in effect.
func (a *API) httpGetTopicStrategy(w http.ResponseWriter, r *http.Request, p params) {
	tn, ok := broker.TopicFromParams(w, p)
	if !ok {
		return
	}
	over, eff, err := a.svc.TopicSchemaStrategy(r.Context(), tn.String())
	if err != nil {
		serviceError(w, err)
		return
	}
	if r.URL.Query().Get("applied") == "true" {
		writeJSON(w, http.StatusOK, eff)
		return
	}
	if over == "" {
		writeJSON(w, http.StatusOK, nil)
		return
	}
	writeJSON(w, http.StatusOK, over)
}

func (a *API) httpSetTopicStrategy(w http.ResponseWriter, r *http.Request, p params) {
	tn, ok := broker.TopicFromParams(w, p)
	if !ok {
		return
	}
	st := ""
	if r.Method != http.MethodDelete {
		var ok bool
		if st, ok = readStrategyBody(w, r); !ok {
			return
		}
	}
	if err := a.svc.SetTopicSchemaStrategy(r.Context(), tn.String(), st); err != nil {
		if errors.Is(err, schema.ErrInvalid) {
			writeError(w, http.StatusPreconditionFailed, err.Error())
			return
		}
		serviceError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// readStrategyBody reads a strategy name, JSON-quoted or bare, and
// checks it.
func readStrategyBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	b := make([]byte, 0, 64)
	buf := make([]byte, 64)
	for len(b) < 1024 {
		n, err := r.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	if _, err := schema.ParseStrategy(s); err != nil {
		writeError(w, http.StatusPreconditionFailed, "Invalid value: "+err.Error())
		return "", false
	}
	return s, true
}
