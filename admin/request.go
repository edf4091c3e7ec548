package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Reading a request: its path's namespace or topic, and its body.

// readJSONBody decodes an optional JSON body into v; an empty body or
// "null" leaves v unchanged.
func readJSONBody(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body) // bounded by the broker's body limit
	if err != nil {
		return err
	}
	s := strings.TrimSpace(string(body))
	if s == "" || s == "null" {
		return nil
	}
	return json.Unmarshal(body, v)
}

// decodeRequired decodes a JSON body that must hold a value: an empty
// body or "null" is refused (a lenient decode would store the zero
// value), as is anything that is not JSON of v's shape.
func decodeRequired(body []byte, v any) error {
	s := strings.TrimSpace(string(body))
	if s == "" || s == "null" {
		return errors.New("the request body must hold a value (use DELETE to remove a policy)")
	}
	return json.Unmarshal(body, v)
}

// readRequiredJSON reads and decodes a body that must hold a value (see
// decodeRequired).
func readRequiredJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	return decodeRequired(body, v)
}

// decodeBody decodes the JSON body into v, answering 400 with reason
// when it cannot be read or is not JSON of v's shape.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, reason string) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil || json.Unmarshal(body, v) != nil {
		writeError(w, http.StatusBadRequest, reason)
		return false
	}
	return true
}

// nsFromParams returns "tenant/ns", writing 404 when it is not registered.
func (a *API) nsFromParams(w http.ResponseWriter, r *http.Request, p params) (string, bool) {
	ns := nsOf(p)
	return ns, a.namespaceExists(w, r, ns)
}

// namespaceExists reports whether ns is registered, writing the 404 (or
// the 500) when it is not.
func (a *API) namespaceExists(w http.ResponseWriter, r *http.Request, ns string) bool {
	ok, err := a.pol.NamespaceExists(r.Context(), ns)
	if err != nil {
		a.internalError(w, err)
		return false
	}
	if !ok {
		writeError(w, http.StatusNotFound, "Namespace does not exist")
	}
	return ok
}

// topicFromParams canonicalises the path's topic and checks that its
// namespace exists, writing the 4xx otherwise.
func (a *API) topicFromParams(w http.ResponseWriter, r *http.Request, p params) (string, bool) {
	tn, ok := a.topicNameFromParams(w, r, p)
	return tn.String(), ok
}

// topicNameFromParams is topicFromParams's parsed name.
func (a *API) topicNameFromParams(w http.ResponseWriter, r *http.Request, p params) (pulsarproto.TopicName, bool) {
	tn, ok := topicParams(w, p)
	return tn, ok && a.namespaceExists(w, r, tn.NamespaceName())
}

// topicParams canonicalises the {domain}/{tenant}/{ns}/{topic} path
// parameters, writing a 4xx and returning ok=false on bad input.
func topicParams(w http.ResponseWriter, p params) (pulsarproto.TopicName, bool) {
	d := p["domain"]
	if d != "persistent" && d != "non-persistent" {
		writeError(w, http.StatusNotFound, "unknown topic domain "+strconv.Quote(d))
		return pulsarproto.TopicName{}, false
	}
	tn, err := broker.ParseTopicName(d + "://" + p["tenant"] + "/" + p["ns"] + "/" + p["topic"])
	if err != nil {
		writeError(w, http.StatusPreconditionFailed, err.Error())
		return pulsarproto.TopicName{}, false
	}
	return tn, true
}

// topicExists reports whether topic is created, writing the 404 (or the
// 500) when it is not.
func (a *API) topicExists(w http.ResponseWriter, r *http.Request, topic string) bool {
	ok, err := a.topics.TopicExists(r.Context(), topic)
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s", broker.ErrTopicNotFound, topic)
	}
	if err != nil {
		a.serviceError(w, err)
	}
	return err == nil
}
