package admin

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// registerTopicPropertiesRoutes installs Pulsar 2.11's topic properties:
// GET the map, PUT a map merged into it, DELETE ?key=<k> one key
// (creation with properties: httpCreateTopic and .../partitions).
func (a *API) registerTopicPropertiesRoutes(rt routeTable) {
	const tp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/properties"
	rt.Handle("GET", tp, func(w http.ResponseWriter, r *http.Request, p params) {
		topic, ok := a.topicFromParams(w, r, p)
		if !ok {
			return
		}
		props, err := a.svc.TopicProperties(r.Context(), topic)
		if err != nil {
			serviceError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, props)
	})
	rt.Handle("PUT", tp, func(w http.ResponseWriter, r *http.Request, p params) {
		topic, ok := a.topicFromParams(w, r, p)
		if !ok {
			return
		}
		var props map[string]string
		if err := readRequiredJSON(r, &props); err != nil {
			writeError(w, http.StatusPreconditionFailed, "Invalid properties: "+err.Error())
			return
		}
		if err := a.svc.UpdateTopicProperties(r.Context(), topic, props, nil); err != nil {
			serviceError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	rt.Handle("DELETE", tp, func(w http.ResponseWriter, r *http.Request, p params) {
		topic, ok := a.topicFromParams(w, r, p)
		if !ok {
			return
		}
		key := r.URL.Query().Get("key")
		if key == "" {
			writeError(w, http.StatusPreconditionFailed, "The key query parameter names the property to remove")
			return
		}
		if err := a.svc.UpdateTopicProperties(r.Context(), topic, nil, []string{key}); err != nil {
			serviceError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// createTopicProperties reads the optional properties body of a topic
// creation (an empty body: none).
func createTopicProperties(r *http.Request) (map[string]string, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if s := strings.TrimSpace(string(body)); s == "" || s == "null" {
		return nil, nil
	}
	var props map[string]string
	err = json.Unmarshal(body, &props)
	return props, err
}
