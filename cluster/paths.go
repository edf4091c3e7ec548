package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Metadata paths, as Pulsar's (docs/cluster.md).
const (
	brokersPath       = "/loadbalance/brokers"
	leaderPath        = "/loadbalance/leader"
	ownerPrefix       = "/namespace"
	policiesPrefix    = "/admin/policies"
	localPolicyPrefix = "/admin/local-policies"
)

// ownerPath is the ephemeral owner node of a bundle.
func ownerPath(ns string, r bundle.Range) string { return ownerPrefix + "/" + ns + "/" + r.String() }

// BundleKey is "{tenant}/{ns}/{range}".
func BundleKey(ns string, r bundle.Range) string { return ns + "/" + r.String() }

// localPolicies is the part of Pulsar's LocalPolicies we keep: the bundle
// boundaries in force (rewritten by splits).
type localPolicies struct {
	Bundles json.RawMessage `json:"bundles"`
}

// namespaceBundles reads a namespace's boundaries: the local policies if
// present, else the namespace policies' "bundles" (copied into new local
// policies so that every broker agrees from then on), else
// bundle.DefaultCount bundles. The version is the local policies' (for a
// split's compare-and-set).
func namespaceBundles(ctx context.Context, st metadata.Store, ns string) (bundle.Bundles, metadata.Version, error) {
	lp := localPolicyPrefix + "/" + ns
	for range 3 {
		data, v, err := st.Get(ctx, lp)
		if err == nil {
			var l localPolicies
			if err := json.Unmarshal(data, &l); err != nil {
				return bundle.Bundles{}, 0, fmt.Errorf("cluster: %s: %w", lp, err)
			}
			b, err := bundle.Parse(l.Bundles)
			return b, v, err
		}
		if !errors.Is(err, metadata.ErrNotFound) {
			return bundle.Bundles{}, 0, err
		}
		pol, _, err := st.Get(ctx, policiesPrefix+"/"+ns)
		if err != nil {
			return bundle.Bundles{}, 0, err // ErrNotFound: no such namespace
		}
		var p struct {
			Bundles *struct {
				Boundaries []string `json:"boundaries"`
				NumBundles int      `json:"numBundles"`
			} `json:"bundles"`
		}
		_ = json.Unmarshal(pol, &p)
		var b bundle.Bundles
		if p.Bundles != nil {
			b, err = bundle.FromData(p.Bundles.Boundaries, p.Bundles.NumBundles)
		} else {
			b, err = bundle.Even(bundle.DefaultCount)
		}
		if err != nil {
			return bundle.Bundles{}, 0, err
		}
		js, _ := json.Marshal(b)
		val, _ := json.Marshal(localPolicies{Bundles: js})
		if _, err := st.Put(ctx, lp, val, metadata.NotExists); err != nil && !errors.Is(err, metadata.ErrExists) {
			return bundle.Bundles{}, 0, err
		}
	}
	return bundle.Bundles{}, 0, fmt.Errorf("cluster: %s keeps changing", lp)
}

// writeBundles replaces the boundaries with a compare-and-set on v.
func writeBundles(ctx context.Context, st metadata.Store, ns string, b bundle.Bundles, v metadata.Version) error {
	js, _ := json.Marshal(b)
	val, _ := json.Marshal(localPolicies{Bundles: js})
	_, err := st.Put(ctx, localPolicyPrefix+"/"+ns, val, v)
	return err
}

// NamespaceOf returns "tenant/ns" of a canonical topic name
// ("persistent://tenant/ns/local").
func NamespaceOf(topic string) (string, error) {
	_, rest, ok := cutScheme(topic)
	if !ok {
		return "", fmt.Errorf("cluster: topic %q is not a canonical name", topic)
	}
	n := 0
	for i := range len(rest) {
		if rest[i] == '/' {
			n++
			if n == 2 {
				return rest[:i], nil
			}
		}
	}
	return "", fmt.Errorf("cluster: topic %q is not a canonical name", topic)
}

func cutScheme(s string) (scheme, rest string, ok bool) {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == ':' && s[i+1] == '/' && s[i+2] == '/' {
			return s[:i], s[i+3:], true
		}
	}
	return "", "", false
}
