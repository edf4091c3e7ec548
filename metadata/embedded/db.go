package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/magnetar-mq/magnetar/metadata"
)

// registry maps absolute file paths to the database shared by every handle
// of this process that opened it.
var registry struct {
	mu  sync.Mutex
	dbs map[string]*sharedDB
}

// sharedDB is one open bbolt file, its writer goroutine and its watch hub.
type sharedDB struct {
	path   string
	bolt   *bolt.DB
	log    *slog.Logger
	max    int
	refs   int // protected by registry.mu
	nextID atomic.Uint64

	ops  chan *op      // to the writer; unbuffered so senders form the next batch
	quit chan struct{} // closed when the last handle closes
	done chan struct{} // closed when writeLoop has returned

	hub hub
}

// acquire returns the shared database for path, opening it (and deleting the
// ephemeral nodes a previous process left behind) if this is the first
// handle.
func acquire(path string, opts *Options) (*sharedDB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if d := registry.dbs[abs]; d != nil {
		d.refs++
		return d, nil
	}
	bdb, err := bolt.Open(abs, 0o600, &bolt.Options{Timeout: opts.LockTimeout, NoFreelistSync: true, FreelistType: bolt.FreelistMapType, MmapFlags: mmapFlags})
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", abs, err)
	}
	d := &sharedDB{
		path: abs, bolt: bdb, log: opts.Logger, max: opts.MaxBatch, refs: 1,
		ops: make(chan *op), quit: make(chan struct{}), done: make(chan struct{}),
	}
	d.hub.watches = make(map[string]map[*watch]struct{})
	var events []metadata.Event
	err = bdb.Update(func(tx *bolt.Tx) error {
		var err error
		events, err = initTx(tx)
		return err
	})
	if err != nil {
		bdb.Close()
		return nil, fmt.Errorf("embedded: init %s: %w", abs, err)
	}
	if len(events) > 0 {
		opts.Logger.Info("embedded: removed ephemeral nodes of a previous process", "count", len(events)/2)
	}
	go d.writeLoop()
	if registry.dbs == nil {
		registry.dbs = make(map[string]*sharedDB)
	}
	registry.dbs[abs] = d
	return d, nil
}

// release drops one reference; the last one stops the writer and closes the
// file.
func (d *sharedDB) release() error {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	d.refs--
	if d.refs > 0 {
		return nil
	}
	delete(registry.dbs, d.path)
	close(d.quit)
	<-d.done
	if err := d.bolt.Close(); err != nil {
		return fmt.Errorf("embedded: close %s: %w", d.path, err)
	}
	return nil
}

// initTx creates the buckets and the root on a new file, checks the format
// of an existing one and deletes every ephemeral node: no session of a
// previous process is alive.
func initTx(tx *bolt.Tx) ([]metadata.Event, error) {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return nil, err
	}
	if f := meta.Get(keyFormat); f == nil {
		if err := meta.Put(keyFormat, []byte{formatVersion}); err != nil {
			return nil, err
		}
	} else if !bytes.Equal(f, []byte{formatVersion}) {
		return nil, fmt.Errorf("%w: unknown format %x", ErrCorrupt, f)
	}
	nodes, err := tx.CreateBucketIfNotExists(bucketNodes)
	if err != nil {
		return nil, err
	}
	if nodes.Get([]byte("/")) == nil {
		if err := nodes.Put([]byte("/"), appendRecord(nil, &record{})); err != nil {
			return nil, err
		}
	}
	if _, err := tx.CreateBucketIfNotExists(bucketEphemeral); err != nil {
		return nil, err
	}
	return dropEphemerals(tx, func(uint64) bool { return true })
}

// dropEphemerals deletes the ephemeral nodes whose owner matches.
func dropEphemerals(tx *bolt.Tx, match func(owner uint64) bool) ([]metadata.Event, error) {
	eph, nodes := tx.Bucket(bucketEphemeral), tx.Bucket(bucketNodes)
	var keys [][]byte
	c := eph.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) == 8 && match(binary.BigEndian.Uint64(v)) {
			keys = append(keys, bytes.Clone(k))
		}
	}
	var events []metadata.Event
	for _, k := range keys {
		if err := eph.Delete(k); err != nil {
			return nil, err
		}
		if err := nodes.Delete(k); err != nil {
			return nil, err
		}
		p := keyPath(k)
		events = append(events,
			metadata.Event{Path: p, Type: metadata.EventDeleted},
			metadata.Event{Path: metadata.Parent(p), Type: metadata.EventChildren})
	}
	return events, nil
}

// submit hands o to the writer and waits for its result. ctx can cancel
// the wait for the writer, not the op once the writer has it.
func (d *sharedDB) submit(ctx context.Context, o *op) error {
	o.done = make(chan struct{})
	select {
	case d.ops <- o:
	case <-d.quit:
		return metadata.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	<-o.done
	return o.err
}

// writeLoop is the single writer: it takes one op, then every op whose
// sender is already waiting (up to max), applies them in order in one
// transaction, commits (fsync), publishes their events in order and wakes
// the senders. Owned by sharedDB; exits when quit is closed.
func (d *sharedDB) writeLoop() {
	defer close(d.done)
	batch := make([]*op, 0, d.max)
	for {
		select {
		case o := <-d.ops:
			batch = append(batch[:0], o)
		case <-d.quit:
			return
		}
	fill:
		for len(batch) < d.max {
			select {
			case o := <-d.ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		d.commit(batch)
	}
}

// commit applies batch in one transaction. If the transaction itself fails
// (an I/O error, not an op's own ErrExists etc.), each op is retried alone
// so one bad op cannot fail its neighbours.
func (d *sharedDB) commit(batch []*op) {
	var events []metadata.Event
	err := d.bolt.Update(func(tx *bolt.Tx) error {
		events = events[:0]
		for _, o := range batch {
			ev, err := o.apply(tx)
			if err != nil {
				return err
			}
			events = append(events, ev...)
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		for _, o := range batch {
			d.commit([]*op{o})
		}
		return
	}
	if err != nil {
		batch[0].err = fmt.Errorf("embedded: commit: %w", err)
		d.log.Warn("embedded: commit failed", "err", err)
	} else {
		d.hub.publish(events)
	}
	for _, o := range batch {
		close(o.done)
	}
}
