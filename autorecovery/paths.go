package autorecovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Paths in the metadata store (see doc.go).
const (
	Root             = "/ledgers/underreplication"
	ElectionPath     = Root + "/auditorelection"
	MarksPath        = Root + "/ledgers"
	LocksPath        = Root + "/locks"
	DecommissionPath = Root + "/decommission"
	// CookiesPath holds the bookies' registered cookies (bookie/server).
	CookiesPath = "/ledgers/cookies"
)

// Mark is the value of an under-replicated ledger's node.
type Mark struct {
	// Bookies are the lost bookies the auditor found in the ledger's
	// ensembles (a hint: the worker recomputes what is missing).
	Bookies []string `json:"bookies"`
	// Since is when the ledger was first marked (Unix milliseconds).
	Since int64 `json:"since"`
}

// SinceTime returns Since as a time.
func (m Mark) SinceTime() time.Time { return time.UnixMilli(m.Since) }

func markPath(id int64) string { return MarksPath + "/" + strconv.FormatInt(id, 10) }
func lockPath(id int64) string { return LocksPath + "/" + strconv.FormatInt(id, 10) }

// MarkUnderReplicated marks ledger id as missing copies on bookies,
// merging them into an existing mark (whose Since is kept).
func MarkUnderReplicated(ctx context.Context, store metadata.Store, id int64, bookies []string) error {
	for {
		b, v, err := store.Get(ctx, markPath(id))
		if errors.Is(err, metadata.ErrNotFound) {
			m := Mark{Bookies: slices.Sorted(slices.Values(bookies)), Since: time.Now().UnixMilli()}
			m.Bookies = slices.Compact(m.Bookies)
			_, err = store.Put(ctx, markPath(id), encodeMark(m), metadata.NotExists)
			if errors.Is(err, metadata.ErrExists) {
				continue
			}
			return err
		}
		if err != nil {
			return err
		}
		m := decodeMark(b)
		merged := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(m.Bookies), bookies...))))
		if slices.Equal(merged, m.Bookies) {
			return nil
		}
		m.Bookies = merged
		_, err = store.Put(ctx, markPath(id), encodeMark(m), v)
		if errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrNotFound) {
			continue
		}
		return err
	}
}

// Unmark removes ledger id's mark (no error if absent).
func Unmark(ctx context.Context, store metadata.Store, id int64) error {
	err := store.Delete(ctx, markPath(id), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	return err
}

// UnderReplicated lists the marked ledgers with their marks.
func UnderReplicated(ctx context.Context, store metadata.Store) (map[int64]Mark, error) {
	names, err := store.Children(ctx, MarksPath)
	if errors.Is(err, metadata.ErrNotFound) {
		return map[int64]Mark{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[int64]Mark, len(names))
	for _, n := range names {
		id, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			continue
		}
		b, _, err := store.Get(ctx, markPath(id))
		if errors.Is(err, metadata.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = decodeMark(b)
	}
	return out, nil
}

func encodeMark(m Mark) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic("BUG: mark does not marshal: " + err.Error())
	}
	return b
}

// decodeMark decodes a mark; a garbled one reads as "marked now, no hint"
// so that the worker still checks the ledger.
func decodeMark(b []byte) Mark {
	var m Mark
	if err := json.Unmarshal(b, &m); err != nil || m.Since == 0 {
		m.Since = time.Now().UnixMilli()
	}
	return m
}

// Bookies is a snapshot of the bookie registrations.
type Bookies struct {
	Writable       []string
	ReadOnly       []string
	Decommissioned []string // bookies being decommissioned (DecommissionPath)
}

// Available reports whether b is registered (writable or read-only) and
// not being decommissioned: its copies count.
func (s Bookies) Available(b string) bool {
	if slices.Contains(s.Decommissioned, b) {
		return false
	}
	return slices.Contains(s.Writable, b) || slices.Contains(s.ReadOnly, b)
}

// ListBookies reads the registrations under ledger.AvailablePath and the
// decommission requests.
func ListBookies(ctx context.Context, store metadata.Store) (Bookies, error) {
	var s Bookies
	var err error
	list := func(p string) ([]string, error) {
		names, err := store.Children(ctx, p)
		if errors.Is(err, metadata.ErrNotFound) {
			return nil, nil
		}
		return names, err
	}
	if s.Writable, err = list(ledger.AvailablePath); err != nil {
		return s, err
	}
	s.Writable = slices.DeleteFunc(s.Writable, func(n string) bool { return n == "readonly" })
	if s.ReadOnly, err = list(ledger.ReadOnlyPath); err != nil {
		return s, err
	}
	if s.Decommissioned, err = list(DecommissionPath); err != nil {
		return s, err
	}
	return s, nil
}

// RequestDecommission marks bookie b as being decommissioned: its copies
// no longer count and the auditor marks its ledgers.
func RequestDecommission(ctx context.Context, store metadata.Store, b string) error {
	_, err := store.Put(ctx, DecommissionPath+"/"+b, nil, metadata.AnyVersion)
	return err
}

// FinishDecommission removes the decommission request and the bookie's
// cookie, so that its id may be reused by a fresh bookie.
func FinishDecommission(ctx context.Context, store metadata.Store, b string) error {
	for _, p := range []string{CookiesPath + "/" + b, DecommissionPath + "/" + b} {
		if err := store.Delete(ctx, p, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
			return fmt.Errorf("autorecovery: deleting %s: %w", p, err)
		}
	}
	return nil
}

// LostIn returns the bookies of m's ensembles that are not available.
func LostIn(m *ledger.Metadata, s Bookies) []string {
	var lost []string
	for _, seg := range m.Ensembles {
		for _, b := range seg.Bookies {
			if !s.Available(b) && !slices.Contains(lost, b) {
				lost = append(lost, b)
			}
		}
	}
	slices.Sort(lost)
	return lost
}
