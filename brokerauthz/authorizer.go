package brokerauthz

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Authorizer is the broker's broker.CommandAuthorizer over its security
// layer's authorizer (auth.Security.Authz).
type Authorizer struct {
	sec *auth.Security
}

var _ broker.CommandAuthorizer = (*Authorizer)(nil)

// Enable registers the command authorizer on b (before Start). With
// authorization off (no Config.Security, or authorizationEnabled false)
// it allows everything, and the core does not ask it.
func Enable(b *broker.Broker) (*Authorizer, error) {
	a := &Authorizer{sec: b.Security()}
	if err := b.Use(a); err != nil {
		return nil, err
	}
	return a, nil
}

// Name names the feature.
func (*Authorizer) Name() string { return "authz" }

// AuthorizeCommand authorizes f by its commandAccess row (the core's
// commands naming a topic or namespace) or, for a feature's command, by
// served's SuperUserOnly and Access. Every role must be allowed; the
// first denied answers the command in Pulsar's shape.
func (a *Authorizer) AuthorizeCommand(ctx context.Context, roles []string, f *pulsarproto.Frame, served *broker.Command) *broker.Denial {
	if a.sec == nil || a.sec.Authz == nil {
		return nil
	}
	if served != nil {
		return a.authorizeFeature(ctx, roles, f, served)
	}
	rule := commandAccess[f.Type]
	if rule.kind != accessChecked {
		return nil
	}
	name, sub := rule.resource(f.Cmd)
	if rule.need != permitListNamespace {
		var ok bool
		if name, ok = canonicalTopic(name); !ok {
			return nil // the handler reports the bad name
		}
	}
	role, err := a.deniedRole(ctx, roles, rule.need, name, sub)
	if err == nil {
		return nil
	}
	return &broker.Denial{Answer: rule.refuse(f.Cmd, failure(err, rule.denial)), Role: role, Op: rule.op, Resource: name}
}

// authorizeFeature authorizes a feature's command (Command.SuperUserOnly,
// Command.Access): when some role is not allowed, the answer is the
// command's own with AuthorizationError (when pulsarproto.Refusal knows
// it).
func (a *Authorizer) authorizeFeature(ctx context.Context, roles []string, f *pulsarproto.Frame, cmd *broker.Command) *broker.Denial {
	if !cmd.SuperUserOnly && cmd.Access == nil {
		return nil
	}
	refuse := func(role, msg, resource string) *broker.Denial {
		return &broker.Denial{Answer: pulsarproto.Refusal(f.Type, f.Cmd, pb.ServerError_AuthorizationError, msg),
			Role: role, Op: strings.ToLower(f.Type.String()), Resource: resource}
	}
	notAuthorized := "Client is not authorized to send " + f.Type.String()
	if cmd.SuperUserOnly {
		for _, r := range roles {
			if !a.sec.Authz.IsSuperUser(r) {
				return refuse(r, notAuthorized, "")
			}
		}
	}
	if cmd.Access == nil {
		return nil
	}
	topic, need := cmd.Access(f.Cmd)
	name, ok := canonicalTopic(topic)
	if !ok {
		return nil // Handle reports the bad name
	}
	p := permission(need)
	if p != permitLookup && p != permitProduce {
		p = 0 // a feature may ask for the TopicPermissions only: deny
	}
	role, err := a.deniedRole(ctx, roles, p, name, "")
	if err == nil {
		return nil
	}
	return refuse(role, failure(err, notAuthorized), name)
}

// deniedRole checks need on name for every role: the first role denied
// and why (nil when all are allowed).
func (a *Authorizer) deniedRole(ctx context.Context, roles []string, need permission, name, sub string) (string, error) {
	for _, r := range roles {
		if err := a.check(ctx, r, need, name, sub); err != nil {
			return r, err
		}
	}
	return "", nil
}

// check asks the security layer whether role has need on name (a
// canonical topic, or a namespace for permitListNamespace).
func (a *Authorizer) check(ctx context.Context, role string, need permission, name, sub string) error {
	switch need {
	case permitLookup:
		return a.sec.CanLookup(ctx, role, name)
	case permitProduce:
		return a.sec.CanProduce(ctx, role, name)
	case permitConsume:
		return a.sec.CanConsume(ctx, role, name, sub)
	case permitListNamespace:
		return a.sec.CanListNamespace(ctx, role, name)
	}
	return fmt.Errorf("%w: unknown permission %d", auth.ErrAuthorization, need) // a feature's bug: deny
}

// canonicalTopic returns the canonical form of a topic name, false when
// it does not parse (the handler reports the bad name).
func canonicalTopic(name string) (string, bool) {
	tn, err := broker.ParseTopicName(name)
	if err != nil {
		return "", false
	}
	return tn.String(), true
}

// failure is the refusal text for err: denied's (or, without one, the
// authorizer's reason), or the failure of the check itself.
func failure(err error, denied string) string {
	if !errors.Is(err, auth.ErrAuthorization) {
		return "Exception occurred while trying to authorize: " + err.Error()
	}
	if denied == "" {
		return strings.TrimPrefix(err.Error(), auth.ErrAuthorization.Error()+": ")
	}
	return denied
}
