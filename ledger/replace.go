package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Fragment names the entries one bookie holds in one segment: ensemble
// position Pos of the segment whose FirstEntry is First, entries up to
// Last (those whose write set holds Pos, see Metadata.InWriteSet).
type Fragment struct {
	First, Last int64
	Pos         int
}

// FragmentEnd returns the last entry of segment i of m: the entry before
// the next segment's first, or LastEntryID for the last segment (only
// final once the ledger is CLOSED).
func (m *Metadata) FragmentEnd(i int) int64 {
	if i+1 < len(m.Ensembles) {
		return m.Ensembles[i+1].FirstEntry - 1
	}
	return m.LastEntryID
}

// InWriteSet reports whether ensemble position idx stores entry e
// (positions (e+k) mod E, k < Qw).
func (m *Metadata) InWriteSet(e int64, idx int) bool {
	return inWriteSet(e, idx, m.EnsembleSize, m.WriteQuorum)
}

// ReplaceBookie compare-and-sets bookie from → to at position f.Pos of the
// segment starting at f.First in ledger id's metadata, after a
// re-replicator copied f's entries to to. It re-reads and retries on a
// version conflict and refuses, changing nothing, when:
//   - the ledger was deleted: ErrNoSuchLedger;
//   - the segment no longer starts at f.First, no longer ends at f.Last
//     (for the last segment: the ledger is not CLOSED at f.Last), no
//     longer holds from at f.Pos, or already holds to: ErrEnsembleChanged.
//
// It returns the metadata written and its version.
func (c *Client) ReplaceBookie(ctx context.Context, id int64, f Fragment, from, to string) (Metadata, metadata.Version, error) {
	for {
		cur, v, err := readMetadata(ctx, c.store, id)
		if err != nil {
			return Metadata{}, 0, err
		}
		i := slices.IndexFunc(cur.Ensembles, func(s Segment) bool { return s.FirstEntry == f.First })
		switch {
		case i < 0:
			return Metadata{}, 0, fmt.Errorf("%w: ledger %d has no segment at %d", ErrEnsembleChanged, id, f.First)
		case f.Pos < 0 || f.Pos >= len(cur.Ensembles[i].Bookies) || cur.Ensembles[i].Bookies[f.Pos] != from:
			return Metadata{}, 0, fmt.Errorf("%w: ledger %d segment %d position %d is not %s", ErrEnsembleChanged, id, f.First, f.Pos, from)
		case slices.Contains(cur.Ensembles[i].Bookies, to):
			return Metadata{}, 0, fmt.Errorf("%w: ledger %d segment %d already holds %s", ErrEnsembleChanged, id, f.First, to)
		case i == len(cur.Ensembles)-1 && cur.State != StateClosed:
			return Metadata{}, 0, fmt.Errorf("%w: ledger %d last segment is still %s", ErrEnsembleChanged, id, cur.State)
		case cur.FragmentEnd(i) != f.Last:
			return Metadata{}, 0, fmt.Errorf("%w: ledger %d segment %d ends at %d, not %d", ErrEnsembleChanged, id, f.First, cur.FragmentEnd(i), f.Last)
		}
		cur.Ensembles[i].Bookies[f.Pos] = to
		nv, err := c.store.Put(ctx, LedgerPath(id), encodeMetadata(&cur), v)
		switch {
		case err == nil:
			return cur, nv, nil
		case errors.Is(err, metadata.ErrBadVersion):
			continue
		case errors.Is(err, metadata.ErrNotFound):
			return Metadata{}, 0, fmt.Errorf("%w: %d", ErrNoSuchLedger, id)
		default:
			return Metadata{}, 0, err
		}
	}
}
