package mledger

import (
	"context"
	"errors"
	"fmt"
	"net/url"
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
	names, err := ml.meta.Children(ctx, ml.path)
	if err != nil && !isNotFound(err) {
		return err
	}
	var ledgers []int64
	for _, child := range names {
		p := ml.path + "/" + child
		data, _, err := ml.meta.Get(ctx, p)
		if err != nil && !isNotFound(err) {
			return err
		}
		if err == nil {
			if _, n, derr := decodeCursorNode(data); derr == nil && n.ledgerID >= 0 {
				ledgers = append(ledgers, n.ledgerID)
			}
		}
		if err := ml.meta.Delete(ctx, p, metadata.AnyVersion); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete cursor node %s: %w", child, err)
		}
	}
	ml.infoMu.Lock()
	for _, l := range ml.info.ledgers {
		ledgers = append(ledgers, l.LedgerID)
	}
	ml.infoMu.Unlock()
	if err := ml.meta.Delete(ctx, ml.path, metadata.AnyVersion); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete info node: %w", err)
	}
	var errs []error
	for _, id := range ledgers {
		if err := ml.store.Delete(ctx, id); err != nil {
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
