package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/magnetar-mq/magnetar/metadata"
)

// ErrNotFound is returned by grant operations on a namespace that does
// not exist.
var ErrNotFound = errors.New("namespace does not exist")

// updateNamespace applies mutate to the auth part of namespace ns with a
// compare-and-set read-modify-write of its Policies node; the other
// fields of the node are kept byte for byte.
func (a *Authorizer) updateNamespace(ctx context.Context, ns string, mutate func(*nsAuth) error) error {
	for {
		raw, v, err := a.store.Get(ctx, policiesPath+"/"+ns)
		if errors.Is(err, metadata.ErrNotFound) {
			return fmt.Errorf("%w: %s", ErrNotFound, ns)
		}
		if err != nil {
			return err
		}
		doc := map[string]json.RawMessage{}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("auth: namespace %s: %w", ns, err)
		}
		var n nsAuth
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("auth: namespace %s: %w", ns, err)
		}
		if err := mutate(&n); err != nil {
			return err
		}
		ap := n.AuthPolicies
		if ap.NamespaceAuth == nil {
			ap.NamespaceAuth = map[string][]string{}
		}
		if ap.DestinationAuth == nil {
			ap.DestinationAuth = map[string]map[string][]string{}
		}
		if ap.SubscriptionAuthRoles == nil {
			ap.SubscriptionAuthRoles = map[string][]string{}
		}
		if doc["auth_policies"], err = json.Marshal(ap); err != nil {
			return err
		}
		if n.SubscriptionAuthMode != "" {
			doc["subscription_auth_mode"], _ = json.Marshal(n.SubscriptionAuthMode)
		}
		out, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		_, err = a.store.Put(ctx, policiesPath+"/"+ns, out, v)
		if errors.Is(err, metadata.ErrBadVersion) {
			continue
		}
		return err
	}
}

func checkActions(actions []string) ([]string, error) {
	out := []string{}
	for _, act := range actions {
		if !ValidAction(act) {
			return nil, fmt.Errorf("auth: unknown action %q (produce, consume, functions, sources, sinks, packages)", act)
		}
		if !slices.Contains(out, act) {
			out = append(out, act)
		}
	}
	slices.Sort(out)
	return out, nil
}

// GrantNamespace sets role's actions on namespace ns (replacing earlier
// ones, as Pulsar does).
func (a *Authorizer) GrantNamespace(ctx context.Context, ns, role string, actions []string) error {
	acts, err := checkActions(actions)
	if err != nil {
		return err
	}
	if role == "" {
		return errors.New("auth: empty role")
	}
	return a.updateNamespace(ctx, ns, func(n *nsAuth) error {
		if n.AuthPolicies.NamespaceAuth == nil {
			n.AuthPolicies.NamespaceAuth = map[string][]string{}
		}
		n.AuthPolicies.NamespaceAuth[role] = acts
		return nil
	})
}

// RevokeNamespace removes role's namespace grant.
func (a *Authorizer) RevokeNamespace(ctx context.Context, ns, role string) error {
	return a.updateNamespace(ctx, ns, func(n *nsAuth) error {
		delete(n.AuthPolicies.NamespaceAuth, role)
		return nil
	})
}

// Permissions returns namespace ns's auth policies and subscription auth
// mode.
func (a *Authorizer) Permissions(ctx context.Context, ns string) (AuthPolicies, string, error) {
	n, err := a.namespace(ctx, ns)
	if err != nil {
		return AuthPolicies{}, "", err
	}
	if n == nil {
		return AuthPolicies{}, "", fmt.Errorf("%w: %s", ErrNotFound, ns)
	}
	ap := n.AuthPolicies
	if ap.NamespaceAuth == nil {
		ap.NamespaceAuth = map[string][]string{}
	}
	if ap.DestinationAuth == nil {
		ap.DestinationAuth = map[string]map[string][]string{}
	}
	if ap.SubscriptionAuthRoles == nil {
		ap.SubscriptionAuthRoles = map[string][]string{}
	}
	mode := n.SubscriptionAuthMode
	if mode == "" {
		mode = SubAuthNone
	}
	return ap, mode, nil
}

// GrantTopic sets role's actions on topic t.
func (a *Authorizer) GrantTopic(ctx context.Context, t TopicRef, role string, actions []string) error {
	acts, err := checkActions(actions)
	if err != nil {
		return err
	}
	if role == "" {
		return errors.New("auth: empty role")
	}
	return a.updateNamespace(ctx, t.NamespaceName(), func(n *nsAuth) error {
		if n.AuthPolicies.DestinationAuth == nil {
			n.AuthPolicies.DestinationAuth = map[string]map[string][]string{}
		}
		m := n.AuthPolicies.DestinationAuth[t.String()]
		if m == nil {
			m = map[string][]string{}
			n.AuthPolicies.DestinationAuth[t.String()] = m
		}
		m[role] = acts
		return nil
	})
}

// RevokeTopic removes role's grant on topic t. A role with no topic-level
// grant is an error (its namespace grant, if any, is not touched).
func (a *Authorizer) RevokeTopic(ctx context.Context, t TopicRef, role string) error {
	return a.updateNamespace(ctx, t.NamespaceName(), func(n *nsAuth) error {
		m := n.AuthPolicies.DestinationAuth[t.String()]
		if _, ok := m[role]; !ok {
			return fmt.Errorf("%w: role %s has no permission on topic %s", ErrNoGrant, role, t)
		}
		delete(m, role)
		if len(m) == 0 {
			delete(n.AuthPolicies.DestinationAuth, t.String())
		}
		return nil
	})
}

// ErrNoGrant: revoking a grant that does not exist.
var ErrNoGrant = errors.New("no such permission")

// TopicPermissions returns the effective grants on topic t: namespace
// grants merged with the topic's (and its partitioned parent's).
func (a *Authorizer) TopicPermissions(ctx context.Context, t TopicRef) (map[string][]string, error) {
	ap, _, err := a.Permissions(ctx, t.NamespaceName())
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	add := func(m map[string][]string) {
		for r, acts := range m {
			for _, act := range acts {
				if !slices.Contains(out[r], act) {
					out[r] = append(out[r], act)
				}
			}
			slices.Sort(out[r])
		}
	}
	add(ap.NamespaceAuth)
	add(ap.DestinationAuth[t.Parent().String()])
	add(ap.DestinationAuth[t.String()])
	return out, nil
}

// GrantSubscription lets roles (and only them, besides admins) consume
// through subscription sub of namespace ns.
func (a *Authorizer) GrantSubscription(ctx context.Context, ns, sub string, roles []string) error {
	if sub == "" || len(roles) == 0 {
		return errors.New("auth: subscription and roles are required")
	}
	return a.updateNamespace(ctx, ns, func(n *nsAuth) error {
		if n.AuthPolicies.SubscriptionAuthRoles == nil {
			n.AuthPolicies.SubscriptionAuthRoles = map[string][]string{}
		}
		cur := n.AuthPolicies.SubscriptionAuthRoles[sub]
		for _, r := range roles {
			if r != "" && !slices.Contains(cur, r) {
				cur = append(cur, r)
			}
		}
		slices.Sort(cur)
		n.AuthPolicies.SubscriptionAuthRoles[sub] = cur
		return nil
	})
}

// RevokeSubscription removes role from subscription sub's roles.
func (a *Authorizer) RevokeSubscription(ctx context.Context, ns, sub, role string) error {
	return a.updateNamespace(ctx, ns, func(n *nsAuth) error {
		cur := n.AuthPolicies.SubscriptionAuthRoles[sub]
		i := slices.Index(cur, role)
		if i < 0 {
			return fmt.Errorf("%w: role %s has no permission on subscription %s", ErrNoGrant, role, sub)
		}
		cur = slices.Delete(cur, i, i+1)
		if len(cur) == 0 {
			delete(n.AuthPolicies.SubscriptionAuthRoles, sub)
		} else {
			n.AuthPolicies.SubscriptionAuthRoles[sub] = cur
		}
		return nil
	})
}

// SetSubscriptionAuthMode sets namespace ns's mode (None or Prefix).
func (a *Authorizer) SetSubscriptionAuthMode(ctx context.Context, ns, mode string) error {
	if mode != SubAuthNone && mode != SubAuthPrefix {
		return fmt.Errorf("auth: subscription auth mode %q (want None or Prefix)", mode)
	}
	return a.updateNamespace(ctx, ns, func(n *nsAuth) error {
		n.SubscriptionAuthMode = mode
		return nil
	})
}
