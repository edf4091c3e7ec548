package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// Permission endpoints: grants on namespaces, topics and subscriptions
// and the subscription auth mode, stored by an authorizer (package auth)
// in the namespace's policies (auth_policies, subscription_auth_mode).
// Every one is a tenant-admin operation. As in Pulsar they work whether
// or not authorization is on: with it off the grants are stored and
// answered but not enforced, and turning authorization on enforces them
// (the authorizer reads the same fields).

// permissionOp is one permission endpoint's work: it returns the value
// to answer a GET with (nil for a write).
type permissionOp func(ctx context.Context, az *auth.Authorizer, p params, body []byte) (any, error)

func (a *API) registerPermissionRoutes(rt routeTable) {
	const ns = "/admin/v2/namespaces/{tenant}/{ns}"
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	roles := map[string][]string{}
	for _, r := range []httpapi.Route{
		{Name: "namespaces.permissions.get", Method: "GET", Pattern: ns + "/permissions", Response: roles,
			Handler: a.permission(nsPermissions(func(ap auth.AuthPolicies, _ string) any { return ap.NamespaceAuth }))},
		{Name: "namespaces.permissions.grant", Method: "POST", Pattern: ns + "/permissions/{role}", Request: []string{},
			Handler: a.permission(func(ctx context.Context, az *auth.Authorizer, p params, body []byte) (any, error) {
				return grantList(body, listOfActions, func(acts []string) error { return az.GrantNamespace(ctx, nsOf(p), p["role"], acts) })
			})},
		{Name: "namespaces.permissions.revoke", Method: "DELETE", Pattern: ns + "/permissions/{role}",
			Handler: a.permission(func(ctx context.Context, az *auth.Authorizer, p params, _ []byte) (any, error) {
				return nil, az.RevokeNamespace(ctx, nsOf(p), p["role"])
			})},
		{Name: "namespaces.permissions.subscription.get", Method: "GET", Pattern: ns + "/permissions/subscription", Response: roles,
			Handler: a.permission(nsPermissions(func(ap auth.AuthPolicies, _ string) any { return ap.SubscriptionAuthRoles }))},
		{Name: "namespaces.permissions.subscription.grant", Method: "POST", Pattern: ns + "/permissions/subscription/{sub}", Request: []string{},
			Handler: a.permission(func(ctx context.Context, az *auth.Authorizer, p params, body []byte) (any, error) {
				return grantList(body, "roles", func(rs []string) error { return az.GrantSubscription(ctx, nsOf(p), p["sub"], rs) })
			})},
		{Name: "namespaces.permissions.subscription.revoke", Method: "DELETE", Pattern: ns + "/permissions/{sub}/{role}",
			Handler: a.permission(func(ctx context.Context, az *auth.Authorizer, p params, _ []byte) (any, error) {
				return nil, az.RevokeSubscription(ctx, nsOf(p), p["sub"], p["role"])
			})},
		{Name: "namespaces.subscriptionAuthMode.get", Method: "GET", Pattern: ns + "/subscriptionAuthMode", Response: "",
			Handler: a.permission(nsPermissions(func(_ auth.AuthPolicies, mode string) any { return mode }))},
		{Name: "namespaces.subscriptionAuthMode.set", Method: "POST", Pattern: ns + "/subscriptionAuthMode", Request: "",
			Handler: a.permission(func(ctx context.Context, az *auth.Authorizer, p params, body []byte) (any, error) {
				var mode string
				if err := json.Unmarshal(body, &mode); err != nil {
					mode = strings.Trim(strings.TrimSpace(string(body)), `"`)
				}
				return nil, az.SetSubscriptionAuthMode(ctx, nsOf(p), mode)
			})},
		{Name: "topics.permissions.get", Method: "GET", Pattern: topic + "/permissions", Response: roles,
			Handler: a.topicPermission(func(ctx context.Context, az *auth.Authorizer, t auth.TopicRef, _ params, _ []byte) (any, error) {
				return az.TopicPermissions(ctx, t)
			})},
		{Name: "topics.permissions.grant", Method: "POST", Pattern: topic + "/permissions/{role}", Request: []string{},
			Handler: a.topicPermission(func(ctx context.Context, az *auth.Authorizer, t auth.TopicRef, p params, body []byte) (any, error) {
				return grantList(body, listOfActions, func(acts []string) error { return az.GrantTopic(ctx, t, p["role"], acts) })
			})},
		{Name: "topics.permissions.revoke", Method: "DELETE", Pattern: topic + "/permissions/{role}",
			Handler: a.topicPermission(func(ctx context.Context, az *auth.Authorizer, t auth.TopicRef, p params, _ []byte) (any, error) {
				return nil, az.RevokeTopic(ctx, t, p["role"])
			})},
	} {
		r.Access = auth.AccessTenantAdmin
		rt.Add(r)
	}
}

func nsOf(p params) string { return p["tenant"] + "/" + p["ns"] }

// errBadBody marks a body that does not decode (400).
var errBadBody = errors.New("bad request body")

// nsPermissions is the op of a GET answering part of the namespace's
// permissions (its grants and its subscription auth mode).
func nsPermissions(part func(ap auth.AuthPolicies, mode string) any) permissionOp {
	return func(ctx context.Context, az *auth.Authorizer, p params, _ []byte) (any, error) {
		ap, mode, err := az.Permissions(ctx, nsOf(p))
		return part(ap, mode), err
	}
}

// listOfActions names what a grant of actions takes, in errBadBody's
// reason.
const listOfActions = "actions, e.g. [\"produce\",\"consume\"]"

// grantList decodes body as a JSON array of what (actions, roles) and
// hands it to grant: the op of every grant endpoint.
func grantList(body []byte, what string, grant func([]string) error) (any, error) {
	var v []string
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, errors.Join(errBadBody, errors.New("body must be a JSON array of "+what))
	}
	return nil, grant(v)
}

// topicPermission is permission for the topic endpoints: the path's
// topic is parsed first (412 when it is not a valid name).
func (a *API) topicPermission(op func(context.Context, *auth.Authorizer, auth.TopicRef, params, []byte) (any, error)) httpapi.HandlerFunc {
	return a.permission(func(ctx context.Context, az *auth.Authorizer, p params, body []byte) (any, error) {
		t, err := auth.ParseTopic(p["domain"] + "://" + nsOf(p) + "/" + p["topic"])
		if err != nil {
			return nil, errInvalidPermissionTopic
		}
		return op(ctx, az, t, p, body)
	})
}

var errInvalidPermissionTopic = errors.New("admin: invalid topic name")

// permission serves one permission endpoint: the op's value (GET) or
// 204, and Pulsar's statuses for its errors (501 only when the API has
// nowhere to store grants). A write drops the policy store's cached
// copy of the namespace, which the authorizer wrote around.
func (a *API) permission(op permissionOp) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		if a.grants == nil {
			writeError(w, http.StatusNotImplemented, "Authorization is not enabled")
			return
		}
		var body []byte
		if r.Method == http.MethodPost {
			var err error
			if body, err = io.ReadAll(r.Body); err != nil {
				writeError(w, http.StatusBadRequest, "cannot read body")
				return
			}
		}
		v, err := op(r.Context(), a.grants, p, body)
		if r.Method != http.MethodGet && a.pol != nil {
			a.pol.Reload(nsOf(p))
		}
		switch {
		case err == nil && r.Method == http.MethodGet:
			writeJSON(w, http.StatusOK, v)
		case err == nil:
			w.WriteHeader(http.StatusNoContent)
		case errors.Is(err, errBadBody):
			writeError(w, http.StatusBadRequest, strings.TrimPrefix(err.Error(), errBadBody.Error()+"\n"))
		case errors.Is(err, errInvalidPermissionTopic):
			writeError(w, http.StatusPreconditionFailed, "Topic name is not valid")
		case errors.Is(err, auth.ErrNotFound):
			writeError(w, http.StatusNotFound, "Namespace does not exist")
		case errors.Is(err, auth.ErrNoGrant):
			writeError(w, http.StatusPreconditionFailed, strings.TrimPrefix(err.Error(), auth.ErrNoGrant.Error()+": "))
		case strings.HasPrefix(err.Error(), "auth: "):
			// The authorizer's refusals of a value (an unknown action or
			// mode): the reason names the value, never a path.
			writeError(w, http.StatusPreconditionFailed, strings.TrimPrefix(err.Error(), "auth: "))
		default:
			a.internalError(w, err)
		}
	}
}
