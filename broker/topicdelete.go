package broker

import (
	"context"
	"fmt"
)

// deleteTopicStorage deletes the managed ledger of persistent topic full
// (unloaded already) through Deps.DeleteLedger: its cursors, ledgers and
// metadata, so the bookies reclaim the space, as Pulsar deletes a topic's
// ledgers with the topic. Without DeleteLedger (test setups) the data is
// left alone.
func (d *Deps) deleteTopicStorage(ctx context.Context, full string) error {
	del := d.DeleteLedger
	if del == nil {
		return nil
	}
	if err := del(ctx, full); err != nil {
		return fmt.Errorf("delete managed ledger of %s: %w", full, err)
	}
	return nil
}
