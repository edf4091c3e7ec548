package schemareg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/schema"
)

// Path is the root of the registry's nodes in the broker's metadata
// store: one node per topic, Path/<tenant>/<ns>/<domain>/<topic> (the
// local name escaped as broker.EscapeName does).
const Path = "/schemas"

// entry is one schema version of a topic; versions are indexes into the
// topic's list. A Deleted entry is a deletion marker: the versions before
// it are history (kept so that a number never names two schemas), the
// live versions are those after the last marker.
type entry struct {
	Type       int32             `json:"type"`
	Data       []byte            `json:"data"`
	Properties map[string]string `json:"properties,omitempty"`
	Timestamp  int64             `json:"timestamp"`
	Deleted    bool              `json:"deleted,omitempty"`
}

func (e *entry) info() schema.Info {
	return schema.Info{Type: e.Type, Data: e.Data, Properties: e.Properties}
}

func (e *entry) version(n int) schema.Version {
	return schema.Version{Number: int64(n), Info: e.info(), Timestamp: e.Timestamp}
}

// record is a topic's schema node (JSON): its versions and the topic's
// compatibility strategy override. Nodes written before the record
// existed hold a bare JSON list of versions.
type record struct {
	Versions      []entry `json:"versions"`
	Compatibility string  `json:"compatibility,omitempty"`
}

// live returns the index of the first live version.
func (r *record) live() int {
	for i := len(r.Versions) - 1; i >= 0; i-- {
		if r.Versions[i].Deleted {
			return i + 1
		}
	}
	return 0
}

func (r *record) liveInfos() []schema.Info {
	var out []schema.Info
	for _, e := range r.Versions[r.live():] {
		out = append(out, e.info())
	}
	return out
}

// find returns the live version equal to s, or -1.
func (r *record) find(s schema.Info) int {
	for i := r.live(); i < len(r.Versions); i++ {
		if r.Versions[i].info().Equal(s) {
			return i
		}
	}
	return -1
}

// findDefinition returns the oldest live version with s's type and
// definition (properties aside), or -1: Pulsar's version lookup, which
// compares the hash of type and data.
func (r *record) findDefinition(s schema.Info) int {
	for i := r.live(); i < len(r.Versions); i++ {
		if e := r.Versions[i]; e.Type == s.Type && bytes.Equal(e.Data, s.Data) {
			return i
		}
	}
	return -1
}

// get returns version v (the latest with v < 0), or false for an absent
// version and, as in Pulsar, for every version a deletion marker
// follows: a consumer reading a message written under a deleted schema
// gets an error, not the old schema.
func (r *record) get(v int64) (entry, int, bool) {
	if len(r.Versions) == 0 {
		return entry{}, 0, false
	}
	if v < 0 {
		v = int64(len(r.Versions) - 1)
	}
	if v >= int64(len(r.Versions)) || v < int64(r.live()) || r.Versions[v].Deleted {
		return entry{}, 0, false
	}
	return r.Versions[v], int(v), true
}

// add appends s as a new version and returns its number.
func (r *record) add(s schema.Info) int {
	r.Versions = append(r.Versions, entry{Type: s.Type, Data: s.Data, Properties: s.Properties, Timestamp: time.Now().UnixMilli()})
	return len(r.Versions) - 1
}

// markDeleted appends a deletion marker and returns its number, or -1
// (and changes nothing) when there is no live version.
func (r *record) markDeleted() int {
	if len(r.Versions) == 0 || r.Versions[len(r.Versions)-1].Deleted {
		return -1
	}
	r.Versions = append(r.Versions, entry{Deleted: true, Timestamp: time.Now().UnixMilli()})
	return len(r.Versions) - 1
}

func decodeRecord(b []byte) (*record, error) {
	rec := &record{}
	var err error
	if len(b) > 0 && b[0] == '[' {
		err = json.Unmarshal(b, &rec.Versions)
	} else {
		err = json.Unmarshal(b, rec)
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// key returns the node of tn, which must be a schema topic (never a
// partition: partitions share their parent's schema).
func key(tn pulsarproto.TopicName) string {
	return Path + "/" + tn.Tenant + "/" + tn.Namespace + "/" + tn.Domain + "/" + broker.EscapeName(tn.Local)
}

// load reads tn's record (empty if it has none).
func (r *Registry) load(ctx context.Context, tn pulsarproto.TopicName) (*record, metadata.Version, error) {
	b, v, err := r.store.Get(ctx, key(tn))
	if errors.Is(err, metadata.ErrNotFound) {
		return &record{}, metadata.NotExists, nil
	}
	if err != nil {
		return nil, 0, err
	}
	rec, err := decodeRecord(b)
	if err != nil {
		return nil, 0, fmt.Errorf("schemareg: the schema node of %s: %w", tn, err)
	}
	return rec, v, nil
}

// errNoWrite, returned by an update's function, stores nothing.
var errNoWrite = errors.New("schemareg: no write")

// update applies f to tn's record and stores it with compare-and-set,
// again on a lost race until ctx ends (a lost race means another broker
// stored its change: the registry as a whole always progresses). f
// returning errNoWrite stores nothing.
func (r *Registry) update(ctx context.Context, tn pulsarproto.TopicName, f func(*record) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		rec, ver, err := r.load(ctx, tn)
		if err != nil {
			return err
		}
		if err := f(rec); err != nil {
			if errors.Is(err, errNoWrite) {
				return nil
			}
			return err
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = r.store.Put(ctx, key(tn), b, ver)
		if (errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrExists)) && ctx.Err() == nil {
			continue
		}
		return err
	}
}

// remove deletes tn's node (the topic was deleted).
func (r *Registry) remove(ctx context.Context, tn pulsarproto.TopicName) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.store.Delete(ctx, key(tn), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	return err
}
