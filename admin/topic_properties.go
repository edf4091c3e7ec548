package admin

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// registerTopicPropertiesRoutes installs Pulsar 2.11's topic properties:
// GET the map, PUT a map merged into it, DELETE ?key=<k> one key
// (creation with properties: httpCreateTopic and .../partitions).
func (a *API) registerTopicPropertiesRoutes(rt routeTable) {
	const tp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/properties"
	rt.Add(httpapi.Route{Method: "GET", Pattern: tp, Access: auth.AccessTenantAdmin, Response: map[string]string{},
		Handler: topicValue(a, a.props.TopicProperties)})
	rt.Add(httpapi.Route{Method: "PUT", Pattern: tp, Access: auth.AccessTenantAdmin, Request: map[string]string{},
		Handler: a.onTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
			var props map[string]string
			if err := readRequiredJSON(r, &props); err != nil {
				writeError(w, http.StatusPreconditionFailed, "Invalid properties: "+err.Error())
				return
			}
			a.replyDone(w, a.props.UpdateTopicProperties(r.Context(), topic, props, nil))
		})})
	rt.Handle("DELETE", tp, auth.AccessTenantAdmin, a.onTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
		key := r.URL.Query().Get("key")
		if key == "" {
			writeError(w, http.StatusPreconditionFailed, "The key query parameter names the property to remove")
			return
		}
		a.replyDone(w, a.props.UpdateTopicProperties(r.Context(), topic, nil, []string{key}))
	}))
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
