package bookie

import (
	"cmp"
	"path/filepath"

	"github.com/magnetar-mq/magnetar/index"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// indexOpener opens the ledger index; tests may replace it.
var indexOpener = openLedgerIndex

// openIndex opens the ledger index.
func openIndex(opts *Options) (ledgerIndex, error) { return indexOpener(opts) }

// IndexDir is the subdirectory of the first ledger directory that holds
// the index files.
const IndexDir = "index"

func openLedgerIndex(opts *Options) (ledgerIndex, error) {
	ix, err := index.Open(index.Options{
		FS:              opts.FS,
		Dir:             filepath.Join(opts.LedgerDirs[0], IndexDir),
		SlotsPerPage:    opts.IndexSlotsPerPage,
		PagesPerSegment: indexPagesPerSegment(opts),
		Logger:          opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	return ledgerIndexAdapter{ix}, nil
}

// indexPagesPerSegment is opts.IndexPagesPerSegment, or for a default
// index on a small volume the largest power of two of pages whose segment
// takes at most 1/16 of it: a segment file is preallocated whole (it is
// mapped), and the default 64 MiB segment cannot be made at all on a
// volume of a few dozen MiB. It applies to a new index only.
func indexPagesPerSegment(opts *Options) int {
	if opts.IndexPagesPerSegment != 0 {
		return opts.IndexPagesPerSegment
	}
	du, ok := opts.FS.(vfs.DiskUsager)
	if !ok {
		return 0
	}
	total, _, err := du.DiskUsage(opts.LedgerDirs[0])
	if err != nil {
		return 0
	}
	slots := cmp.Or(opts.IndexSlotsPerPage, index.DefaultSlotsPerPage)
	pages := index.DefaultPagesPerSegment
	for pages > 16 && uint64(slots*8*pages) > total/16 {
		pages /= 2
	}
	return pages
}

// ledgerIndexAdapter adapts *index.Index to ledgerIndex. The explicit LAC
// is stored as the journal's explicit-LAC payload (appendLAC).
type ledgerIndexAdapter struct{ *index.Index }

func (a ledgerIndexAdapter) Put(ledger, entry int64, loc uint64) error {
	return a.Index.Set(ledger, entry, loc)
}

func (a ledgerIndexAdapter) PutRun(ledger, first int64, locs []uint64) error {
	return a.Index.SetRun(ledger, first, locs)
}

func (a ledgerIndexAdapter) Get(ledger, entry int64) (uint64, bool, error) {
	loc, ok := a.Index.Get(ledger, entry)
	return loc, ok, nil
}

func (a ledgerIndexAdapter) LastEntry(ledger int64) (int64, bool, error) {
	last, ok := a.Index.LastEntry(ledger)
	return last, ok && last >= 0, nil
}

func (a ledgerIndexAdapter) Meta(ledger int64) (ledgerMeta, bool, error) {
	m, ok := a.Index.GetMeta(ledger)
	if !ok {
		return ledgerMeta{}, false, nil
	}
	lm := ledgerMeta{masterKey: m.MasterKey, fenced: m.Fenced}
	if m.ExplicitLAC != nil {
		_, lac, body, err := decodeLAC(m.ExplicitLAC)
		if err != nil {
			return lm, true, err
		}
		lm.hasLAC, lm.lac, lm.lacBody = true, lac, body
	}
	return lm, true, nil
}

func (a ledgerIndexAdapter) SetMeta(ledger int64, m ledgerMeta) error {
	im := index.Meta{Fenced: m.fenced, MasterKey: m.masterKey}
	if m.hasLAC {
		im.ExplicitLAC = appendLAC(nil, m.lac, m.lacBody)
	}
	return a.Index.SetMeta(ledger, im)
}

func (a ledgerIndexAdapter) Ledgers() ([]int64, error) { return a.Index.Ledgers(), nil }
