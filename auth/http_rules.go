package auth

import (
	"net/url"
	"strings"
)

// Access is what an HTTP endpoint requires of the caller's role.
type Access int

const (
	// AccessSuperUser: superusers only. The default for every path the
	// table does not name (deny by default).
	AccessSuperUser Access = iota
	// AccessAny: any authenticated (or anonymous, when configured) role.
	AccessAny
	// AccessTenantAdmin: superusers and admins of the {tenant}.
	AccessTenantAdmin
	// AccessNamespaceConsume: tenant admins, or consume on {tenant}/{ns}.
	AccessNamespaceConsume
	// AccessTopicLookup: tenant admins, or produce or consume on the topic.
	AccessTopicLookup
	// AccessTopicConsume: tenant admins, or consume on the topic (and the
	// {sub} subscription's rules when the path names one).
	AccessTopicConsume
)

func (a Access) String() string {
	return [...]string{"superuser", "any", "tenant-admin", "namespace-consume", "topic-lookup", "topic-consume"}[a]
}

// Rule maps a method and path pattern to the access it requires.
// Patterns are slash-separated; "{name}" matches one segment and a final
// "{name...}" the rest. The most literal segments win, then the earliest
// rule. Method "*" matches any method.
type Rule struct {
	Method  string
	Pattern string
	Access  Access
}

// topic is the path of a topic under /admin/v2.
const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"

// Rules is the authorization table of the HTTP API (admin and lookup).
// Every /admin and /lookup endpoint is covered: a path that no rule
// names needs a superuser. Lessons of Pulsar's advisories: topic
// policies, unload, compaction, termination and subscription creation
// are tenant-admin operations, never merely produce/consume ones.
var Rules = []Rule{
	{"GET", "/admin/v2/clusters", AccessAny},
	{"GET", "/admin/v2/clusters/{cluster}", AccessAny},
	{"*", "/admin/v2/clusters/{cluster...}", AccessSuperUser},
	{"*", "/admin/v2/brokers/{rest...}", AccessSuperUser},
	{"*", "/admin/v2/bookies/{rest...}", AccessSuperUser},
	{"GET", "/admin/v2/tenants", AccessSuperUser},
	{"GET", "/admin/v2/tenants/{tenant}", AccessTenantAdmin},
	{"*", "/admin/v2/tenants/{tenant}", AccessSuperUser},
	{"GET", "/admin/v2/namespaces/{tenant}", AccessTenantAdmin},
	{"*", "/admin/v2/namespaces/{tenant}/{ns}", AccessTenantAdmin},
	{"GET", "/admin/v2/namespaces/{tenant}/{ns}/topics", AccessNamespaceConsume},
	{"*", "/admin/v2/namespaces/{tenant}/{ns}/{rest...}", AccessTenantAdmin},
	// The namespaces of an anti-affinity group, across tenants: the
	// path's second segment is a cluster, not a tenant.
	{"GET", "/admin/v2/namespaces/{cluster}/antiAffinity/{group}", AccessSuperUser},
	{"GET", "/admin/v2/{domain}/{tenant}/{ns}", AccessNamespaceConsume},
	{"GET", "/admin/v2/{domain}/{tenant}/{ns}/partitioned", AccessNamespaceConsume},
	{"*", topic, AccessTenantAdmin},
	{"*", topic + "/{rest...}", AccessTenantAdmin},
	{"GET", topic + "/partitions", AccessTopicLookup},
	{"GET", topic + "/stats", AccessTopicLookup},
	{"GET", topic + "/partitioned-stats", AccessTopicLookup},
	{"GET", topic + "/internalStats", AccessTopicLookup},
	{"GET", topic + "/lastMessageId", AccessTopicLookup},
	{"GET", topic + "/subscriptions", AccessTopicConsume},
	{"GET", topic + "/ledger/{ledger}/entry/{entry}", AccessTopicConsume},
	{"DELETE", topic + "/subscription/{sub}", AccessTopicConsume},
	{"PUT", topic + "/subscription/{sub}", AccessTenantAdmin},
	{"POST", topic + "/subscription/{sub}/skip/{n}", AccessTopicConsume},
	{"POST", topic + "/subscription/{sub}/skip_all", AccessTopicConsume},
	{"POST", topic + "/subscription/{sub}/expireMessages/{sec}", AccessTopicConsume},
	{"POST", topic + "/subscription/{sub}/resetcursor/{ts}", AccessTopicConsume},
	{"POST", topic + "/subscription/{sub}/resetcursor", AccessTopicConsume},
	{"GET", topic + "/subscription/{sub}/position/{n}", AccessTopicConsume},
	{"POST", topic + "/all_subscription/expireMessages/{sec}", AccessTopicConsume},
	{"GET", "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema", AccessTopicLookup},
	{"GET", "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema/{version}", AccessTopicLookup},
	{"*", "/admin/v2/schemas/{tenant}/{ns}/{topic}/{rest...}", AccessTenantAdmin},
	{"GET", "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}", AccessTopicLookup},
	// Transactions (coordinators, transaction metadata, buffer and
	// pending-ack stats): superusers, as Pulsar.
	{"*", "/admin/v3/transactions/{rest...}", AccessSuperUser},
	// The web console (package console): each page needs what the admin
	// calls behind it need; its actions are admin API calls made by the
	// page's script. The overview, bookies and brokers pages, and any
	// other console path, are superuser pages (deny by default).
	{"GET", "/console/static/{file}", AccessAny},
	{"GET", "/console/tenants/{tenant}", AccessTenantAdmin},
	{"GET", "/console/namespaces/{tenant}/{ns}", AccessNamespaceConsume},
	{"GET", "/console/topics/{domain}/{tenant}/{ns}/{topic}", AccessTopicLookup},
	{"GET", "/console/topics/{domain}/{tenant}/{ns}/{topic}/history", AccessTopicLookup},
	{"GET", "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}/{rest...}", AccessTopicLookup},
}

// Match is the rule matched for a request and the captured segments.
type Match struct {
	Access Access
	Params map[string]string
	Rule   string
}

// splitPath splits and unescapes a URL path; ok is false on a bad escape.
func splitPath(escaped string) ([]string, bool) {
	raw := strings.Split(strings.Trim(escaped, "/"), "/")
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, false
		}
		raw[i] = u
	}
	return raw, true
}

// Classify returns the access rule for method and (escaped) path.
func Classify(rules []Rule, method, escapedPath string) Match {
	path, ok := splitPath(escapedPath)
	if !ok {
		return Match{Access: AccessSuperUser}
	}
	if method == "HEAD" {
		method = "GET"
	}
	best, bestLit := -1, -1
	var bestP map[string]string
	for i, r := range rules {
		if r.Method != "*" && r.Method != method {
			continue
		}
		p, lit, ok := matchPattern(r.Pattern, path)
		if !ok {
			continue
		}
		// More literal segments win; at equal count a method-specific
		// rule beats "*"; then the earlier rule.
		score := lit * 2
		if r.Method != "*" {
			score++
		}
		if score > bestLit {
			best, bestLit, bestP = i, score, p
		}
	}
	if best < 0 {
		return Match{Access: AccessSuperUser}
	}
	return Match{Access: rules[best].Access, Params: bestP, Rule: rules[best].Method + " " + rules[best].Pattern}
}

func matchPattern(pattern string, path []string) (map[string]string, int, bool) {
	segs := strings.Split(strings.Trim(pattern, "/"), "/")
	p := map[string]string{}
	lit := 0
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "...}") {
			if i >= len(path) {
				return nil, 0, false
			}
			p[s[1:len(s)-4]] = strings.Join(path[i:], "/")
			return p, lit, true
		}
		if i >= len(path) {
			return nil, 0, false
		}
		if strings.HasPrefix(s, "{") {
			p[s[1:len(s)-1]] = path[i]
			continue
		}
		if s != path[i] {
			return nil, 0, false
		}
		lit++
	}
	return p, lit, len(path) == len(segs)
}
