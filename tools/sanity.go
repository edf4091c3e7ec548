package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/ledger"
)

// Sanity is one bookie's BookieSanity result.
type Sanity struct {
	Bookie  string  `json:"bookie"`
	OK      bool    `json:"ok"`
	Entries int     `json:"entries"`
	Millis  float64 `json:"millis"`
	Error   string  `json:"error,omitempty"`
}

// Sanities is BookieSanity's result.
type Sanities []Sanity

// Text is one line per bookie.
func (ss Sanities) Text() string {
	var s strings.Builder
	for _, o := range ss {
		status := "ok"
		if !o.OK {
			status = "FAILED: " + o.Error
		}
		fmt.Fprintf(&s, "%s\t%s\t%d entries in %.1f ms\n", o.Bookie, status, o.Entries, o.Millis)
	}
	return s.String()
}

// BookieSanity writes entries to a ledger placed on each writable bookie
// (or only on bookie), reads them back and deletes the ledger. It returns
// every bookie's result, and an error when any failed.
func BookieSanity(ctx context.Context, c Cluster, bookie string, entries int, p Progress) (Sanities, error) {
	targets := []string{bookie}
	if bookie == "" {
		s, err := autorecovery.ListBookies(ctx, c.Store)
		if err != nil {
			return nil, err
		}
		targets = s.Writable
	}
	if len(targets) == 0 {
		return nil, errors.New("no writable bookie registered")
	}
	out := Sanities{}
	failed := 0
	p = orNone(p)
	p.Start(int64(len(targets)), "checking bookies", false)
	n := &counter{p: p}
	for _, b := range targets {
		t0 := time.Now()
		err := sanityCheck(ctx, c, b, entries)
		o := Sanity{Bookie: b, OK: err == nil, Entries: entries, Millis: float64(time.Since(t0).Microseconds()) / 1000}
		if err != nil {
			o.Error = err.Error()
			failed++
		}
		out = append(out, o)
		n.add(1)
	}
	p.Finish()
	if failed > 0 {
		return out, fmt.Errorf("%d of %d bookies failed the sanity check", failed, len(targets))
	}
	return out, nil
}

// sanityCheck writes entries to a ledger placed on bookie b alone, reads
// them back, and deletes the ledger.
func sanityCheck(ctx context.Context, c Cluster, b string, entries int) error {
	lc, err := ledger.NewClient(c.Store, c.Resolver, ledger.Options{Bookies: []string{b}})
	if err != nil {
		return err
	}
	defer lc.Close()
	h, err := lc.Create(ctx, ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1, Password: []byte("bookiesanity"),
		Custom: map[string][]byte{"application": []byte("bookiesanity")}})
	if err != nil {
		return err
	}
	defer lc.Delete(context.WithoutCancel(ctx), h.ID())
	return writeReadBack(ctx, lc, h, entries, 100, nil)
}

// writeReadBack adds entries of size bytes, closes the ledger, reopens it
// and checks every entry.
func writeReadBack(ctx context.Context, lc *ledger.Client, h *ledger.WriteHandle, entries, size int, progress func()) error {
	body := func(e int) []byte {
		p := fmt.Appendf(nil, "entry %d of ledger %d ", e, h.ID())
		for len(p) < size {
			p = append(p, byte('a'+e%26))
		}
		return p
	}
	errc := make(chan error, 1)
	sem := make(chan struct{}, 64)
	for e := range entries {
		select {
		case sem <- struct{}{}:
		case err := <-errc:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
		h.AddAsync(body(e), func(id int64, err error) {
			<-sem
			if err == nil && id != int64(e) {
				err = fmt.Errorf("entry %d acked as %d", e, id)
			}
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
			if progress != nil {
				progress()
			}
		})
	}
	if err := h.Close(ctx); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return err
	default:
	}
	r, err := lc.Open(ctx, h.ID())
	if err != nil {
		return err
	}
	if r.LastAddConfirmed() != int64(entries)-1 {
		return fmt.Errorf("ledger %d: last entry %d after close, want %d", h.ID(), r.LastAddConfirmed(), entries-1)
	}
	for lo := 0; lo < entries; lo += 256 {
		hi := min(lo+255, entries-1)
		got, err := r.Read(ctx, int64(lo), int64(hi))
		if err != nil {
			return err
		}
		for i, p := range got {
			if string(p) != string(body(lo+i)) {
				return fmt.Errorf("ledger %d entry %d: read %q", h.ID(), lo+i, p)
			}
		}
	}
	return nil
}

// SimpleTestResult is SimpleTest's result.
type SimpleTestResult struct {
	Ledger        int64    `json:"ledger"`
	Entries       int      `json:"entries"`
	Size          int      `json:"size"`
	Ensemble      []string `json:"ensemble"`
	Seconds       float64  `json:"seconds"`
	EntriesPerSec float64  `json:"entriesPerSec"`
	Deleted       bool     `json:"deleted"`
}

// Text is a one-line summary.
func (o SimpleTestResult) Text() string {
	kept := ", kept"
	if o.Deleted {
		kept = ", deleted"
	}
	return fmt.Sprintf("ledger %d on %s: wrote and read back %d entries of %d B in %.2fs (%.0f entries/s)%s\n",
		o.Ledger, strings.Join(o.Ensemble, ","), o.Entries, o.Size, o.Seconds, o.EntriesPerSec, kept)
}

// SimpleTest creates a ledger with the quorums of co, writes entries of
// size bytes, reads them back and (unless keep) deletes it.
func SimpleTest(ctx context.Context, c Cluster, co ledger.CreateOptions, entries, size int, keep bool, p Progress) (SimpleTestResult, error) {
	co.Password = []byte("simpletest")
	co.Custom = map[string][]byte{"application": []byte("simpletest")}
	h, err := c.Ledgers.Create(ctx, co)
	if err != nil {
		return SimpleTestResult{}, err
	}
	out := SimpleTestResult{Ledger: h.ID(), Entries: entries, Size: size, Ensemble: h.Metadata().Ensembles[0].Bookies}
	p = orNone(p)
	p.Start(int64(entries), fmt.Sprintf("ledger %d", h.ID()), false)
	n := &counter{p: p}
	t0 := time.Now()
	err = writeReadBack(ctx, c.Ledgers, h, entries, size, func() { n.add(1) })
	p.Finish()
	if err != nil {
		return out, err
	}
	out.Seconds = time.Since(t0).Seconds()
	out.EntriesPerSec = float64(entries) / out.Seconds
	if !keep {
		if err := c.Ledgers.Delete(ctx, h.ID()); err != nil {
			return out, err
		}
		out.Deleted = true
	}
	return out, nil
}
