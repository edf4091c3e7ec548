package tiered

import (
	"strings"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/offload"
	"github.com/magnetar-mq/magnetar/policy"
)

func newTiering(d policy.OffloadDefaults) *Tiering {
	return &Tiering{defaults: d, m: offload.NewMetrics(), by: map[string]*offload.Offloader{}}
}

func ptr[T any](v T) *T { return &v }

// TestPolicyDefaultsUnderNamespace: the broker's defaults apply field by
// field under a namespace's offload policies; no driver, no offloader.
func TestPolicyDefaultsUnderNamespace(t *testing.T) {
	x := newTiering(policy.DefaultOffload())
	p, err := x.policy(&policy.Resolved{})
	if err != nil {
		t.Fatal(err)
	}
	if p.ThresholdBytes != -1 || p.ThresholdSeconds != -1 || p.DeletionLag != 4*time.Hour || p.BookkeeperFirst || p.Offloader != nil {
		t.Fatalf("defaults: %+v", p)
	}
	p, err = x.policy(&policy.Resolved{Offload: &policy.OffloadPolicies{
		ManagedLedgerOffloadThresholdInBytes:    ptr(int64(1 << 20)),
		ManagedLedgerOffloadDeletionLagInMillis: ptr(int64(-1)),
		ManagedLedgerOffloadedReadPriority:      policy.ReadBookkeeperFirst,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if p.ThresholdBytes != 1<<20 || p.ThresholdSeconds != -1 || p.DeletionLag != -1 || !p.BookkeeperFirst {
		t.Fatalf("namespace over defaults: %+v", p)
	}
}

// TestPolicyOffloaderPerSetting: a driver gets an offloader, one per
// distinct connection setting, reused across topics.
func TestPolicyOffloaderPerSetting(t *testing.T) {
	root := t.TempDir()
	d := policy.DefaultOffload()
	d.AllowedFileSystemRoots = []string{root}
	x := newTiering(d)
	ns := func(dir string) *policy.Resolved {
		return &policy.Resolved{Offload: &policy.OffloadPolicies{ManagedLedgerOffloadDriver: "filesystem", FileSystemURI: "file://" + dir}}
	}
	for _, dir := range []string{root + "/a", root + "/a", root + "/b"} {
		p, err := x.policy(ns(dir))
		if err != nil {
			t.Fatal(err)
		}
		if p.Offloader == nil {
			t.Fatalf("%s: no offloader", dir)
		}
	}
	if len(x.by) != 2 {
		t.Fatalf("%d offloaders for two settings", len(x.by))
	}
}

// TestPolicyOutsideAllowList: a policy pointing outside the operator's
// allow-list is refused where it is applied: nothing is offloaded.
func TestPolicyOutsideAllowList(t *testing.T) {
	d := policy.DefaultOffload()
	d.AllowedFileSystemRoots = []string{t.TempDir()}
	x := newTiering(d)
	p, err := x.policy(&policy.Resolved{Offload: &policy.OffloadPolicies{ManagedLedgerOffloadDriver: "filesystem", FileSystemURI: "file://" + t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "offloadAllowedFileSystemRoots") {
		t.Fatalf("err = %v, want the allow-list refusal", err)
	}
	if p.Offloader != nil || p.ThresholdBytes != -1 || p.ThresholdSeconds != -1 || p.DeletionLag != -1 {
		t.Fatalf("refused policy still offloads: %+v", p)
	}
	if len(x.by) != 0 {
		t.Fatal("an offloader was made for a refused location")
	}
}
