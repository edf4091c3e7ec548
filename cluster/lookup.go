package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/bundle"
)

// LookupResult is the answer to a topic lookup.
type LookupResult struct {
	// Redirect: ask Target again (with Authoritative); otherwise connect
	// to Target, which owns the topic.
	Redirect      bool
	Authoritative bool
	Target        OwnerData
	Bundle        string // bundle key
}

// Lookup finds (or assigns) the broker serving topic, as Pulsar's
// NamespaceService.findBrokerServiceUrl: the owner if the bundle has one;
// else this broker when the request is authoritative; else the leader's
// placement (this broker when it leads or no leader is known), redirecting
// to the chosen broker with authoritative set; else a non-authoritative
// redirect to the leader. When this broker is chosen it takes the bundle
// before answering, so the client's PRODUCER/SUBSCRIBE finds it owned.
func (s *Service) Lookup(ctx context.Context, topic string, authoritative bool) (LookupResult, error) {
	return s.lookup(ctx, topic, authoritative, false)
}

// lookup is Lookup; retried is set on the second pass after the owner
// node changed while the first waited (one wait per lookup).
func (s *Service) lookup(ctx context.Context, topic string, authoritative, retried bool) (LookupResult, error) {
	ns, r, err := s.TopicBundle(ctx, topic)
	if err != nil {
		return LookupResult{}, err
	}
	key := BundleKey(ns, r)
	res := LookupResult{Bundle: key, Authoritative: true}
	s.mu.Lock()
	o := s.mu.owned[key]
	s.mu.Unlock()
	if o != nil {
		if !o.active.Load() || !s.leaseValidFor(o.session) {
			return LookupResult{}, fmt.Errorf("%w: %s", ErrUnloading, key)
		}
		res.Target = s.self()
		return res, nil
	}
	od, raw, ver, ok, err := s.ownerNode(ctx, ns, r)
	if err != nil {
		return LookupResult{}, err
	}
	if ok {
		if od.Disabled {
			return LookupResult{}, fmt.Errorf("%w: %s", ErrUnloading, key)
		}
		// A dead owner (probe.go) loses the bundle now rather than when
		// its session expires (the bundle is unowned below); a silent one
		// keeps it until then, and the lookup waits for that.
		switch s.ownerState(ctx, od) {
		case probeRefused:
			if s.takeOver(ctx, ns, key, ownerPath(ns, r), raw, ver) {
				break
			}
			res.Target = od
			return res, nil
		case probeSilent:
			if !retried && s.waitOwnerChange(ctx, ownerPath(ns, r), raw, od) {
				return s.lookup(ctx, topic, authoritative, true)
			}
			res.Target = od
			return res, nil
		default:
			res.Target = od
			return res, nil
		}
	}
	candidate := s.o.BrokerID
	if !authoritative {
		leader, lerr := s.Leader(ctx)
		live := lerr == nil && s.brokerAlive(ctx, leader.BrokerID)
		if live && leader.BrokerID != s.o.BrokerID {
			rep, err := s.report(ctx, leader.BrokerID)
			if err == nil && !s.refused(ctx, rep.PulsarServiceURL) {
				return LookupResult{Redirect: true, Authoritative: false, Bundle: key, Target: reportTarget(rep)}, nil
			}
		}
		candidate, err = s.place(ctx, key)
		if err != nil {
			return LookupResult{}, err
		}
	}
	if candidate != s.o.BrokerID {
		rep, err := s.report(ctx, candidate)
		if err != nil {
			return LookupResult{}, fmt.Errorf("%w: %s: %v", ErrNoBroker, candidate, err)
		}
		return LookupResult{Redirect: true, Authoritative: true, Bundle: key, Target: reportTarget(rep)}, nil
	}
	od, _, err = s.acquire(ctx, ns, r)
	if err != nil {
		return LookupResult{}, err
	}
	res.Target = od
	return res, nil
}

// TopicOwner returns the current owner of a topic's bundle without
// assigning it; ok is false when nobody owns it.
func (s *Service) TopicOwner(ctx context.Context, topic string) (OwnerData, bool, error) {
	ns, r, err := s.TopicBundle(ctx, topic)
	if err != nil {
		return OwnerData{}, false, err
	}
	if s.Owns(BundleKey(ns, r)) {
		return s.self(), true, nil
	}
	return s.Owner(ctx, ns, r)
}

// IsSelf reports whether od names this broker.
func (s *Service) IsSelf(od OwnerData) bool { return od.NativeURL == s.o.ServiceURL }

func reportTarget(rep LocalBrokerData) OwnerData {
	return OwnerData{NativeURL: rep.PulsarServiceURL, NativeURLTLS: rep.PulsarServiceURLTLS, HTTPURL: rep.WebServiceURL, HTTPURLTLS: rep.WebServiceURLTLS}
}

// UnloadBundle unloads ns/r wherever it is owned: here directly, on
// another broker through its admin API. Unowned is a no-op (Pulsar's
// behaviour).
func (s *Service) UnloadBundle(ctx context.Context, ns string, r bundle.Range) error {
	if s.Owns(BundleKey(ns, r)) {
		return s.Unload(ctx, ns, r)
	}
	od, ok, err := s.Owner(ctx, ns, r)
	if err != nil || !ok {
		return err
	}
	err = httpPut(ctx, od.HTTPURL+"/admin/v2/namespaces/"+ns+"/"+r.String()+"/unload?authoritative=true")
	if errors.Is(err, errHTTPNotFound) {
		return nil
	}
	return err
}
