package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/metadata"
)

// RackInfoPath is the node of the bookies' groups, in Pulsar's layout
// (BookieRackAffinityMapping's /bookies): a JSON object of group name →
// bookie id → {"rack", "hostname"}, which Pulsar's
// `bookies set-bookie-rack --group` writes.
const RackInfoPath = "/bookies"

// BookieInfo is a bookie's entry in the rack information.
type BookieInfo struct {
	Rack     string `json:"rack"`
	Hostname string `json:"hostname,omitempty"`
}

// RackInfo is the rack information: group → bookie id → BookieInfo.
type RackInfo map[string]map[string]BookieInfo

// Affinity restricts placement to groups of bookies, as Pulsar's
// IsolatedBookieEnsemblePlacementPolicy does with a namespace's bookie
// affinity group: a bookie of a group named in neither Primary nor
// Secondary is never chosen; a bookie of a Secondary group only when
// fewer writable bookies of the Primary groups than the ensemble needs
// are available; bookies in no group stay eligible.
type Affinity struct {
	Primary, Secondary []string
}

// ReadRackInfo reads the rack information (empty when none is stored).
func ReadRackInfo(ctx context.Context, st metadata.Store) (RackInfo, error) {
	b, _, err := st.Get(ctx, RackInfoPath)
	if errors.Is(err, metadata.ErrNotFound) || (err == nil && len(b) == 0) {
		return RackInfo{}, nil
	}
	if err != nil {
		return nil, err
	}
	ri := RackInfo{}
	if err := json.Unmarshal(b, &ri); err != nil {
		return nil, fmt.Errorf("ledger: %s: %w", RackInfoPath, err)
	}
	return ri, nil
}

// ParseGroups splits Pulsar's comma-separated group list.
func ParseGroups(s string) []string {
	var out []string
	for _, g := range strings.Split(s, ",") {
		if g = strings.TrimSpace(g); g != "" && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// excluded returns the bookies a's placement never picks, given the
// writable bookies avail and the n bookies a placement needs.
func (a *Affinity) excluded(ri RackInfo, avail []string, n int) map[string]bool {
	out := map[string]bool{}
	if a == nil {
		return out
	}
	for g, bs := range ri {
		if slices.Contains(a.Primary, g) {
			continue
		}
		for b := range bs {
			out[b] = true
		}
	}
	primary := 0
	for _, b := range avail {
		for _, g := range a.Primary {
			if _, ok := ri[g][b]; ok {
				primary++
				break
			}
		}
	}
	if primary < n {
		for _, g := range a.Secondary {
			for b := range ri[g] {
				delete(out, b)
			}
		}
	}
	return out
}

// affinityExcluded reads the rack information and returns a's excluded
// bookies (none without an affinity).
func (c *Client) affinityExcluded(ctx context.Context, a *Affinity, avail []string, n int) (map[string]bool, error) {
	if a == nil {
		return map[string]bool{}, nil
	}
	ri, err := ReadRackInfo(ctx, c.store)
	if err != nil {
		return nil, err
	}
	return a.excluded(ri, avail, n), nil
}
