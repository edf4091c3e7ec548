package policy

import (
	"context"
	"fmt"
	"strings"
)

// BookieAffinityGroup is Pulsar's BookieAffinityGroupData: the bookie
// groups (comma-separated names of groups of the bookies' rack
// information) the ledgers of a namespace's topics are placed on: the
// primary groups, and the secondary ones when the primary groups have
// too few writable bookies.
type BookieAffinityGroup struct {
	Primary   string `json:"bookkeeperAffinityGroupPrimary"`
	Secondary string `json:"bookkeeperAffinityGroupSecondary"`
}

// maxGroupList bounds a group list.
const maxGroupList = 1024

// Validate refuses a list that is too long or a group name with
// characters other than letters, digits and "-_.:" (group names are
// keys of the rack information, never paths).
func (g BookieAffinityGroup) Validate() error {
	for _, l := range []string{g.Primary, g.Secondary} {
		if len(l) > maxGroupList {
			return fmt.Errorf("bookie affinity group list longer than %d bytes", maxGroupList)
		}
		for _, name := range strings.Split(l, ",") {
			for _, c := range strings.TrimSpace(name) {
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:", c)) {
					return fmt.Errorf("bookie affinity group %q: only letters, digits and -_.: are allowed", strings.TrimSpace(name))
				}
			}
		}
	}
	return nil
}

// AntiAffinityPeers lists the other namespaces of ns's tenant in ns's
// anti-affinity group (nil when ns has none or its policies cannot be
// read), for the load manager's placement. As in Pulsar, a group is
// scoped to its tenant.
func (s *Store) AntiAffinityPeers(ctx context.Context, ns string) []string {
	p, err := s.Get(ctx, ns)
	if err != nil || p.AntiAffinityGroup == "" {
		return nil
	}
	tenant, _, _ := strings.Cut(ns, "/")
	nss, err := s.Namespaces(ctx, tenant)
	if err != nil {
		return nil
	}
	var out []string
	for _, o := range nss {
		if o == ns {
			continue
		}
		if op, err := s.Get(ctx, o); err == nil && op.AntiAffinityGroup == p.AntiAffinityGroup {
			out = append(out, o)
		}
	}
	return out
}
