package pulsarproto

import (
	"errors"
	"testing"
)

func TestParseTopicName(t *testing.T) {
	cases := []struct {
		in        string
		want      string
		partition int
		parent    string
		ns        string
		persist   bool
	}{
		{"my-topic", "persistent://public/default/my-topic", -1, "persistent://public/default/my-topic", "public/default", true},
		{"my-topic-partition-0", "persistent://public/default/my-topic-partition-0", 0, "persistent://public/default/my-topic", "public/default", true},
		{"t1/ns1/topic", "persistent://t1/ns1/topic", -1, "persistent://t1/ns1/topic", "t1/ns1", true},
		{"t1/ns1/topic-partition-12", "persistent://t1/ns1/topic-partition-12", 12, "persistent://t1/ns1/topic", "t1/ns1", true},
		{"persistent://public/default/x", "persistent://public/default/x", -1, "persistent://public/default/x", "public/default", true},
		{"non-persistent://a/b/c-partition-3", "non-persistent://a/b/c-partition-3", 3, "non-persistent://a/b/c", "a/b", false},
		{"persistent://pulsar/system/transaction_coordinator_assign", "persistent://pulsar/system/transaction_coordinator_assign", -1, "persistent://pulsar/system/transaction_coordinator_assign", "pulsar/system", true},
		// Not partition suffixes.
		{"x-partition-", "persistent://public/default/x-partition-", -1, "persistent://public/default/x-partition-", "public/default", true},
		{"x-partition-01", "persistent://public/default/x-partition-01", -1, "persistent://public/default/x-partition-01", "public/default", true},
		{"x-partition-+1", "persistent://public/default/x-partition-+1", -1, "persistent://public/default/x-partition-+1", "public/default", true},
		{"x-partition-a", "persistent://public/default/x-partition-a", -1, "persistent://public/default/x-partition-a", "public/default", true},
		{"x-partition-99999999999", "persistent://public/default/x-partition-99999999999", -1, "persistent://public/default/x-partition-99999999999", "public/default", true},
		// The last suffix counts.
		{"x-partition-1-partition-2", "persistent://public/default/x-partition-1-partition-2", 2, "persistent://public/default/x-partition-1", "public/default", true},
		// Local names may hold characters tenants may not.
		{"a.b=c:d_e/ns/t p@q", "persistent://a.b=c:d_e/ns/t p@q", -1, "persistent://a.b=c:d_e/ns/t p@q", "a.b=c:d_e/ns", true},
	}
	for _, c := range cases {
		tn, err := ParseTopicName(c.in)
		if err != nil {
			t.Errorf("ParseTopicName(%q) err = %v", c.in, err)
			continue
		}
		if tn.String() != c.want || tn.PartitionIndex != c.partition || tn.IsPartition() != (c.partition >= 0) ||
			tn.Parent().String() != c.parent || tn.NamespaceName() != c.ns || tn.IsPersistent() != c.persist {
			t.Errorf("ParseTopicName(%q) = %q idx %d parent %q ns %q persistent %v, want %q %d %q %q %v",
				c.in, tn, tn.PartitionIndex, tn.Parent(), tn.NamespaceName(), tn.IsPersistent(), c.want, c.partition, c.parent, c.ns, c.persist)
		}
		// Canonical names parse to themselves.
		again, err := ParseTopicName(tn.String())
		if err != nil || again != tn {
			t.Errorf("ParseTopicName(%q) = %+v, %v; want %+v", tn, again, err, tn)
		}
	}
	bad := []string{
		"", "a/b", "a/b/c/d", "t/ns/", "/ns/t", "t//x", "persistent://a/b", "persistent://a/b/c/d",
		"persistent:///b/c", "http://a/b/c", "://a/b/c", "persistent://a b/ns/t", "persistent://a/n$s/t",
		"persistent://a/b/ ", "persistent://a/b/",
	}
	for _, s := range bad {
		if tn, err := ParseTopicName(s); !errors.Is(err, ErrBadTopicName) {
			t.Errorf("ParseTopicName(%q) = %q, %v; want ErrBadTopicName", s, tn, err)
		}
	}
}

func TestTopicPartitions(t *testing.T) {
	tn, _ := ParseTopicName("persistent://t/ns/p")
	p := tn.Partition(4)
	if p.String() != "persistent://t/ns/p-partition-4" || p.PartitionIndex != 4 || p.Parent() != tn {
		t.Fatalf("Partition(4) = %q idx %d parent %q", p, p.PartitionIndex, p.Parent())
	}
	parsed, _ := ParseTopicName(p.String())
	if parsed != p {
		t.Fatalf("ParseTopicName(%q) = %+v, want %+v", p, parsed, p)
	}
	if tn.Parent() != tn {
		t.Fatalf("Parent of a non-partition = %q, want itself", tn.Parent())
	}
}

func TestParseNamespace(t *testing.T) {
	if tenant, ns, err := ParseNamespace("public/default"); err != nil || tenant != "public" || ns != "default" {
		t.Fatalf("ParseNamespace(public/default) = %q %q %v", tenant, ns, err)
	}
	for _, s := range []string{"", "public", "public/", "/default", "a/b/c", "a b/c"} {
		if _, _, err := ParseNamespace(s); !errors.Is(err, ErrBadTopicName) {
			t.Errorf("ParseNamespace(%q) err = %v, want ErrBadTopicName", s, err)
		}
	}
}
