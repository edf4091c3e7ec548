package mledger

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Delete closes the managed ledger and removes it for good: every cursor
// (node and cursor ledger), every ledger, and the info node. Ledgers are
// deleted after the info node is gone, so a crash in between leaks ledgers
// but never leaves an info node naming deleted ones.
func (ml *ManagedLedger) Delete(ctx context.Context) error {
	if err := ml.Close(ctx); err != nil && !errors.Is(err, ErrFenced) {
		ml.log.Warn("close before delete", "err", err)
	}
	ml.infoMu.Lock()
	var ledgers []int64
	for _, l := range ml.info.ledgers {
		ledgers = append(ledgers, l.LedgerID)
	}
	infos := slices.Clone(ml.info.ledgers)
	ledgers = append(ledgers, ml.info.compaction.ledgerIDs()...)
	ml.infoMu.Unlock()
	// Offloaded objects go first: if the object store cannot delete
	// them the managed ledger stays (and the delete can be retried)
	// rather than orphaning them.
	if err := deleteOffloaded(ctx, ml.offloader(), infos); err != nil {
		return err
	}
	return deleteStored(ctx, ml.meta, ml.store, ml.path, ledgers)
}

// Delete removes the managed ledger name for good, like
// ManagedLedger.Delete, without opening it for writes when it is not open
// in this factory: no ledger is created or recovered, so it works while
// no bookie is writable (a full disk). A managed ledger that does not
// exist is not an error. It must not be opened concurrently elsewhere.
func (f *Factory) Delete(ctx context.Context, name string) error {
	f.mu.Lock()
	ml := f.mls[name]
	f.mu.Unlock()
	if ml != nil {
		return ml.Delete(ctx)
	}
	path := f.opts.RootPath + "/" + escapeName(name)
	data, _, err := f.opts.Metadata.Get(ctx, path)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	_, info, err := decodeInfo(data)
	if err != nil {
		return err
	}
	var ledgers []int64
	for _, l := range info.ledgers {
		ledgers = append(ledgers, l.LedgerID)
	}
	if err := deleteOffloaded(ctx, f.opts.Offloader, info.ledgers); err != nil {
		return err
	}
	ledgers = append(ledgers, info.compaction.ledgerIDs()...)
	return deleteStored(ctx, f.opts.Metadata, f.opts.Ledgers, path, ledgers)
}

// deleteStored deletes the cursor nodes under path (with their cursor
// ledgers), the info node at path, then ledgers. Ledgers go after the
// info node, so a crash in between leaks ledgers but never leaves an info
// node naming deleted ones.
func deleteStored(ctx context.Context, meta metadata.Store, store LedgerStore, path string, ledgers []int64) error {
	names, err := meta.Children(ctx, path)
	if err != nil && !isNotFound(err) {
		return err
	}
	for _, child := range names {
		p := path + "/" + child
		data, _, err := meta.Get(ctx, p)
		if err != nil && !isNotFound(err) {
			return err
		}
		if err == nil {
			if _, n, derr := decodeCursorNode(data); derr == nil && n.ledgerID >= 0 {
				ledgers = append(ledgers, n.ledgerID)
			}
		}
		if err := meta.Delete(ctx, p, metadata.AnyVersion); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete cursor node %s: %w", child, err)
		}
	}
	if err := meta.Delete(ctx, path, metadata.AnyVersion); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete info node: %w", err)
	}
	var errs []error
	for _, id := range ledgers {
		if err := store.Delete(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("delete ledger %d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// List returns the names of the managed ledgers stored under the
// factory's root path, sorted.
func (f *Factory) List(ctx context.Context) ([]string, error) {
	children, err := f.opts.Metadata.Children(ctx, f.opts.RootPath)
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	out := make([]string, 0, len(children))
	for _, c := range children {
		name, err := url.PathUnescape(c)
		if err != nil {
			return nil, fmt.Errorf("managed ledger node %q: %w", c, ErrCorrupt)
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}
