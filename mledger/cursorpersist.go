package mledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"

	"github.com/magnetar-mq/magnetar/metadata"
)

// cursorLedger is the ledger a durable cursor appends its state to: one
// snapshot (possibly in several chunk entries) followed by deltas.
type cursorLedger struct {
	w             WriteLedger
	entries       int64
	deltaBytes    int64
	snapshotBytes int64
}

func isNotFound(err error) bool { return errors.Is(err, metadata.ErrNotFound) }

// addSync appends data and waits for the result.
func addSync(ctx context.Context, w WriteLedger, data []byte) error {
	ch := make(chan error, 1)
	w.AddAsync(data, func(_ int64, err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush persists the cursor's state now if it changed (durable cursors).
func (c *Cursor) Flush(ctx context.Context) error { return c.persist(ctx) }

// Properties returns the cursor's properties (nil: none). The map must
// not be modified.
func (c *Cursor) Properties() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.props
}

// SetProperties replaces the cursor's properties and, for a durable
// cursor, persists them (with the cursor's state) before returning.
func (c *Cursor) SetProperties(ctx context.Context, props map[string]string) error {
	c.mu.Lock()
	c.props = maps.Clone(props)
	c.needSnapshot, c.dirty = true, true
	c.mu.Unlock()
	return c.persist(ctx)
}

// persist writes what changed since the last persist: a delta entry to
// the cursor ledger, or, when there is no cursor ledger yet, after a reset,
// or once deltas outgrow the last snapshot, a snapshot into a fresh cursor
// ledger followed by a compare-and-set of the cursor node.
func (c *Cursor) persist(ctx context.Context) error {
	if !c.durable {
		return nil
	}
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	cfg := c.ml.cfg
	c.mu.Lock()
	if !c.dirty || c.closed {
		c.mu.Unlock()
		return nil
	}
	md := c.st.markDelete
	snapshot := c.needSnapshot || c.pl == nil ||
		c.pl.deltaBytes >= max(cfg.CursorSnapshotMinBytes, c.pl.snapshotBytes) ||
		c.pl.entries >= cfg.CursorMaxEntriesPerLedger
	var body, rec []byte
	var dropped int64
	if snapshot {
		body, dropped = appendSnapshot(nil, c.st, cfg.CursorMaxStateBytes)
	} else {
		d := delta{markDelete: md, ranges: toRanges(c.pendingAcks, md)}
		for p := range c.pendingBatch {
			if set := c.st.batch[p]; set != nil {
				d.batches = append(d.batches, batchUpdate{Pos: p, Set: set})
			}
		}
		rec = appendDeltaRecord(nil, &d)
	}
	c.pendingAcks = c.pendingAcks[:0]
	clear(c.pendingBatch)
	c.needSnapshot = false
	c.dirty = false
	c.lastPersist = c.ml.f.opts.Now()
	c.mu.Unlock()

	if dropped > 0 {
		c.ml.log.Error("cursor ack state exceeds CursorMaxStateBytes: acks beyond the cap are kept in memory only and will be redelivered after a restart",
			"cursor", c.name, "droppedEntries", dropped, "capBytes", cfg.CursorMaxStateBytes)
	}
	var err error
	if snapshot {
		err = c.writeSnapshot(ctx, body, md)
	} else {
		err = addSync(ctx, c.pl.w, rec)
		if err == nil {
			c.pl.entries++
			c.pl.deltaBytes += int64(len(rec))
		}
	}
	c.mu.Lock()
	if err != nil {
		c.needSnapshot = true
		c.dirty = true
	} else {
		// Persists are serialised, so md is the newest persisted one (a
		// Reset may have moved it back; that goes out as a snapshot).
		c.persistedMD = md
	}
	c.mu.Unlock()
	return err
}

// writeSnapshot writes body into a new cursor ledger, points the cursor
// node at it, and deletes the previous cursor ledger.
func (c *Cursor) writeSnapshot(ctx context.Context, body []byte, md Position) error {
	ml := c.ml
	w, err := ml.store.Create(ctx)
	if err != nil {
		return c.writeInline(ctx, body, md, err)
	}
	chunk := ml.cfg.CursorChunkSize
	n := 0
	for off := 0; off == 0 || off < len(body); off += chunk {
		end := min(off+chunk, len(body))
		rec := appendSnapshotChunk(nil, n, end == len(body), body[off:end])
		if err := addSync(ctx, w, rec); err != nil {
			_ = w.Close(ctx)
			_ = ml.store.Delete(ctx, w.ID())
			return c.writeInline(ctx, body, md, err)
		}
		n++
	}
	if err := c.putNode(ctx, &cursorNode{ledgerID: w.ID(), markDelete: md}); err != nil {
		_ = w.Close(ctx)
		_ = ml.store.Delete(ctx, w.ID())
		return err
	}
	old := c.pl
	c.pl = &cursorLedger{w: w, entries: int64(n), snapshotBytes: int64(len(body))}
	if old != nil {
		_ = old.w.Close(ctx)
		if err := ml.store.Delete(ctx, old.w.ID()); err != nil {
			ml.log.Warn("delete old cursor ledger", "cursor", c.name, "ledger", old.w.ID(), "err", err)
		}
	}
	if c.staleLedger >= 0 {
		if err := ml.store.Delete(ctx, c.staleLedger); err != nil {
			ml.log.Warn("delete recovered cursor ledger", "cursor", c.name, "ledger", c.staleLedger, "err", err)
		}
		c.staleLedger = -1
	}
	return nil
}

// writeInline stores the state in the cursor node itself when no cursor
// ledger can be written: the mark-delete always, the acks only if they fit
// CursorMaxInlineBytes.
func (c *Cursor) writeInline(ctx context.Context, body []byte, md Position, cause error) error {
	ml := c.ml
	if len(body) > ml.cfg.CursorMaxInlineBytes {
		ml.log.Error("cursor ledger unavailable and ack state too large for the metadata node: only mark-delete is persisted; individually acked entries will be redelivered after a restart",
			"cursor", c.name, "stateBytes", len(body), "err", cause)
		body = nil
	} else {
		ml.log.Error("cursor ledger unavailable: persisting ack state in the metadata node", "cursor", c.name, "err", cause)
	}
	if err := c.putNode(ctx, &cursorNode{ledgerID: -1, markDelete: md, inline: body}); err != nil {
		return err
	}
	if c.pl != nil {
		_ = c.pl.w.Close(ctx)
		_ = ml.store.Delete(ctx, c.pl.w.ID())
		c.pl = nil
	}
	// Try a cursor ledger again next time.
	c.mu.Lock()
	c.needSnapshot = true
	c.dirty = true
	c.mu.Unlock()
	return nil
}

// putNode writes the cursor node by compare-and-set. On ErrBadVersion it
// re-reads: if the node still names the ledger we last wrote, it retries
// with the new version; otherwise another owner wrote it (ErrFenced).
func (c *Cursor) putNode(ctx context.Context, n *cursorNode) error {
	c.mu.Lock()
	n.props = c.props
	c.mu.Unlock()
	data := appendCursorNode(nil, n)
	for attempt := 0; ; attempt++ {
		v, err := c.ml.meta.Put(ctx, c.path, data, c.nodeVersion)
		if err == nil {
			c.nodeVersion = v
			return nil
		}
		if !errors.Is(err, metadata.ErrBadVersion) || attempt >= 3 {
			if errors.Is(err, metadata.ErrBadVersion) {
				return fmt.Errorf("cursor %q: %w", c.name, ErrFenced)
			}
			return err
		}
		cur, ver, gerr := c.ml.meta.Get(ctx, c.path)
		if gerr != nil {
			return gerr
		}
		_, got, derr := decodeCursorNode(cur)
		want := int64(-1)
		if c.pl != nil {
			want = c.pl.w.ID()
		} else if c.staleLedger >= 0 {
			want = c.staleLedger
		}
		if derr != nil || got.ledgerID != want {
			return fmt.Errorf("cursor %q: %w", c.name, ErrFenced)
		}
		c.nodeVersion = ver
	}
}

// close flushes and closes the cursor (on managed-ledger close).
func (c *Cursor) close(ctx context.Context) error {
	err := c.persist(ctx)
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	c.mu.Lock()
	c.closed = true // later persists (a racing background tick) do nothing
	c.mu.Unlock()
	if c.pl != nil {
		_ = c.pl.w.Close(ctx)
	}
	return err
}

// recoverCursors loads every durable cursor below the info node.
func (ml *ManagedLedger) recoverCursors(ctx context.Context) error {
	names, err := ml.meta.Children(ctx, ml.path)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	for _, child := range names {
		name, err := url.PathUnescape(child)
		if err != nil {
			return fmt.Errorf("cursor node %q: %w", child, ErrCorrupt)
		}
		c, err := ml.recoverCursor(ctx, name)
		if err != nil {
			return fmt.Errorf("recover cursor %q: %w", name, err)
		}
		ml.mu.Lock()
		ml.cursors.put(c)
		ml.mu.Unlock()
	}
	return nil
}

func (ml *ManagedLedger) recoverCursor(ctx context.Context, name string) (*Cursor, error) {
	c := newCursor(ml, name, true, Position{})
	data, ver, err := ml.meta.Get(ctx, c.path)
	if err != nil {
		return nil, err
	}
	_, node, err := decodeCursorNode(data)
	if err != nil {
		return nil, err
	}
	c.nodeVersion = ver
	c.props = node.props
	st := newAckState(node.markDelete)
	switch {
	case node.ledgerID >= 0:
		c.staleLedger = node.ledgerID
		got, err := ml.readCursorLedger(ctx, node.ledgerID)
		if err != nil {
			ml.log.Error("cursor ledger unreadable: falling back to the mark-delete in the cursor node; later acks will be redelivered",
				"cursor", name, "ledger", node.ledgerID, "err", err)
		} else {
			st = got
		}
		// Start a fresh cursor ledger at the next persist.
		c.needSnapshot, c.dirty = true, true
	case len(node.inline) > 0:
		if _, got, err := decodeSnapshot(node.inline); err != nil {
			ml.log.Error("inline cursor state corrupt: using mark-delete only", "cursor", name, "err", err)
		} else {
			st = got
		}
	}
	ml.mu.RLock()
	st.advance(ml.ledgers)
	ml.mu.RUnlock()
	c.st = st
	c.persistedMD = st.markDelete
	c.readPos = Position{st.markDelete.LedgerID, st.markDelete.EntryID + 1}
	c.lastPersist = ml.f.opts.Now()
	return c, nil
}

// readCursorLedger rebuilds an ack state from a cursor ledger: a snapshot
// (chunk entries) followed by deltas.
func (ml *ManagedLedger) readCursorLedger(ctx context.Context, id int64) (*ackState, error) {
	rl, err := ml.store.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	defer rl.Close()
	lac := rl.LastAddConfirmed()
	var st *ackState
	var snap []byte
	next := 0
	for first := int64(0); first <= lac; first += 256 {
		es, err := rl.Read(ctx, first, min(first+255, lac))
		if err != nil {
			return nil, err
		}
		for i, e := range es {
			if len(e) < 2 || e[0] != formatVersion {
				return nil, corruptf("cursor ledger %d entry %d: bad header", id, first+int64(i))
			}
			switch e[1] {
			case recSnapshotChunk:
				rest, idx, err := readUvarint(e[2:])
				if err != nil || len(rest) < 1 || st != nil || int(idx) != next {
					return nil, corruptf("cursor ledger %d entry %d: bad snapshot chunk", id, first+int64(i))
				}
				next++
				snap = append(snap, rest[1:]...)
				if rest[0] == 1 {
					rest, s, err := decodeSnapshot(snap)
					if err != nil || len(rest) != 0 {
						return nil, corruptf("cursor ledger %d: snapshot: %v", id, err)
					}
					st, snap = s, nil
				}
			case recDelta:
				if st == nil {
					return nil, corruptf("cursor ledger %d entry %d: delta before snapshot", id, first+int64(i))
				}
				rest, d, err := decodeDelta(e[2:])
				if err != nil || len(rest) != 0 {
					return nil, corruptf("cursor ledger %d entry %d: delta: %v", id, first+int64(i), err)
				}
				applyDelta(st, d)
			default:
				return nil, corruptf("cursor ledger %d entry %d: kind %d", id, first+int64(i), e[1])
			}
		}
	}
	if st == nil {
		return nil, corruptf("cursor ledger %d: no complete snapshot", id)
	}
	return st, nil
}
