package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
)

// API serves Pulsar's admin REST API over a broker.Service.
type API struct {
	svc broker.Service
	pol *policy.Store
}

// routeTable is where the API registers its routes (*broker.Router).
type routeTable interface {
	Handle(method, pattern string, h broker.HandlerFunc)
}

var errTopicNotFound = broker.ErrTopicNotFound

// Register installs the admin REST API on rt (a broker's Router, before
// the broker starts) over svc.
func Register(rt routeTable, svc broker.Service) *API {
	a := &API{svc: svc, pol: svc.Policies()}
	a.registerClusterRoutes(rt)
	a.registerBrokerRoutes(rt)
	a.registerTenantRoutes(rt)
	a.registerPolicyRoutes(rt)
	a.registerOffloadRoutes(rt)
	a.registerTopicRoutes(rt)
	a.registerSubscriptionRoutes(rt)
	a.registerSchemaRoutes(rt)
	a.registerTransactionRoutes(rt)            // transactions.go
	a.registerTransactionParticipantRoutes(rt) // transactions_participants.go
	return a
}

type (
	params  = broker.Params
	handler = broker.HandlerFunc
)

func writeJSON(w http.ResponseWriter, status int, v any) { broker.WriteJSON(w, status, v) }

func writeError(w http.ResponseWriter, status int, msg string) { broker.WriteError(w, status, msg) }

// notImplemented answers a known Pulsar endpoint Magnetar does not serve.
func notImplemented(w http.ResponseWriter, r *http.Request, _ params) {
	writeError(w, http.StatusNotImplemented, "Not implemented in Magnetar: "+r.Method+" "+r.URL.Path)
}

func internalError(w http.ResponseWriter, err error) {
	writeError(w, http.StatusInternalServerError, err.Error())
}

// statusOf maps a broker.Service or policy.Store error to its HTTP
// status.
func statusOf(err error) int {
	var bad *policy.BadValueError
	switch {
	case errors.Is(err, broker.ErrTopicNotFound), errors.Is(err, broker.ErrSubscriptionNotFound),
		errors.Is(err, policy.ErrNamespaceNotFound), errors.Is(err, policy.ErrTenantNotFound):
		return http.StatusNotFound
	case errors.Is(err, broker.ErrAlreadyExists), errors.Is(err, policy.ErrExists):
		return http.StatusConflict
	case errors.Is(err, broker.ErrNotAllowed):
		return http.StatusMethodNotAllowed
	case errors.Is(err, broker.ErrPreconditionFailed), errors.Is(err, broker.ErrInvalidTopicName),
		errors.Is(err, policy.ErrInvalidName), errors.As(err, &bad):
		return http.StatusPreconditionFailed
	}
	return http.StatusInternalServerError
}

// serviceError writes err with its status; not-found errors without a
// reason of their own get Pulsar's wording.
func serviceError(w http.ResponseWriter, err error) {
	code := statusOf(err)
	msg := err.Error()
	switch {
	case errors.Is(err, policy.ErrNamespaceNotFound) && strings.HasPrefix(msg, "policy:"):
		msg = "Namespace does not exist"
	case errors.Is(err, policy.ErrTenantNotFound) && strings.HasPrefix(msg, "policy:"):
		msg = "Tenant does not exist"
	case errors.Is(err, broker.ErrTopicNotFound) && strings.HasPrefix(msg, "broker:"):
		msg = "Topic not found"
	}
	writeError(w, code, msg)
}

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

// nsFromParams returns "tenant/ns", writing 404 when it is not registered.
func (a *API) nsFromParams(w http.ResponseWriter, r *http.Request, p params) (string, bool) {
	ns := p["tenant"] + "/" + p["ns"]
	ok, err := a.pol.NamespaceExists(r.Context(), ns)
	if err != nil {
		internalError(w, err)
		return "", false
	}
	if !ok {
		writeError(w, http.StatusNotFound, "Namespace does not exist")
		return "", false
	}
	return ns, true
}

// topicFromParams canonicalises the path's topic and checks that its
// namespace exists, writing the 4xx otherwise.
func (a *API) topicFromParams(w http.ResponseWriter, r *http.Request, p params) (string, bool) {
	tn, ok := broker.TopicFromParams(w, p)
	if !ok {
		return "", false
	}
	ok, err := a.pol.NamespaceExists(r.Context(), tn.NamespaceName())
	if err != nil {
		internalError(w, err)
		return "", false
	}
	if !ok {
		writeError(w, http.StatusNotFound, "Namespace does not exist")
		return "", false
	}
	return tn.String(), true
}
