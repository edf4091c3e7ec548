package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/metadata"
)

// ErrAuthorization is wrapped by every authorization denial.
var ErrAuthorization = errors.New("not authorized")

// ErrTenantNotFound refuses a route of a tenant that does not exist to a
// role that is not a superuser: Pulsar answers it (404 "Tenant does not
// exist") before it looks at the role's rights on the tenant, so a
// tenant's existence is not secret.
var ErrTenantNotFound = errors.New("tenant does not exist")

// Actions a role can be granted on a namespace or topic.
const (
	ActionProduce   = "produce"
	ActionConsume   = "consume"
	ActionFunctions = "functions"
	ActionSources   = "sources"
	ActionSinks     = "sinks"
	ActionPackages  = "packages"
)

// ValidAction reports whether a is one of Pulsar's AuthAction names.
func ValidAction(a string) bool {
	switch a {
	case ActionProduce, ActionConsume, ActionFunctions, ActionSources, ActionSinks, ActionPackages:
		return true
	}
	return false
}

// Subscription auth modes.
const (
	SubAuthNone   = "None"
	SubAuthPrefix = "Prefix"
)

// policiesPath is where the broker keeps tenants (/admin/policies/<t>,
// TenantInfo JSON) and namespaces (/admin/policies/<t>/<ns>, Policies
// JSON). The authorizer reads adminRoles and allowedClusters from the
// first and auth_policies and subscription_auth_mode from the second.
const policiesPath = "/admin/policies"

// AuthPolicies is the auth_policies field of a namespace's Policies.
type AuthPolicies struct {
	NamespaceAuth         map[string][]string            `json:"namespace_auth"`
	DestinationAuth       map[string]map[string][]string `json:"destination_auth"`
	SubscriptionAuthRoles map[string][]string            `json:"subscription_auth_roles"`
}

type tenantInfo struct {
	AdminRoles      []string `json:"adminRoles"`
	AllowedClusters []string `json:"allowedClusters"`
}

// Authorizer answers "may role do X" from the metadata store. Every check
// reads the store, so a grant or revoke takes effect on the next check.
type Authorizer struct {
	store     metadata.Store
	supers    atomic.Pointer[map[string]bool] // superUserRoles in force (SetSuperUsers)
	cluster   string
	wildcards bool
}

// AuthorizerConfig configures an Authorizer.
type AuthorizerConfig struct {
	Store      metadata.Store
	SuperUsers []string
	// Cluster is the local cluster name: a tenant whose allowedClusters
	// is non-empty and lacks it is closed to everyone but superusers.
	Cluster string
	// Wildcards enables authorizationAllowWildcardsMatching: a granted
	// role ending in "*" matches by prefix, one starting with "*" by
	// suffix.
	Wildcards bool
}

// NewAuthorizer returns an authorizer.
func NewAuthorizer(cfg AuthorizerConfig) *Authorizer {
	a := &Authorizer{store: cfg.Store, cluster: cfg.Cluster, wildcards: cfg.Wildcards}
	a.SetSuperUsers(cfg.SuperUsers)
	return a
}

// SetSuperUsers replaces the superuser roles (a dynamic superUserRoles
// update, docs/dynamic-config.md): the next check uses them, as Pulsar's
// authorization provider reads superUserRoles on every check.
func (a *Authorizer) SetSuperUsers(roles []string) {
	m := map[string]bool{}
	for _, r := range roles {
		if r = strings.TrimSpace(r); r != "" {
			m[r] = true
		}
	}
	a.supers.Store(&m)
}

// IsSuperUser reports whether role is a superuser.
func (a *Authorizer) IsSuperUser(role string) bool { return role != "" && (*a.supers.Load())[role] }

// TopicRef is a parsed topic name.
type TopicRef struct {
	Domain, Tenant, Namespace, Local string
}

// NamespaceName is "tenant/namespace".
func (t TopicRef) NamespaceName() string { return t.Tenant + "/" + t.Namespace }

// String is the full name "domain://tenant/ns/local".
func (t TopicRef) String() string {
	return t.Domain + "://" + t.Tenant + "/" + t.Namespace + "/" + t.Local
}

// Parent is the partitioned topic of a "-partition-N" topic, else t.
func (t TopicRef) Parent() TopicRef {
	if i := strings.LastIndex(t.Local, "-partition-"); i > 0 {
		if _, err := strconv.ParseUint(t.Local[i+len("-partition-"):], 10, 31); err == nil {
			t.Local = t.Local[:i]
		}
	}
	return t
}

// ParseTopic reads "domain://tenant/ns/local", "tenant/ns/local" or a
// short name "local" (public/default), with persistent as the default
// domain.
func ParseTopic(s string) (TopicRef, error) {
	t := TopicRef{Domain: "persistent"}
	if d, rest, ok := strings.Cut(s, "://"); ok {
		if d != "persistent" && d != "non-persistent" {
			return TopicRef{}, fmt.Errorf("auth: bad topic domain %q", d)
		}
		t.Domain, s = d, rest
	} else if !strings.Contains(s, "/") {
		s = "public/default/" + s
	}
	parts := strings.SplitN(s, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return TopicRef{}, fmt.Errorf("auth: bad topic name %q", abbreviate(s))
	}
	t.Tenant, t.Namespace, t.Local = parts[0], parts[1], parts[2]
	return t, nil
}

func (a *Authorizer) tenant(ctx context.Context, tenant string) (*tenantInfo, error) {
	b, _, err := a.store.Get(ctx, policiesPath+"/"+tenant)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ti tenantInfo
	if err := json.Unmarshal(b, &ti); err != nil {
		return nil, fmt.Errorf("auth: tenant %s: %w", tenant, err)
	}
	return &ti, nil
}

// nsAuth is the auth part of a namespace's policies.
type nsAuth struct {
	AuthPolicies         AuthPolicies `json:"auth_policies"`
	SubscriptionAuthMode string       `json:"subscription_auth_mode"`
}

func (a *Authorizer) namespace(ctx context.Context, ns string) (*nsAuth, error) {
	b, _, err := a.store.Get(ctx, policiesPath+"/"+ns)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var n nsAuth
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("auth: namespace %s: %w", ns, err)
	}
	return &n, nil
}

// IsTenantAdmin reports whether role administers tenant (superusers do
// every tenant).
func (a *Authorizer) IsTenantAdmin(ctx context.Context, role, tenant string) (bool, error) {
	if a.IsSuperUser(role) {
		return true, nil
	}
	if role == "" {
		return false, nil
	}
	ti, err := a.tenant(ctx, tenant)
	if err != nil || ti == nil {
		return false, err
	}
	if !a.clusterAllowed(ti) {
		return false, nil
	}
	return a.matches(ti.AdminRoles, role), nil
}

// tenantMustExist returns ErrTenantNotFound when tenant does not exist.
func (a *Authorizer) tenantMustExist(ctx context.Context, tenant string) error {
	ti, err := a.tenant(ctx, tenant)
	if err != nil {
		return err
	}
	if ti == nil {
		return ErrTenantNotFound
	}
	return nil
}

func (a *Authorizer) clusterAllowed(ti *tenantInfo) bool {
	return a.cluster == "" || len(ti.AllowedClusters) == 0 || slices.Contains(ti.AllowedClusters, a.cluster)
}

// matches reports whether role is in granted (with wildcards if enabled).
func (a *Authorizer) matches(granted []string, role string) bool {
	for _, g := range granted {
		if g == role {
			return true
		}
		if a.wildcards && len(g) > 1 {
			if strings.HasSuffix(g, "*") && strings.HasPrefix(role, g[:len(g)-1]) {
				return true
			}
			if strings.HasPrefix(g, "*") && strings.HasSuffix(role, g[1:]) {
				return true
			}
		}
	}
	return false
}

// actionsOf returns the actions role holds in m (wildcard keys included).
func (a *Authorizer) actionsOf(m map[string][]string, role string) []string {
	var out []string
	for g, acts := range m {
		if a.matches([]string{g}, role) {
			out = append(out, acts...)
		}
	}
	return out
}

// hasAction reports whether role holds action on topic t by a namespace
// grant, a topic grant or a grant on the partitioned parent.
func (a *Authorizer) hasAction(ctx context.Context, role string, t TopicRef, action string) (bool, error) {
	n, err := a.namespace(ctx, t.NamespaceName())
	if err != nil || n == nil {
		return false, err
	}
	ap := n.AuthPolicies
	if slices.Contains(a.actionsOf(ap.NamespaceAuth, role), action) {
		return true, nil
	}
	for _, name := range []string{t.String(), t.Parent().String()} {
		if slices.Contains(a.actionsOf(ap.DestinationAuth[name], role), action) {
			return true, nil
		}
	}
	return false, nil
}

// adminOr passes superusers and tenant admins of t's tenant, else asks
// check.
func (a *Authorizer) adminOr(ctx context.Context, role string, t TopicRef, check func() (bool, error)) (bool, error) {
	if ok, err := a.IsTenantAdmin(ctx, role, t.Tenant); ok || err != nil {
		return ok, err
	}
	if role == "" {
		return false, nil
	}
	if ti, err := a.tenant(ctx, t.Tenant); err != nil || ti == nil || !a.clusterAllowed(ti) {
		return false, err
	}
	return check()
}

// CanProduce reports whether role may publish to topic.
func (a *Authorizer) CanProduce(ctx context.Context, role string, t TopicRef) (bool, error) {
	return a.adminOr(ctx, role, t, func() (bool, error) { return a.hasAction(ctx, role, t, ActionProduce) })
}

// CanLookup reports whether role may look topic up (produce or consume).
func (a *Authorizer) CanLookup(ctx context.Context, role string, t TopicRef) (bool, error) {
	return a.adminOr(ctx, role, t, func() (bool, error) {
		if ok, err := a.hasAction(ctx, role, t, ActionProduce); ok || err != nil {
			return ok, err
		}
		return a.hasAction(ctx, role, t, ActionConsume)
	})
}

// CanConsume checks that role may consume topic through subscription sub
// ("" for operations without one). A denial is an error wrapping
// ErrAuthorization whose text is the client-facing message.
func (a *Authorizer) CanConsume(ctx context.Context, role string, t TopicRef, sub string) error {
	if ok, err := a.IsTenantAdmin(ctx, role, t.Tenant); err != nil || ok {
		return err
	}
	deny := fmt.Errorf("%w: Client is not authorized to subscribe", ErrAuthorization)
	if role == "" {
		return deny
	}
	ti, err := a.tenant(ctx, t.Tenant)
	if err != nil {
		return err
	}
	if ti == nil || !a.clusterAllowed(ti) {
		return deny
	}
	n, err := a.namespace(ctx, t.NamespaceName())
	if err != nil {
		return err
	}
	if n == nil {
		return deny
	}
	if sub != "" {
		if roles := n.AuthPolicies.SubscriptionAuthRoles[sub]; len(roles) > 0 && !a.matches(roles, role) {
			return deny
		}
		if n.SubscriptionAuthMode == SubAuthPrefix && !strings.HasPrefix(sub, role) {
			return fmt.Errorf("%w: Failed to create consumer - The subscription name needs to be prefixed by the authentication role, like %s-xxxx for topic: %s", ErrAuthorization, role, t)
		}
	}
	ok, err := a.hasAction(ctx, role, t, ActionConsume)
	if err != nil {
		return err
	}
	if !ok {
		return deny
	}
	return nil
}

// NamespaceAction reports whether role holds action on namespace ns
// through a namespace grant (tenant admins and superusers always do).
func (a *Authorizer) NamespaceAction(ctx context.Context, role, ns, action string) (bool, error) {
	tenant, _, _ := strings.Cut(ns, "/")
	if ok, err := a.IsTenantAdmin(ctx, role, tenant); ok || err != nil {
		return ok, err
	}
	if role == "" {
		return false, nil
	}
	n, err := a.namespace(ctx, ns)
	if err != nil || n == nil {
		return false, err
	}
	return slices.Contains(a.actionsOf(n.AuthPolicies.NamespaceAuth, role), action), nil
}
