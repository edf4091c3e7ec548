package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

type roleKey struct{}

// RoleFromContext returns the authenticated role of an HTTP request
// ("" when authentication is off).
func RoleFromContext(ctx context.Context) string {
	s, _ := ctx.Value(roleKey{}).(string)
	return s
}

// WithRole attaches role to ctx.
func WithRole(ctx context.Context, role string) context.Context {
	return context.WithValue(ctx, roleKey{}, role)
}

func writeReason(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"reason": reason})
}

// Handler wraps the HTTP API: it authenticates every request (401
// {"reason": ...} when that fails), checks the endpoint's Rules entry
// (403 when the role lacks it), serves the permission endpoints itself,
// and passes the rest to next with the role in the request context.
func (s *Security) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s == nil || s.Authn == nil {
			if s != nil && s.servePermissions(w, r) {
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		path := r.URL.EscapedPath()
		open := !s.Config.AuthenticateMetricsEndpoint && (path == "/metrics" || path == "/metrics/")
		id, err := s.Authn.AuthenticateHTTP(r)
		if err != nil {
			if !open {
				s.Log.Warn("HTTP authentication failed", "remote", r.RemoteAddr, "path", path, "err", err)
				w.Header().Set("WWW-Authenticate", `Bearer realm="magnetar"`)
				writeReason(w, http.StatusUnauthorized, "Authentication required")
				return
			}
		}
		original := r.Header.Get(HeaderOriginalPrincipal)
		if err == nil && !open {
			if perr := s.CheckOriginalPrincipal(id.Role, original, true); perr != nil {
				s.Log.Warn("HTTP original principal refused", "remote", r.RemoteAddr, "role", id.Role, "err", perr)
				msg := "Invalid combination of Original principal cannot be empty if the request is via proxy."
				if original != "" {
					msg = "Original principal is not allowed for role " + id.Role
				}
				writeReason(w, http.StatusUnauthorized, msg)
				return
			}
		}
		effective := id.Role
		if original != "" && s.IsProxyRole(id.Role) {
			effective = original
		}
		r = r.WithContext(WithRole(r.Context(), effective))
		if s.Authz != nil && !open {
			for _, role := range AuthorizedRoles(id.Role, effective) {
				if err := s.authorizeHTTP(r, role); err != nil {
					if errors.Is(err, ErrAuthorization) {
						s.Log.Info("HTTP request denied", "role", role, "via", id.Role, "method", r.Method, "path", path)
						writeReason(w, http.StatusForbidden, strings.TrimPrefix(err.Error(), ErrAuthorization.Error()+": "))
						return
					}
					writeReason(w, http.StatusInternalServerError, "authorization check failed: "+err.Error())
					return
				}
			}
		}
		if s.servePermissions(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorizeHTTP checks r against Rules.
func (s *Security) authorizeHTTP(r *http.Request, role string) error {
	ctx := r.Context()
	m := Classify(Rules, r.Method, r.URL.EscapedPath())
	deny := func(what string) error {
		return fmt.Errorf("%w: Role %q is not authorized to %s (%s)", ErrAuthorization, role, what, m.Access)
	}
	az := s.Authz
	switch m.Access {
	case AccessAny:
		return nil
	case AccessSuperUser:
		if az.IsSuperUser(role) {
			return nil
		}
		return deny("perform this operation; it requires super-user access")
	case AccessTenantAdmin:
		ok, err := az.IsTenantAdmin(ctx, role, m.Params["tenant"])
		if err != nil {
			return err
		}
		if !ok {
			return deny("administrate resources on tenant " + m.Params["tenant"])
		}
		return nil
	case AccessNamespaceConsume:
		ns := m.Params["tenant"] + "/" + m.Params["ns"]
		ok, err := az.NamespaceAction(ctx, role, ns, ActionConsume)
		if err != nil {
			return err
		}
		if !ok {
			return deny("list the topics of namespace " + ns)
		}
		return nil
	}
	domain := m.Params["domain"]
	if domain == "" {
		domain = "persistent"
	}
	t, err := ParseTopic(domain + "://" + m.Params["tenant"] + "/" + m.Params["ns"] + "/" + m.Params["topic"])
	if err != nil {
		return deny("access this topic")
	}
	if m.Access == AccessTopicLookup {
		ok, err := az.CanLookup(ctx, role, t)
		if err != nil {
			return err
		}
		if !ok {
			return deny("look up topic " + t.String())
		}
		return nil
	}
	if err := az.CanConsume(ctx, role, t, m.Params["sub"]); err != nil {
		if errors.Is(err, ErrAuthorization) {
			return deny("consume from topic " + t.String())
		}
		return err
	}
	return nil
}

// permission endpoints, served by servePermissions.
var permRules = []Rule{
	{"GET", "/admin/v2/namespaces/{tenant}/{ns}/permissions", 0},
	{"POST", "/admin/v2/namespaces/{tenant}/{ns}/permissions/{role}", 1},
	{"DELETE", "/admin/v2/namespaces/{tenant}/{ns}/permissions/{role}", 2},
	{"GET", "/admin/v2/namespaces/{tenant}/{ns}/permissions/subscription", 3},
	{"POST", "/admin/v2/namespaces/{tenant}/{ns}/permissions/subscription/{sub}", 4},
	{"DELETE", "/admin/v2/namespaces/{tenant}/{ns}/permissions/{sub}/{role}", 5},
	{"GET", "/admin/v2/namespaces/{tenant}/{ns}/subscriptionAuthMode", 6},
	{"POST", "/admin/v2/namespaces/{tenant}/{ns}/subscriptionAuthMode", 7},
	{"GET", topic + "/permissions", 8},
	{"POST", topic + "/permissions/{role}", 9},
	{"DELETE", topic + "/permissions/{role}", 10},
}

// servePermissions serves the grant/revoke/list endpoints and reports
// whether r was one of them. They need authorization on (Pulsar answers
// 501 "Authorization is not enabled" otherwise).
func (s *Security) servePermissions(w http.ResponseWriter, r *http.Request) bool {
	path, ok := splitPath(r.URL.EscapedPath())
	if !ok || len(path) < 5 || path[0] != "admin" || path[1] != "v2" {
		return false
	}
	op, p := -1, map[string]string(nil)
	bestLit := -1
	for _, rule := range permRules {
		if rule.Method != r.Method {
			continue
		}
		if pp, lit, ok := matchPattern(rule.Pattern, path); ok && lit > bestLit {
			op, p, bestLit = int(rule.Access), pp, lit
		}
	}
	if op < 0 {
		return false
	}
	if s == nil || s.Authz == nil {
		writeReason(w, http.StatusNotImplemented, "Authorization is not enabled")
		return true
	}
	ctx := r.Context()
	az := s.Authz
	ns := p["tenant"] + "/" + p["ns"]
	var t TopicRef
	if op >= 8 {
		var err error
		if t, err = ParseTopic(p["domain"] + "://" + ns + "/" + p["topic"]); err != nil {
			writeReason(w, http.StatusPreconditionFailed, "Topic name is not valid")
			return true
		}
	}
	var body []byte
	if r.Method == "POST" {
		var err error
		if body, err = io.ReadAll(io.LimitReader(r.Body, 1<<20)); err != nil {
			writeReason(w, http.StatusBadRequest, "cannot read body")
			return true
		}
	}
	var err error
	switch op {
	case 0:
		ap, _, e := az.Permissions(ctx, ns)
		if err = e; err == nil {
			writeJSON(w, ap.NamespaceAuth)
		}
	case 1, 9:
		var acts []string
		if e := json.Unmarshal(body, &acts); e != nil {
			writeReason(w, http.StatusBadRequest, "body must be a JSON array of actions, e.g. [\"produce\",\"consume\"]")
			return true
		}
		if op == 1 {
			err = az.GrantNamespace(ctx, ns, p["role"], acts)
		} else {
			err = az.GrantTopic(ctx, t, p["role"], acts)
		}
	case 2:
		err = az.RevokeNamespace(ctx, ns, p["role"])
	case 3:
		ap, _, e := az.Permissions(ctx, ns)
		if err = e; err == nil {
			writeJSON(w, ap.SubscriptionAuthRoles)
		}
	case 4:
		var roles []string
		if e := json.Unmarshal(body, &roles); e != nil {
			writeReason(w, http.StatusBadRequest, "body must be a JSON array of roles")
			return true
		}
		err = az.GrantSubscription(ctx, ns, p["sub"], roles)
	case 5:
		err = az.RevokeSubscription(ctx, ns, p["sub"], p["role"])
	case 6:
		_, mode, e := az.Permissions(ctx, ns)
		if err = e; err == nil {
			writeJSON(w, mode)
		}
	case 7:
		var mode string
		if e := json.Unmarshal(body, &mode); e != nil {
			mode = strings.Trim(strings.TrimSpace(string(body)), `"`)
		}
		err = az.SetSubscriptionAuthMode(ctx, ns, mode)
	case 8:
		m, e := az.TopicPermissions(ctx, t)
		if err = e; err == nil {
			writeJSON(w, m)
		}
	case 10:
		err = az.RevokeTopic(ctx, t, p["role"])
	}
	switch {
	case err == nil:
		if r.Method != "GET" {
			w.WriteHeader(http.StatusNoContent)
		}
	case errors.Is(err, ErrNotFound):
		writeReason(w, http.StatusNotFound, "Namespace does not exist")
	case errors.Is(err, ErrNoGrant):
		writeReason(w, http.StatusPreconditionFailed, strings.TrimPrefix(err.Error(), ErrNoGrant.Error()+": "))
	case strings.HasPrefix(err.Error(), "auth: "):
		writeReason(w, http.StatusPreconditionFailed, strings.TrimPrefix(err.Error(), "auth: "))
	default:
		writeReason(w, http.StatusInternalServerError, err.Error())
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
