package pulsarproto

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseTopicName: ParseTopicName never panics; a refusal wraps
// ErrBadTopicName; an accepted name is canonical (its String parses to the
// same TopicName), has a valid tenant and namespace that ParseNamespace
// accepts, a non-blank local name, and a partition index that agrees with
// Parent and Partition.
func FuzzParseTopicName(f *testing.F) {
	for _, s := range []string{
		"my-topic", "t/ns/x", "persistent://public/default/x", "non-persistent://a/b/c",
		"x-partition-3", "persistent://t/ns/y-partition-2147483647", "y-partition-2147483648",
		"y-partition-07", "a/b/c/d", "cluster/t/ns/x", "bad://t/ns/x", "", " ", "t//x",
		"persistent://t/ns/", "persistent://t/ns/a/b", "t/n s/x", "%2e%2e", "./../x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tn, err := ParseTopicName(s)
		if err != nil {
			if !errors.Is(err, ErrBadTopicName) {
				t.Fatalf("ParseTopicName(%q) = %v, not ErrBadTopicName", s, err)
			}
			return
		}
		again, err := ParseTopicName(tn.String())
		if err != nil || again != tn {
			t.Fatalf("ParseTopicName(%q) = %+v; its String %q parses to %+v, %v", s, tn, tn.String(), again, err)
		}
		if tn.String() != tn.Domain+"://"+tn.Tenant+"/"+tn.Namespace+"/"+tn.Local {
			t.Fatalf("String %q does not join the parts of %+v", tn.String(), tn)
		}
		if te, ns, err := ParseNamespace(tn.NamespaceName()); err != nil || te != tn.Tenant || ns != tn.Namespace {
			t.Fatalf("namespace %q of %q: ParseNamespace = %q, %q, %v", tn.NamespaceName(), s, te, ns, err)
		}
		if strings.TrimSpace(tn.Local) == "" || strings.Contains(tn.Tenant+tn.Namespace, "/") {
			t.Fatalf("accepted %q with parts %+v", s, tn)
		}
		if tn.IsPartition() {
			if tn.PartitionIndex > 1<<31-1 {
				t.Fatalf("partition index %d of %q beyond int32", tn.PartitionIndex, s)
			}
			if p := tn.Parent().Partition(tn.PartitionIndex); p != tn {
				t.Fatalf("Parent().Partition(%d) of %q = %q", tn.PartitionIndex, s, p.String())
			}
		} else if tn.Parent() != tn {
			t.Fatalf("Parent of the non-partition %q = %q", s, tn.Parent().String())
		}
	})
}
