package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/policy"
)

// The shapes most handlers share: find the path's topic or namespace,
// call one role method, answer its value (200, JSON), 204, or the error
// with its status (statusOf).

// reply answers v as JSON (200), or err with its status.
func (a *API) reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		a.serviceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// replyDone answers 204, or err with its status.
func (a *API) replyDone(w http.ResponseWriter, err error) {
	if err != nil {
		a.serviceError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// onTopic serves a route of one topic: the path's topic, canonical and
// in an existing namespace (topicFromParams), then f.
func (a *API) onTopic(f func(w http.ResponseWriter, r *http.Request, topic string)) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		if topic, ok := a.topicFromParams(w, r, p); ok {
			f(w, r, topic)
		}
	}
}

// onNamespace serves a route of one namespace ("tenant/ns", existing).
func (a *API) onNamespace(f func(w http.ResponseWriter, r *http.Request, ns string)) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		if ns, ok := a.nsFromParams(w, r, p); ok {
			f(w, r, ns)
		}
	}
}

// topicValue serves a GET of one topic's value.
func topicValue[T any](a *API, get func(ctx context.Context, topic string) (T, error)) handler {
	return a.onTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
		v, err := get(r.Context(), topic)
		a.reply(w, v, err)
	})
}

// topicAction serves a write on one topic answered with 204.
func (a *API) topicAction(do func(ctx context.Context, topic string) error) handler {
	return a.onTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
		a.replyDone(w, do(r.Context(), topic))
	})
}

// messageID is a role method that returns a message id, as JSON.
func messageID(f func(ctx context.Context, topic string) (broker.MessageID, error)) func(context.Context, string) (messageIDJSON, error) {
	return func(ctx context.Context, topic string) (messageIDJSON, error) {
		id, err := f(ctx, topic)
		return toJSONID(id), err
	}
}

// nsValue serves a GET of one namespace's value.
func nsValue[T any](a *API, get func(ctx context.Context, ns string) (T, error)) handler {
	return a.onNamespace(func(w http.ResponseWriter, r *http.Request, ns string) {
		v, err := get(r.Context(), ns)
		a.reply(w, v, err)
	})
}

// value serves a GET of a value read from the path's parameters.
func value[T any](a *API, get func(ctx context.Context, p params) (T, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		v, err := get(r.Context(), p)
		a.reply(w, v, err)
	}
}

// sorted is a list read sorted.
func sorted(list []string, err error) ([]string, error) {
	slices.Sort(list)
	return list, err
}

func writeJSON(w http.ResponseWriter, status int, v any) { httpapi.WriteJSON(w, status, v) }

func writeError(w http.ResponseWriter, status int, msg string) { httpapi.WriteError(w, status, msg) }

// internalError logs err and answers a generic 500: internal error text
// (metadata paths, hosts) never reaches the client.
func (a *API) internalError(w http.ResponseWriter, err error) {
	httpapi.InternalError(w, a.log, "admin", err)
}

// statusOf maps a role's or policy.Store error to its HTTP
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
	case errors.Is(err, broker.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// refusal is a request refused for what it asks (a value, a state):
// the client gets its status and reason. Any error that is not a
// refusal and wraps no known sentinel is internal (statusOf).
type refusal struct {
	status int
	reason string
}

func (e *refusal) Error() string { return e.reason }

// refuse returns a refusal: status and the formatted reason reach the
// client (Pulsar answers 412 for a value it does not accept).
func refuse(status int, format string, args ...any) error {
	return &refusal{status: status, reason: fmt.Sprintf(format, args...)}
}

// serviceError writes err with its status; not-found errors without a
// reason of their own get Pulsar's wording, and an error of no known
// kind is an internal one (logged, a generic 500).
func (a *API) serviceError(w http.ResponseWriter, err error) {
	var ref *refusal
	if errors.As(err, &ref) {
		writeError(w, ref.status, ref.reason)
		return
	}
	code := statusOf(err)
	if code == http.StatusInternalServerError {
		a.internalError(w, err)
		return
	}
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

// superResource declares a superuser-only resource of Pulsar's shape
// (failure domains, isolation policies, the bookies' racks, a
// namespace's bookie affinity group): GET List answers every item; GET,
// POST and DELETE Item act on one. A nil handler or an empty List
// declares no route.
type superResource struct {
	List, Item         string // route patterns
	ListType, ItemType any    // the JSON of GET List's answer; of an item (GET's answer, POST's body)
	GetAll, Get        handler
	Set, Delete        handler
}

func (res superResource) add(rt routeTable) {
	for _, r := range []httpapi.Route{
		{Method: http.MethodGet, Pattern: res.List, Response: res.ListType, Handler: res.GetAll},
		{Method: http.MethodGet, Pattern: res.Item, Response: res.ItemType, Handler: res.Get},
		{Method: http.MethodPost, Pattern: res.Item, Request: res.ItemType, Handler: res.Set},
		{Method: http.MethodDelete, Pattern: res.Item, Handler: res.Delete},
	} {
		if r.Pattern != "" && r.Handler != nil {
			r.Access = auth.AccessSuperUser
			rt.Add(r)
		}
	}
}
