package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/schema"
)

// HTTP schema endpoints (Pulsar's /admin/v2/schemas API; also used by
// clients whose service URL is http://):
//
//	GET    /admin/v2/schemas/{tenant}/{ns}/{topic}/schema[/{version}]
//	GET    /admin/v2/schemas/{tenant}/{ns}/{topic}/schemas           all live versions
//	POST   /admin/v2/schemas/{tenant}/{ns}/{topic}/schema            upload {"type","schema","properties"}
//	POST   /admin/v2/schemas/{tenant}/{ns}/{topic}/compatibility     test an upload
//	POST   /admin/v2/schemas/{tenant}/{ns}/{topic}/version           version of the same definition (-1: none)
//	DELETE /admin/v2/schemas/{tenant}/{ns}/{topic}/schema
//
// An upload refused by the compatibility strategy answers 409, a
// malformed schema 422. The per-topic strategy override is
// {GET,PUT,DELETE} /admin/v2/{domain}/{tenant}/{ns}/{topic}/schemaCompatibilityStrategy.
// Without a registry (Deps.Schemas nil) every one answers 503.
func (a *API) registerSchemaRoutes(rt routeTable) {
	const base = "/admin/v2/schemas/{tenant}/{ns}/{topic}/"
	rt.Handle("GET", base+"schema", auth.AccessTopicLookup, a.registry(a.httpGetSchema))
	rt.Handle("GET", base+"schema/{version}", auth.AccessTopicLookup, a.registry(a.httpGetSchema))
	rt.Handle("GET", base+"schemas", auth.AccessTenantAdmin, a.onSchemaTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
		all, err := a.schemas.Schemas(r.Context(), topic)
		out := make([]map[string]any, 0, len(all))
		for _, si := range all {
			out = append(out, schemaJSON(si))
		}
		a.reply(w, map[string]any{"getSchemaResponses": out}, err)
	}))
	rt.Add(httpapi.Route{Method: "POST", Pattern: base + "schema", Access: auth.AccessTenantAdmin, MaxBody: httpapi.MaxSchemaBody,
		Request: schemaPayload{}, Response: map[string]int64{}, Handler: a.withSchema(a.postSchema)})
	rt.Add(httpapi.Route{Method: "POST", Pattern: base + "compatibility", Access: auth.AccessTenantAdmin, MaxBody: httpapi.MaxSchemaBody,
		Request: schemaPayload{}, Handler: a.withSchema(a.testSchema)})
	rt.Add(httpapi.Route{Method: "POST", Pattern: base + "version", Access: auth.AccessTenantAdmin, MaxBody: httpapi.MaxSchemaBody,
		Request: schemaPayload{}, Response: map[string]int64{}, Handler: a.withSchema(a.schemaVersion)})
	rt.Handle("DELETE", base+"schema", auth.AccessTenantAdmin, a.onSchemaTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
		v, err := a.schemas.DeleteSchema(r.Context(), topic)
		a.reply(w, map[string]int64{"version": v}, err)
	}))
	const tp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/schemaCompatibilityStrategy"
	rt.Handle("GET", tp, auth.AccessTenantAdmin, a.registry(a.httpGetTopicStrategy))
	rt.Handle("PUT", tp, auth.AccessTenantAdmin, a.registry(a.httpSetTopicStrategy))
	rt.Handle("POST", tp, auth.AccessTenantAdmin, a.registry(a.httpSetTopicStrategy))
	rt.Handle("DELETE", tp, auth.AccessTenantAdmin, a.registry(a.httpSetTopicStrategy))
}

// registry serves a schema route, or 503 on a broker without a schema
// registry.
func (a *API) registry(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		if a.schemas == nil {
			writeError(w, http.StatusServiceUnavailable, "This broker runs without a schema registry")
			return
		}
		h(w, r, p)
	}
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
	tn, ok := topicParams(w, params{"domain": "persistent", "tenant": p["tenant"], "ns": p["ns"], "topic": p["topic"]})
	return tn.String(), ok
}

func schemaJSON(si schema.Version) map[string]any {
	props := si.Properties
	if props == nil {
		props = map[string]string{}
	}
	return map[string]any{
		"version": si.Number, "type": schemaTypeName(si.Type), "timestamp": si.Timestamp,
		"data": string(si.Data), "properties": props,
	}
}

// schemaError answers a registry error: 409 incompatible, 422 invalid.
func (a *API) schemaError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, schema.ErrIncompatible):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, schema.ErrInvalid):
		writeError(w, http.StatusUnprocessableEntity, err.Error())
	default:
		a.serviceError(w, err)
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
	si, found, err := a.schemas.Schema(r.Context(), topic, v)
	if err != nil {
		a.internalError(w, err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "Schema not found")
		return
	}
	writeJSON(w, http.StatusOK, schemaJSON(si))
}

// schemaPayload is Pulsar's PostSchemaPayload.
type schemaPayload struct {
	Type       string            `json:"type"`
	Schema     string            `json:"schema"`
	Properties map[string]string `json:"properties"`
}

// onSchemaTopic serves a route of one topic's schemas.
func (a *API) onSchemaTopic(f func(w http.ResponseWriter, r *http.Request, topic string)) handler {
	return a.registry(func(w http.ResponseWriter, r *http.Request, p params) {
		if topic, ok := schemaTopic(w, p); ok {
			f(w, r, topic)
		}
	})
}

// withSchema serves a route that takes a schema upload on one topic.
func (a *API) withSchema(f func(w http.ResponseWriter, r *http.Request, topic string, si schema.Info)) handler {
	return a.onSchemaTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
		if si, ok := readSchemaBody(w, r); ok {
			f(w, r, topic, si)
		}
	})
}

func (a *API) postSchema(w http.ResponseWriter, r *http.Request, topic string, si schema.Info) {
	v, err := a.schemas.CreateSchema(r.Context(), topic, si)
	if err != nil {
		a.schemaError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"version": v})
}

// testSchema answers whether the upload would be accepted, and why not.
func (a *API) testSchema(w http.ResponseWriter, r *http.Request, topic string, si schema.Info) {
	st, err := a.schemas.TestSchema(r.Context(), topic, si)
	resp := map[string]any{"compatibility": err == nil, "schemaCompatibilityStrategy": st}
	if err != nil {
		if !errors.Is(err, schema.ErrIncompatible) && !errors.Is(err, schema.ErrInvalid) {
			a.serviceError(w, err)
			return
		}
		resp["reason"] = err.Error()
	}
	writeJSON(w, http.StatusOK, resp)
}

// schemaVersion answers the version of the live schema with the upload's
// type and definition; Pulsar answers version -1 when there is none.
func (a *API) schemaVersion(w http.ResponseWriter, r *http.Request, topic string, si schema.Info) {
	v, found, err := a.schemas.SchemaVersion(r.Context(), topic, si)
	switch {
	case err != nil:
		a.serviceError(w, err)
	case !found:
		writeJSON(w, http.StatusOK, map[string]int64{"version": -1})
	default:
		writeJSON(w, http.StatusOK, map[string]int64{"version": v})
	}
}

// readSchemaBody decodes Pulsar's PostSchemaPayload.
func readSchemaBody(w http.ResponseWriter, r *http.Request) (schema.Info, bool) {
	var body schemaPayload
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "bad schema body: "+err.Error())
		return schema.Info{}, false
	}
	typ, ok := schemaTypeValue(body.Type)
	if !ok {
		writeError(w, http.StatusBadRequest, "unknown schema type "+strconv.Quote(body.Type))
		return schema.Info{}, false
	}
	return schema.Info{Type: typ, Data: []byte(body.Schema), Properties: body.Properties}, true
}

// httpGetTopicStrategy answers the topic's override (JSON null when
// none) or, with ?applied=true, the strategy in effect.
func (a *API) httpGetTopicStrategy(w http.ResponseWriter, r *http.Request, p params) {
	tn, ok := topicParams(w, p)
	if !ok {
		return
	}
	over, eff, err := a.schemas.TopicSchemaStrategy(r.Context(), tn.String())
	if err != nil {
		a.serviceError(w, err)
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
	tn, ok := topicParams(w, p)
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
	if err := a.schemas.SetTopicSchemaStrategy(r.Context(), tn.String(), st); err != nil {
		if errors.Is(err, schema.ErrInvalid) {
			writeError(w, http.StatusPreconditionFailed, err.Error())
			return
		}
		a.serviceError(w, err)
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
