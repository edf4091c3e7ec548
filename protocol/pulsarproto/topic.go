package pulsarproto

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Name limits (Magnetar's; Pulsar states none, and names this long or
// with these characters fail in its metadata store instead).
const (
	// MaxNamePartLen bounds a tenant or namespace name, in bytes.
	MaxNamePartLen = 255
	// MaxLocalNameLen bounds a topic's local name (partition suffix
	// included) and a subscription name, in bytes.
	MaxLocalNameLen = 1024
)

// Topic domains.
const (
	DomainPersistent    = "persistent"
	DomainNonPersistent = "non-persistent"
)

// Defaults applied to short topic names.
const (
	DefaultTenant    = "public"
	DefaultNamespace = "default"
)

// PartitionSuffix separates a partitioned topic's name from a partition
// index: partition i of T is the topic "T-partition-i".
const PartitionSuffix = "-partition-"

// TopicName is a canonicalised topic name. The zero value is not a valid
// name. TopicName is comparable; two names are equal iff their String forms
// are.
type TopicName struct {
	// Domain is DomainPersistent or DomainNonPersistent.
	Domain    string
	Tenant    string
	Namespace string
	// Local is the name inside the namespace, including any partition
	// suffix.
	Local string
	// PartitionIndex is i when Local ends in "-partition-i" (i a canonical
	// decimal int32 >= 0), else -1.
	PartitionIndex int
	full           string
}

// ParseTopicName canonicalises a topic name the way Pulsar does:
//
//	my-topic                         -> persistent://public/default/my-topic
//	tenant/ns/my-topic               -> persistent://tenant/ns/my-topic
//	persistent://tenant/ns/my-topic  (unchanged)
//	non-persistent://tenant/ns/t     (unchanged)
//
// and detects a "-partition-N" suffix. Legacy four-part (cluster) names,
// other short forms, unknown domains, empty components and tenant or
// namespace names outside [-=:.A-Za-z0-9_] fail with ErrBadTopicName.
func ParseTopicName(s string) (TopicName, error) {
	domain, rest, ok := strings.Cut(s, "://")
	if !ok {
		rest = s
		switch strings.Count(s, "/") {
		case 0:
			rest = DefaultTenant + "/" + DefaultNamespace + "/" + s
		case 2:
		default:
			return TopicName{}, fmt.Errorf("%w: %q: short names are <topic> or <tenant>/<namespace>/<topic>", ErrBadTopicName, s)
		}
		domain = DomainPersistent
	}
	if domain != DomainPersistent && domain != DomainNonPersistent {
		return TopicName{}, fmt.Errorf("%w: %q: unknown domain %q", ErrBadTopicName, s, domain)
	}
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) != 3 {
		return TopicName{}, fmt.Errorf("%w: %q: want <domain>://<tenant>/<namespace>/<topic>", ErrBadTopicName, s)
	}
	t := TopicName{Domain: domain, Tenant: parts[0], Namespace: parts[1], Local: parts[2]}
	if !validNamePart(t.Tenant) || !validNamePart(t.Namespace) {
		return TopicName{}, fmt.Errorf("%w: %.300q: bad tenant or namespace (1..%d of [-=:.A-Za-z0-9_], not \".\" or \"..\")", ErrBadTopicName, s, MaxNamePartLen)
	}
	if err := checkLocalName(t.Local); err != nil {
		return TopicName{}, fmt.Errorf("%w: %.300q: topic %v", ErrBadTopicName, s, err)
	}
	t.PartitionIndex = partitionIndex(t.Local)
	t.full = domain + "://" + rest
	return t, nil
}

// ParseNamespace splits "tenant/namespace" and validates both parts.
func ParseNamespace(s string) (tenant, namespace string, err error) {
	tenant, namespace, ok := strings.Cut(s, "/")
	if !ok || !validNamePart(tenant) || !validNamePart(namespace) {
		return "", "", fmt.Errorf("%w: namespace %q", ErrBadTopicName, s)
	}
	return tenant, namespace, nil
}

// validNamePart reports whether s is a tenant or namespace name: 1 to
// MaxNamePartLen bytes of [-=:.A-Za-z0-9_], other than "." and "..".
func validNamePart(s string) bool {
	if s == "" || len(s) > MaxNamePartLen || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '=' || c == ':' || c == '.' || c == '_':
		default:
			return false
		}
	}
	return true
}

// checkLocalName validates a topic's local name or a subscription name:
// not blank, at most MaxLocalNameLen bytes of valid UTF-8 without control
// characters, and not "." or ".." (names that become paths in the
// metadata store).
func checkLocalName(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("name is empty")
	case len(s) > MaxLocalNameLen:
		return fmt.Errorf("name is %d bytes long, over the limit of %d", len(s), MaxLocalNameLen)
	case s == "." || s == "..":
		return fmt.Errorf("name %q is not allowed", s)
	case !utf8.ValidString(s):
		return fmt.Errorf("name is not valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("name contains the control character %U", r)
		}
	}
	return nil
}

// CheckSubscriptionName reports why s cannot be a subscription name (the
// rules of a topic's local name), or nil.
func CheckSubscriptionName(s string) error {
	if err := checkLocalName(s); err != nil {
		return fmt.Errorf("invalid subscription name: %w", err)
	}
	return nil
}

// partitionIndex returns N when local ends in "-partition-N" with N a
// canonical decimal int32 (no sign, no leading zeros), else -1.
func partitionIndex(local string) int {
	i := strings.LastIndex(local, PartitionSuffix)
	if i < 0 {
		return -1
	}
	digits := local[i+len(PartitionSuffix):]
	if digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return -1
	}
	for j := 0; j < len(digits); j++ {
		if digits[j] < '0' || digits[j] > '9' {
			return -1
		}
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return -1
	}
	return int(n)
}

// String returns the fully qualified name, domain://tenant/namespace/local.
func (t TopicName) String() string { return t.full }

// IsPersistent reports whether the domain is persistent.
func (t TopicName) IsPersistent() bool { return t.Domain == DomainPersistent }

// IsPartition reports whether the name is a partition of a partitioned
// topic ("...-partition-N").
func (t TopicName) IsPartition() bool { return t.PartitionIndex >= 0 }

// NamespaceName returns "tenant/namespace".
func (t TopicName) NamespaceName() string { return t.Tenant + "/" + t.Namespace }

// Parent returns the partitioned topic a partition belongs to, or t itself
// when t is not a partition.
func (t TopicName) Parent() TopicName {
	if t.PartitionIndex < 0 {
		return t
	}
	p := t
	p.Local = t.Local[:strings.LastIndex(t.Local, PartitionSuffix)]
	p.PartitionIndex = partitionIndex(p.Local)
	p.full = p.Domain + "://" + p.Tenant + "/" + p.Namespace + "/" + p.Local
	return p
}

// Partition returns partition i of t (t must not itself be a partition for
// the result to be meaningful to Pulsar clients).
func (t TopicName) Partition(i int) TopicName {
	p := t
	p.Local = t.Local + PartitionSuffix + strconv.Itoa(i)
	p.PartitionIndex = i
	p.full = p.Domain + "://" + p.Tenant + "/" + p.Namespace + "/" + p.Local
	return p
}
