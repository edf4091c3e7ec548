package embedded

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/magnetar-mq/magnetar/metadata"
)

type opKind uint8

const (
	opPut opKind = iota + 1
	opPutEphemeral
	opDelete
	opSequential
	opDropSession
)

// op is one write queued for the writer goroutine. The caller fills the
// inputs; apply fills the results; done is closed when they are final.
type op struct {
	kind     opKind
	path     string // for opSequential: the parent
	prefix   string // opSequential: child name prefix
	value    []byte
	expected metadata.Version
	session  uint64

	version metadata.Version // result of opPut
	created string           // result of opSequential
	err     error            // the op's own outcome (ErrExists, ...)

	done chan struct{}
}

// apply runs o inside tx. Checks come before any mutation, so an op that
// fails with its own error (o.err) leaves tx untouched and its neighbours in
// the batch proceed. A non-nil return is a transaction-level failure.
func (o *op) apply(tx *bolt.Tx) ([]metadata.Event, error) {
	o.err, o.version, o.created = nil, 0, ""
	a := applier{nodes: tx.Bucket(bucketNodes), eph: tx.Bucket(bucketEphemeral)}
	var err error
	switch o.kind {
	case opPut:
		err = a.put(o)
	case opPutEphemeral:
		err = a.putEphemeral(o)
	case opDelete:
		err = a.delete(o)
	case opSequential:
		err = a.sequential(o)
	case opDropSession:
		var ev []metadata.Event
		ev, err = dropEphemerals(tx, func(owner uint64) bool { return owner == o.session })
		a.events = ev
	default:
		panic(fmt.Sprintf("BUG: embedded: op kind %d", o.kind))
	}
	return a.events, err
}

// applier holds the buckets of one transaction and the events of one op.
type applier struct {
	nodes, eph *bolt.Bucket
	events     []metadata.Event
}

func (a *applier) get(p string) (record, bool, error) {
	v := a.nodes.Get(nodeKey(p))
	if v == nil {
		return record{}, false, nil
	}
	r, err := decodeRecord(v)
	if err != nil {
		return record{}, false, fmt.Errorf("%s: %w", p, err)
	}
	return r, true, nil
}

func (a *applier) write(p string, r *record) error {
	// bbolt keeps key and value until commit: a fresh buffer per write.
	return a.nodes.Put(nodeKey(p), appendRecord(make([]byte, 0, recordHeaderLen+len(r.value)), r))
}

func (a *applier) emit(p string, t metadata.EventType) {
	a.events = append(a.events, metadata.Event{Path: p, Type: t})
}

// checkParents reports whether p's ancestors can all be created or exist as
// persistent nodes (o.err = ErrEphemeralParent otherwise).
func (a *applier) checkParents(o *op, p string) (bool, error) {
	if p == "/" {
		return true, nil
	}
	for _, anc := range append(metadata.Ancestors(p), metadata.Parent(p)) {
		if anc == "/" {
			continue
		}
		r, ok, err := a.get(anc)
		if err != nil {
			return false, err
		}
		if !ok {
			return true, nil // everything below is missing and persistent
		}
		if r.ephemeral() {
			o.err = fmt.Errorf("%w: %s", metadata.ErrEphemeralParent, anc)
			return false, nil
		}
	}
	return true, nil
}

// makeParents creates p's missing ancestors (checkParents passed).
func (a *applier) makeParents(p string) error {
	for _, anc := range append(metadata.Ancestors(p), metadata.Parent(p)) {
		if anc == "/" {
			continue
		}
		_, ok, err := a.get(anc)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if err := a.write(anc, &record{}); err != nil {
			return err
		}
		a.emit(anc, metadata.EventCreated)
		a.emit(metadata.Parent(anc), metadata.EventChildren)
	}
	return nil
}

// create writes a new node at p and its parents.
func (a *applier) create(p string, r *record) error {
	if err := a.makeParents(p); err != nil {
		return err
	}
	if err := a.write(p, r); err != nil {
		return err
	}
	if r.ephemeral() {
		var owner [8]byte
		binary.BigEndian.PutUint64(owner[:], r.owner)
		if err := a.eph.Put(nodeKey(p), owner[:]); err != nil {
			return err
		}
	}
	a.emit(p, metadata.EventCreated)
	a.emit(metadata.Parent(p), metadata.EventChildren)
	return nil
}

func (a *applier) put(o *op) error {
	cur, exists, err := a.get(o.path)
	if err != nil {
		return err
	}
	switch {
	case o.expected == metadata.NotExists && exists:
		o.err = fmt.Errorf("%w: %s", metadata.ErrExists, o.path)
		return nil
	case o.expected >= 0 && !exists:
		o.err = fmt.Errorf("%w: %s", metadata.ErrNotFound, o.path)
		return nil
	case o.expected >= 0 && cur.version != o.expected:
		o.err = fmt.Errorf("%w: %s is at %d, not %d", metadata.ErrBadVersion, o.path, cur.version, o.expected)
		return nil
	}
	if exists {
		cur.version++
		cur.value = o.value
		o.version = cur.version
		if err := a.write(o.path, &cur); err != nil {
			return err
		}
		a.emit(o.path, metadata.EventChanged)
		return nil
	}
	if ok, err := a.checkParents(o, o.path); !ok || err != nil {
		return err
	}
	return a.create(o.path, &record{value: o.value})
}

func (a *applier) putEphemeral(o *op) error {
	cur, exists, err := a.get(o.path)
	if err != nil {
		return err
	}
	if exists {
		if !cur.ephemeral() || cur.owner != o.session {
			o.err = fmt.Errorf("%w: %s (not an ephemeral node of this session)", metadata.ErrExists, o.path)
			return nil
		}
		cur.version++
		cur.value = o.value
		if err := a.write(o.path, &cur); err != nil {
			return err
		}
		a.emit(o.path, metadata.EventChanged)
		return nil
	}
	if ok, err := a.checkParents(o, o.path); !ok || err != nil {
		return err
	}
	return a.create(o.path, &record{flags: flagEphemeral, owner: o.session, value: o.value})
}

func (a *applier) delete(o *op) error {
	cur, exists, err := a.get(o.path)
	if err != nil {
		return err
	}
	switch {
	case !exists:
		o.err = fmt.Errorf("%w: %s", metadata.ErrNotFound, o.path)
		return nil
	case o.expected >= 0 && cur.version != o.expected:
		o.err = fmt.Errorf("%w: %s is at %d, not %d", metadata.ErrBadVersion, o.path, cur.version, o.expected)
		return nil
	}
	if k, _ := a.nodes.Cursor().Seek(childPrefix(o.path)); k != nil && bytes.HasPrefix(k, childPrefix(o.path)) {
		o.err = fmt.Errorf("%w: %s", metadata.ErrNotEmpty, o.path)
		return nil
	}
	key := nodeKey(o.path)
	if err := a.nodes.Delete(key); err != nil {
		return err
	}
	if cur.ephemeral() {
		if err := a.eph.Delete(key); err != nil {
			return err
		}
	}
	a.emit(o.path, metadata.EventDeleted)
	a.emit(metadata.Parent(o.path), metadata.EventChildren)
	return nil
}

func (a *applier) sequential(o *op) error {
	parent, exists, err := a.get(o.path)
	if err != nil {
		return err
	}
	if exists && parent.ephemeral() {
		o.err = fmt.Errorf("%w: %s", metadata.ErrEphemeralParent, o.path)
		return nil
	}
	if !exists {
		if ok, err := a.checkParents(o, o.path); !ok || err != nil {
			return err
		}
		parent = record{}
		if err := a.create(o.path, &parent); err != nil {
			return err
		}
	}
	// Skip numbers whose name a plain Put already took.
	for {
		name := metadata.SequentialName(o.prefix, parent.nextSeq)
		parent.nextSeq++
		child := metadata.Join(o.path, name)
		if a.nodes.Get(nodeKey(child)) != nil {
			continue
		}
		if err := a.write(o.path, &parent); err != nil {
			return err
		}
		if err := a.create(child, &record{value: o.value}); err != nil {
			return err
		}
		o.created = child
		return nil
	}
}
