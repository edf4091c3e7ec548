package broker

import (
	"fmt"
	"strconv"
	"strings"
)

// topicName is a canonical topic name:
// {Domain}://{Tenant}/{Namespace}/{Local}.
type topicName struct {
	Domain    string // "persistent" or "non-persistent"
	Tenant    string
	Namespace string
	Local     string
}

func (t topicName) String() string {
	return t.Domain + "://" + t.Tenant + "/" + t.Namespace + "/" + t.Local
}

// NamespaceName returns "tenant/namespace".
func (t topicName) NamespaceName() string { return t.Tenant + "/" + t.Namespace }

func (t topicName) persistent() bool { return t.Domain == "persistent" }

const partitionSuffix = "-partition-"

// partitionIndex returns i for "<base>-partition-<i>", else -1.
func (t topicName) partitionIndex() int {
	i := strings.LastIndex(t.Local, partitionSuffix)
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(t.Local[i+len(partitionSuffix):])
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// base returns the partitioned parent of a partition name (or t itself).
func (t topicName) base() topicName {
	if t.partitionIndex() < 0 {
		return t
	}
	t.Local = t.Local[:strings.LastIndex(t.Local, partitionSuffix)]
	return t
}

// partition returns the name of partition i of t.
func (t topicName) partition(i int) topicName {
	t.Local = t.Local + partitionSuffix + strconv.Itoa(i)
	return t
}

// parseTopicName canonicalises a topic name as Pulsar does: "x" means
// persistent://public/default/x, "t/ns/x" means persistent://t/ns/x, and
// a full name keeps its domain. Four-component (v1, cluster-scoped) names
// are refused.
func parseTopicName(s string) (topicName, error) {
	var tn topicName
	rest := s
	if d, r, ok := strings.Cut(s, "://"); ok {
		if d != "persistent" && d != "non-persistent" {
			return tn, fmt.Errorf("%w: %q: unknown domain", ErrInvalidTopicName, s)
		}
		tn.Domain, rest = d, r
	} else {
		tn.Domain = "persistent"
		if !strings.Contains(s, "/") {
			rest = "public/default/" + s
		}
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 || strings.Contains(parts[2], "/") {
		return tn, fmt.Errorf("%w: %q", ErrInvalidTopicName, s)
	}
	tn.Tenant, tn.Namespace, tn.Local = parts[0], parts[1], parts[2]
	if !validNamePart(tn.Tenant) || !validNamePart(tn.Namespace) || tn.Local == "" {
		return tn, fmt.Errorf("%w: %q", ErrInvalidTopicName, s)
	}
	return tn, nil
}
