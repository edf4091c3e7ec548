package isolation

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// DefaultDomain is the failure domain of a broker no domain lists
// (Pulsar's).
const DefaultDomain = "default"

// MinAvailable is the one auto-failover policy type Pulsar has.
const MinAvailable = "min_available"

// FailureDomain is Pulsar's FailureDomain: the broker ids ("host:port")
// of one domain.
type FailureDomain struct {
	Brokers []string `json:"brokers"`
}

// AutoFailoverPolicy is Pulsar's AutoFailoverPolicyData.
type AutoFailoverPolicy struct {
	PolicyType string            `json:"policy_type"`
	Parameters map[string]string `json:"parameters"`
}

// Policy is Pulsar's NamespaceIsolationData.
type Policy struct {
	Namespaces         []string            `json:"namespaces"`
	Primary            []string            `json:"primary"`
	Secondary          []string            `json:"secondary"`
	AutoFailoverPolicy *AutoFailoverPolicy `json:"auto_failover_policy"`
	// UnloadScope is Pulsar's unload_scope (all_matching, changed,
	// none); stored as given.
	UnloadScope string `json:"unload_scope,omitempty"`
}

// BrokerData is Pulsar's BrokerNamespaceIsolationData: the policy a
// broker serves (the last one by name that names it primary or
// secondary) and the namespace regexes of every such policy.
type BrokerData struct {
	BrokerName     string   `json:"brokerName"`
	PolicyName     string   `json:"policyName,omitempty"`
	IsPrimary      bool     `json:"isPrimary"`
	NamespaceRegex []string `json:"namespaceRegex"`
}

// InvalidError is a policy Pulsar's validation refuses (HTTP 400).
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "invalid namespace isolation policy: " + e.Reason }

// Errors of the store. Callers use errors.Is.
var (
	ErrNotFound = errors.New("isolation: not found")
	ErrConflict = errors.New("isolation: broker already in another failure domain")
	ErrNotEmpty = errors.New("isolation: cluster has namespace isolation policies")
)

// fullMatch compiles re to match whole strings (Java's String.matches).
func fullMatch(re string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + re + `)$`)
}

// matches reports whether any of res matches s as a whole; a regex that
// does not compile matches nothing.
func matches(res []string, s string) bool {
	for _, re := range res {
		if c, err := fullMatch(re); err == nil && c.MatchString(s) {
			return true
		}
	}
	return false
}

// Validate checks p as Pulsar's NamespaceIsolationDataImpl.validate and
// its auto-failover policy factory do (*InvalidError). Namespace regexes
// must compile too (Pulsar would fail on them at placement).
func (p *Policy) Validate() error {
	switch {
	case len(p.Namespaces) == 0:
		return &InvalidError{"namespaces must not be empty"}
	case len(p.Primary) == 0:
		return &InvalidError{"primary must not be empty"}
	case p.Secondary == nil:
		return &InvalidError{"secondary must be given (it may be empty)"}
	case p.AutoFailoverPolicy == nil:
		return &InvalidError{"auto_failover_policy must be given"}
	}
	for _, list := range [][]string{p.Namespaces, p.Primary, p.Secondary} {
		for _, re := range list {
			if strings.TrimSpace(re) == "" {
				continue
			}
			if _, err := fullMatch(re); err != nil {
				return &InvalidError{fmt.Sprintf("invalid policy regex %s", re)}
			}
		}
	}
	afp := p.AutoFailoverPolicy
	if afp.PolicyType != MinAvailable {
		return &InvalidError{fmt.Sprintf("unknown auto_failover_policy type %q", afp.PolicyType)}
	}
	if afp.Parameters == nil {
		return &InvalidError{"auto_failover_policy parameters must be given"}
	}
	for _, k := range []string{"min_limit", "usage_threshold"} {
		if _, err := strconv.Atoi(afp.Parameters[k]); err != nil {
			return &InvalidError{fmt.Sprintf("auto_failover_policy parameter %s must be an integer, not %q", k, afp.Parameters[k])}
		}
	}
	return nil
}

// minLimit is the min_available policy's min_limit (0 if unparsable).
func (p *Policy) minLimit() int {
	if p.AutoFailoverPolicy == nil {
		return 0
	}
	n, _ := strconv.Atoi(p.AutoFailoverPolicy.Parameters["min_limit"])
	return n
}

// AppliesTo reports whether p's namespace regexes match ns ("tenant/ns").
func (p *Policy) AppliesTo(ns string) bool { return matches(p.Namespaces, ns) }

// IsPrimary and IsSecondary match a broker (host or id, see the package
// doc) against p's regexes.
func (p *Policy) IsPrimary(broker string) bool   { return matches(p.Primary, broker) }
func (p *Policy) IsSecondary(broker string) bool { return matches(p.Secondary, broker) }

// PolicyFor returns the name and policy applying to ns: the first by
// name whose namespace regexes match it ("" if none).
func PolicyFor(policies map[string]Policy, ns string) (string, *Policy) {
	for _, name := range sortedNames(policies) {
		if p := policies[name]; p.AppliesTo(ns) {
			return name, &p
		}
	}
	return "", nil
}

func sortedNames(policies map[string]Policy) []string {
	names := make([]string, 0, len(policies))
	for n := range policies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// BrokerHost is a broker id's host: everything before the last ':'
// (Pulsar's parseBrokerHost; an id without a port is its own host).
func BrokerHost(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[:i]
	}
	return id
}

// Candidates returns the brokers (ids, from live) that may own a bundle
// of ns under policies, in live's order: Pulsar's
// applyNamespacePolicies. The result may be empty (no broker allowed).
func Candidates(policies map[string]Policy, ns string, live []string) []string {
	_, p := PolicyFor(policies, ns)
	var primary, secondary []string
	for _, id := range live {
		host := BrokerHost(id)
		if p != nil {
			switch {
			case p.IsPrimary(host):
				primary = append(primary, id)
			case p.IsSecondary(host):
				secondary = append(secondary, id)
			}
			continue
		}
		if isShared(policies, host) {
			secondary = append(secondary, id)
		}
	}
	if p == nil {
		return secondary
	}
	if len(primary) < p.minLimit() {
		return append(primary, secondary...)
	}
	return primary
}

// isShared: host is primary for no policy.
func isShared(policies map[string]Policy, host string) bool {
	for _, p := range policies {
		if p.IsPrimary(host) {
			return false
		}
	}
	return true
}

// Broker answers Pulsar's brokers/{broker} listing for one broker id:
// every policy naming it primary or secondary (matched on the whole
// id) contributes its namespace regexes; the policy name and primary
// flag are the last such policy's by name.
func Broker(policies map[string]Policy, id string) BrokerData {
	d := BrokerData{BrokerName: id, NamespaceRegex: []string{}}
	for _, name := range sortedNames(policies) {
		p := policies[name]
		prim := p.IsPrimary(id)
		if prim || p.IsSecondary(id) {
			d.NamespaceRegex = append(d.NamespaceRegex, p.Namespaces...)
			d.IsPrimary = prim
			d.PolicyName = name
		}
	}
	return d
}

// Domains maps each broker id a domain lists to the domain's name.
func Domains(domains map[string]FailureDomain) map[string]string {
	out := map[string]string{}
	for name, d := range domains {
		for _, b := range d.Brokers {
			out[b] = name
		}
	}
	return out
}
