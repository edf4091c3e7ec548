package auth

import (
	"context"
	"errors"
	"fmt"
)

// Access is what an HTTP route requires of the caller's role. Every
// route declares one (package httpapi); the guard in front of the routes
// authorizes the request by the Access of the route that serves it.
type Access int

const (
	// AccessUnset is the zero value: a route must declare its access
	// (httpapi refuses a route without one).
	AccessUnset Access = iota
	// AccessSuperUser: superusers only.
	AccessSuperUser
	// AccessAny: any authenticated (or anonymous, when configured) role.
	AccessAny
	// AccessTenantAdmin: superusers and admins of the {tenant}.
	AccessTenantAdmin
	// AccessNamespaceConsume: tenant admins, or consume on {tenant}/{ns}.
	AccessNamespaceConsume
	// AccessTopicLookup: tenant admins, or produce or consume on the
	// topic ({domain}/{tenant}/{ns}/{topic}).
	AccessTopicLookup
	// AccessTopicConsume: tenant admins, or consume on the topic (and the
	// {sub} subscription's rules when the path names one).
	AccessTopicConsume
	// AccessFunctions, AccessSources and AccessSinks: tenant admins, or
	// the functions, sources or sinks action on {tenant}/{namespace}
	// (Pulsar's function worker authorization).
	AccessFunctions
	AccessSources
	AccessSinks
	// AccessMetrics: no credentials needed unless
	// authenticateMetricsEndpoint is set, then any authenticated role.
	AccessMetrics
	// AccessPublic: no credentials needed (liveness pages that reveal
	// nothing).
	AccessPublic
	// AccessPackages: tenant admins, or the packages action on
	// {tenant}/{namespace} (Pulsar's package management authorization).
	AccessPackages
)

var accessNames = [...]string{"unset", "superuser", "any", "tenant-admin", "namespace-consume", "topic-lookup", "topic-consume",
	"functions", "sources", "sinks", "metrics", "public", "packages"}

// Valid reports whether a is one of the declared rules (not AccessUnset).
func (a Access) Valid() bool { return a > AccessUnset && int(a) < len(accessNames) }

func (a Access) String() string {
	if a < 0 || int(a) >= len(accessNames) {
		return fmt.Sprintf("Access(%d)", int(a))
	}
	return accessNames[a]
}

// Authenticated reports whether a request needs credentials for a route
// of access a (cfg: the security settings).
func (a Access) Authenticated(cfg *Config) bool {
	switch a {
	case AccessPublic:
		return false
	case AccessMetrics:
		return cfg.AuthenticateMetricsEndpoint
	}
	return true
}

// namespaceParam is the namespace a route's parameters name: {ns}, or
// {namespace} (the /admin/v3 function paths).
func namespaceParam(p map[string]string) string {
	if ns, ok := p["ns"]; ok {
		return ns
	}
	return p["namespace"]
}

// AuthorizeRoute checks that role may call a route of access a whose
// path captured p. A denial wraps ErrAuthorization and its text (after
// that prefix) is the reason for the client; other errors mean the
// check itself failed. With authorization off every check passes.
func (s *Security) AuthorizeRoute(ctx context.Context, role string, a Access, p map[string]string) error {
	if s == nil || s.Authz == nil {
		return nil
	}
	deny := func(what string) error {
		return fmt.Errorf("%w: Role %q is not authorized to %s (%s)", ErrAuthorization, role, what, a)
	}
	az := s.Authz
	ns := p["tenant"] + "/" + namespaceParam(p)
	switch a {
	case AccessAny, AccessPublic, AccessMetrics:
		return nil
	case AccessSuperUser:
		if az.IsSuperUser(role) {
			return nil
		}
		return deny("perform this operation; it requires super-user access")
	case AccessTenantAdmin:
		ok, err := az.IsTenantAdmin(ctx, role, p["tenant"])
		if err != nil {
			return err
		}
		if !ok {
			if err := az.tenantMustExist(ctx, p["tenant"]); err != nil {
				return err
			}
			return deny("administrate resources on tenant " + p["tenant"])
		}
		return nil
	case AccessNamespaceConsume, AccessFunctions, AccessSources, AccessSinks, AccessPackages:
		action := map[Access]string{AccessNamespaceConsume: ActionConsume, AccessFunctions: ActionFunctions,
			AccessSources: ActionSources, AccessSinks: ActionSinks, AccessPackages: ActionPackages}[a]
		ok, err := az.NamespaceAction(ctx, role, ns, action)
		if err != nil {
			return err
		}
		if !ok {
			if err := az.tenantMustExist(ctx, p["tenant"]); err != nil {
				return err
			}
			if a == AccessNamespaceConsume {
				return deny("list the topics of namespace " + ns)
			}
			return deny("manage " + action + " of namespace " + ns)
		}
		return nil
	case AccessTopicLookup, AccessTopicConsume:
	default:
		return deny("call a route without a valid access rule")
	}
	domain := p["domain"]
	if domain == "" {
		domain = "persistent"
	}
	t, err := ParseTopic(domain + "://" + ns + "/" + p["topic"])
	if err != nil {
		return deny("access this topic")
	}
	if a == AccessTopicLookup {
		ok, err := az.CanLookup(ctx, role, t)
		if err != nil {
			return err
		}
		if !ok {
			return deny("look up topic " + t.String())
		}
		return nil
	}
	if err := az.CanConsume(ctx, role, t, p["sub"]); err != nil {
		if errors.Is(err, ErrAuthorization) {
			return deny("consume from topic " + t.String())
		}
		return err
	}
	return nil
}
