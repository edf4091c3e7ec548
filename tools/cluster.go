package tools

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Cluster is what the cluster tools use: the metadata store, a ledger
// client over it and the bookie resolver the client uses.
type Cluster struct {
	Store    metadata.Store
	Ledgers  *ledger.Client
	Resolver ledger.BookieResolver
}

// BookieState is one bookie of ListBookies.
type BookieState struct {
	ID    string `json:"id"`
	State string `json:"state"` // writable, readonly, decommissioning (with either), down
}

// BookieStates is ListBookies' result.
type BookieStates []BookieState

// Text is one "id<TAB>state" line per bookie.
func (bs BookieStates) Text() string {
	var b strings.Builder
	for _, o := range bs {
		fmt.Fprintf(&b, "%s\t%s\n", o.ID, o.State)
	}
	return b.String()
}

// ListBookies lists the registered bookies (writable and read-only) and
// the decommission requests.
func ListBookies(ctx context.Context, c Cluster) (BookieStates, error) {
	s, err := autorecovery.ListBookies(ctx, c.Store)
	if err != nil {
		return nil, err
	}
	out := BookieStates{}
	add := func(ids []string, state string) {
		for _, id := range ids {
			st := state
			if slices.Contains(s.Decommissioned, id) {
				st += ",decommissioning"
			}
			out = append(out, BookieState{id, st})
		}
	}
	add(s.Writable, "writable")
	add(s.ReadOnly, "readonly")
	for _, id := range s.Decommissioned {
		if !slices.Contains(s.Writable, id) && !slices.Contains(s.ReadOnly, id) {
			out = append(out, BookieState{id, "down,decommissioning"})
		}
	}
	return out, nil
}

// LedgerInfo summarizes a ledger's metadata; Bookies lists every bookie
// of any segment. Only ID is set when the metadata was not asked for.
type LedgerInfo struct {
	ID          int64    `json:"id"`
	State       string   `json:"state,omitempty"`
	Ensemble    int      `json:"ensembleSize,omitempty"`
	WriteQuorum int      `json:"writeQuorumSize,omitempty"`
	AckQuorum   int      `json:"ackQuorumSize,omitempty"`
	LastEntryID *int64   `json:"lastEntryId,omitempty"`
	Length      int64    `json:"length,omitempty"`
	Bookies     []string `json:"bookies,omitempty"`
}

// DescribeLedger summarizes m.
func DescribeLedger(id int64, m *ledger.Metadata) LedgerInfo {
	last := m.LastEntryID
	o := LedgerInfo{ID: id, State: string(m.State), Ensemble: m.EnsembleSize, WriteQuorum: m.WriteQuorum,
		AckQuorum: m.AckQuorum, LastEntryID: &last, Length: m.Length}
	for _, s := range m.Ensembles {
		for _, b := range s.Bookies {
			if !slices.Contains(o.Bookies, b) {
				o.Bookies = append(o.Bookies, b)
			}
		}
	}
	slices.Sort(o.Bookies)
	return o
}

// Ledgers is ListLedgers' result.
type Ledgers []LedgerInfo

// Text is one line per ledger: the id, and with metadata its state,
// quorums, last entry, length and bookies.
func (ls Ledgers) Text() string {
	var b strings.Builder
	for _, o := range ls {
		if o.LastEntryID == nil {
			fmt.Fprintf(&b, "%d\n", o.ID)
			continue
		}
		fmt.Fprintf(&b, "%d\t%s\tE=%d Qw=%d Qa=%d\tlast=%d\tlength=%d\t%s\n", o.ID, o.State,
			o.Ensemble, o.WriteQuorum, o.AckQuorum, *o.LastEntryID, o.Length, strings.Join(o.Bookies, ","))
	}
	return b.String()
}

// ListLedgers lists the ledger ids; with meta, each with its metadata;
// with bookie != "", only the ledgers with a segment on it.
func ListLedgers(ctx context.Context, c Cluster, meta bool, bookie string, p Progress) (Ledgers, error) {
	ids, err := c.Ledgers.Ledgers(ctx)
	if err != nil {
		return nil, err
	}
	out := Ledgers{}
	if !meta && bookie == "" {
		for _, id := range ids {
			out = append(out, LedgerInfo{ID: id})
		}
		return out, nil
	}
	p = orNone(p)
	p.Start(int64(len(ids)), "reading metadata", false)
	defer p.Finish()
	n := &counter{p: p}
	for _, id := range ids {
		m, _, err := c.Ledgers.Metadata(ctx, id)
		n.add(1)
		if errors.Is(err, ledger.ErrNoSuchLedger) {
			continue
		}
		if err != nil {
			return nil, err
		}
		o := DescribeLedger(id, &m)
		if bookie != "" && !slices.Contains(o.Bookies, bookie) {
			continue
		}
		if !meta {
			o = LedgerInfo{ID: id}
		}
		out = append(out, o)
	}
	return out, nil
}

// LedgerRecord is a ledger's metadata record as LedgerMetadata prints it
// (the password is never included).
type LedgerRecord struct {
	ID       int64           `json:"id"`
	Version  int64           `json:"version"`
	Metadata ledger.Metadata `json:"metadata"`
}

// Text describes the record, its segments and custom metadata.
func (r LedgerRecord) Text() string {
	m := r.Metadata
	var b strings.Builder
	fmt.Fprintf(&b, "ledger %d (version %d): %s E=%d Qw=%d Qa=%d lastEntryId=%d length=%d ctime=%s\n",
		r.ID, r.Version, m.State, m.EnsembleSize, m.WriteQuorum, m.AckQuorum, m.LastEntryID, m.Length,
		time.UnixMilli(m.CTime).UTC().Format(time.RFC3339))
	for _, s := range m.Ensembles {
		fmt.Fprintf(&b, "  from entry %d: %s\n", s.FirstEntry, strings.Join(s.Bookies, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(m.Custom)) {
		fmt.Fprintf(&b, "  custom %s=%q\n", k, m.Custom[k])
	}
	return b.String()
}

// LedgerMetadata reads a ledger's metadata record.
func LedgerMetadata(ctx context.Context, c Cluster, id int64) (LedgerRecord, error) {
	m, v, err := c.Ledgers.Metadata(ctx, id)
	if err != nil {
		return LedgerRecord{}, err
	}
	m.Password = nil // a secret; never printed
	return LedgerRecord{ID: id, Version: int64(v), Metadata: m}, nil
}

// Entry is one entry read by ReadLedger.
type Entry struct {
	Entry   int64  `json:"entry"`
	Size    int    `json:"size"`
	Payload []byte `json:"payload,omitempty"` // base64 in JSON
}

// ReadLedger reads entries first..last (last < 0: up to the last
// confirmed entry) and hands them to fn in order. Without recover an open
// ledger is read up to the LAC its bookies report, without fencing the
// writer; with recover it is fenced and closed first.
func ReadLedger(ctx context.Context, c Cluster, id, first, last int64, recover bool, fn func(Entry) error, p Progress) error {
	var r *ledger.ReadHandle
	var err error
	if recover {
		r, err = c.Ledgers.Open(ctx, id)
	} else {
		r, err = c.Ledgers.OpenNoRecovery(ctx, id)
	}
	if err != nil {
		return err
	}
	hi := r.LastAddConfirmed()
	if last >= 0 && last < hi {
		hi = last
	}
	if first > hi {
		return nil
	}
	p = orNone(p)
	p.Start(hi-first+1, "reading", false)
	defer p.Finish()
	n := &counter{p: p}
	for lo := first; lo <= hi; lo += 256 {
		got, err := r.Read(ctx, lo, min(lo+255, hi))
		if err != nil {
			return err
		}
		for i, pl := range got {
			if err := fn(Entry{Entry: lo + int64(i), Size: len(pl), Payload: pl}); err != nil {
				return err
			}
		}
		n.add(len(got))
	}
	return nil
}

// Mark is one under-replicated ledger.
type Mark struct {
	Ledger  int64     `json:"ledger"`
	Bookies []string  `json:"bookies"`
	Since   time.Time `json:"since"`
}

// Marks is UnderReplicated's result.
type Marks []Mark

// Text is one line per marked ledger.
func (ms Marks) Text() string {
	var b strings.Builder
	for _, o := range ms {
		fmt.Fprintf(&b, "%d\t%s\tsince %s\n", o.Ledger, strings.Join(o.Bookies, ","), o.Since.Format(time.RFC3339))
	}
	return b.String()
}

// UnderReplicated lists the ledgers the auditor marked under-replicated,
// by id.
func UnderReplicated(ctx context.Context, c Cluster) (Marks, error) {
	marks, err := autorecovery.UnderReplicated(ctx, c.Store)
	if err != nil {
		return nil, err
	}
	out := Marks{}
	for _, id := range slices.Sorted(maps.Keys(marks)) {
		out = append(out, Mark{id, marks[id].Bookies, marks[id].SinceTime().UTC()})
	}
	return out, nil
}
