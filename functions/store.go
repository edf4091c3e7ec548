package functions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Metadata layout (all JSON unless noted):
//
//	/functions/meta/{kind}/{tenant}/{ns}/{name}     Record
//	/functions/packages/{sha256}                    packageMeta
//	/functions/packages/{sha256}/{n}                raw chunk n (0-based, ≤ chunkSize bytes)
//	/functions/state/{tenant}/{ns}/{name}/{hexkey}  State
//	/functions/workers/{workerID}                   WorkerInfo (ephemeral)
//	/functions/assignments/{kind}/{t}/{ns}/{name}/{i}  workerID (written by the owner)
const (
	rootMeta        = "/functions/meta"
	rootPackages    = "/functions/packages"
	rootState       = "/functions/state"
	rootWorkers     = "/functions/workers"
	rootAssignments = "/functions/assignments"
	chunkSize       = 512 << 10
)

// Record is one deployed function, source or sink as stored.
type Record struct {
	Kind Kind `json:"kind"`
	// Config is the configuration as the user gave it (FunctionConfig,
	// SourceConfig or SinkConfig), returned by GET.
	Config json.RawMessage `json:"config"`
	Spec   *Spec           `json:"spec"`
	// Package is "builtin://NAME" or "sha256:HEX" of an uploaded package.
	Package string `json:"package"`
	// Version increases on every update; instances restart when it moves.
	Version int64 `json:"version"`
	// Stopped lists stopped instance ids (all stopped: every id).
	Stopped map[int]bool `json:"stopped,omitempty"`
	// Restarts counts restart requests per instance; an instance whose
	// count moved is restarted by its owner.
	Restarts map[int]int64 `json:"restarts,omitempty"`
	// Auth is the credentials its instances present (the submitter's
	// token, instanceauth.go); nil: none. Never returned by the API.
	Auth *AuthSpec `json:"auth,omitempty"`
}

func metaPath(k Kind, t, ns, name string) string {
	return rootMeta + "/" + string(k) + "/" + t + "/" + ns + "/" + name
}

// ErrNotFound: no such function, source, sink or state key (HTTP 404).
var ErrNotFound = errors.New("not found")

// ErrExists: create of a name already deployed (HTTP 400 in Pulsar).
var ErrExists = errors.New("already exists")

type store struct{ md metadata.Store }

func (s store) get(ctx context.Context, k Kind, t, ns, name string) (*Record, metadata.Version, error) {
	b, v, err := s.md.Get(ctx, metaPath(k, t, ns, name))
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: %s %s/%s/%s doesn't exist", ErrNotFound, kindNoun(k), t, ns, name)
	}
	if err != nil {
		return nil, 0, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, 0, fmt.Errorf("record %s/%s/%s: %w", t, ns, name, err)
	}
	return &r, v, nil
}

func (s store) put(ctx context.Context, r *Record, expected metadata.Version) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = s.md.Put(ctx, metaPath(r.Kind, r.Spec.Tenant, r.Spec.Namespace, r.Spec.Name), b, expected)
	if errors.Is(err, metadata.ErrExists) {
		return fmt.Errorf("%w: %s %s already exists", ErrExists, kindNoun(r.Kind), r.Spec.FQFN())
	}
	return err
}

// update applies fn to the stored record with compare-and-set, retrying
// on races.
func (s store) update(ctx context.Context, k Kind, t, ns, name string, fn func(*Record) error) (*Record, error) {
	for {
		r, v, err := s.get(ctx, k, t, ns, name)
		if err != nil {
			return nil, err
		}
		if err := fn(r); err != nil {
			return nil, err
		}
		err = s.put(ctx, r, v)
		if errors.Is(err, metadata.ErrBadVersion) {
			continue
		}
		return r, err
	}
}

func (s store) delete(ctx context.Context, k Kind, t, ns, name string) error {
	err := s.md.Delete(ctx, metaPath(k, t, ns, name), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return fmt.Errorf("%w: %s %s/%s/%s doesn't exist", ErrNotFound, kindNoun(k), t, ns, name)
	}
	return err
}

// list returns the names deployed in tenant/ns.
func (s store) list(ctx context.Context, k Kind, t, ns string) ([]string, error) {
	names, err := s.md.Children(ctx, rootMeta+"/"+string(k)+"/"+t+"/"+ns)
	if errors.Is(err, metadata.ErrNotFound) {
		return []string{}, nil
	}
	return names, err
}

// all returns every record of every kind.
func (s store) all(ctx context.Context) ([]*Record, error) {
	var out []*Record
	for _, k := range []Kind{KindFunction, KindSource, KindSink} {
		base := rootMeta + "/" + string(k)
		tenants, err := s.children(ctx, base)
		if err != nil {
			return nil, err
		}
		for _, t := range tenants {
			nss, err := s.children(ctx, base+"/"+t)
			if err != nil {
				return nil, err
			}
			for _, ns := range nss {
				names, err := s.children(ctx, base+"/"+t+"/"+ns)
				if err != nil {
					return nil, err
				}
				for _, n := range names {
					r, _, err := s.get(ctx, k, t, ns, n)
					if errors.Is(err, ErrNotFound) {
						continue
					}
					if err != nil {
						return nil, err
					}
					out = append(out, r)
				}
			}
		}
	}
	return out, nil
}

func (s store) children(ctx context.Context, p string) ([]string, error) {
	c, err := s.md.Children(ctx, p)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, nil
	}
	return c, err
}

type packageMeta struct {
	Size   int64 `json:"size"`
	Chunks int   `json:"chunks"`
}

// putPackage stores data in chunks (content-addressed) and returns its id.
// Chunks are written before the meta node, so a meta node means a
// complete package.
func (s store) putPackage(ctx context.Context, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	p := rootPackages + "/" + h
	if ok, err := s.md.Exists(ctx, p); err != nil {
		return "", err
	} else if ok {
		if b, _, err := s.md.Get(ctx, p); err == nil && len(b) > 0 {
			return "sha256:" + h, nil
		}
	}
	n := 0
	for off := 0; off < len(data) || n == 0; off += chunkSize {
		end := min(off+chunkSize, len(data))
		if _, err := s.md.Put(ctx, p+"/"+strconv.Itoa(n), data[off:end], metadata.AnyVersion); err != nil {
			return "", fmt.Errorf("store package chunk %d: %w", n, err)
		}
		n++
	}
	mb, _ := json.Marshal(packageMeta{Size: int64(len(data)), Chunks: n})
	if _, err := s.md.Put(ctx, p, mb, metadata.AnyVersion); err != nil {
		return "", err
	}
	return "sha256:" + h, nil
}

// getPackage reads a stored package and checks its digest.
func (s store) getPackage(ctx context.Context, id string) ([]byte, error) {
	h, ok := bytes.CutPrefix([]byte(id), []byte("sha256:"))
	if !ok {
		return nil, fmt.Errorf("package %q is not a stored package", id)
	}
	p := rootPackages + "/" + string(h)
	mb, _, err := s.md.Get(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("package %s: %w", id, err)
	}
	var pm packageMeta
	if err := json.Unmarshal(mb, &pm); err != nil {
		return nil, fmt.Errorf("package %s meta: %w", id, err)
	}
	data := make([]byte, 0, pm.Size)
	for i := 0; i < pm.Chunks; i++ {
		c, _, err := s.md.Get(ctx, p+"/"+strconv.Itoa(i))
		if err != nil {
			return nil, fmt.Errorf("package %s chunk %d: %w", id, i, err)
		}
		data = append(data, c...)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != string(h) {
		return nil, fmt.Errorf("package %s: digest mismatch (corrupt store?)", id)
	}
	return data, nil
}

// deletePackage removes a package no record refers to any more.
func (s store) deletePackage(ctx context.Context, id string) {
	h, ok := bytes.CutPrefix([]byte(id), []byte("sha256:"))
	if !ok {
		return
	}
	p := rootPackages + "/" + string(h)
	kids, _ := s.md.Children(ctx, p)
	for _, c := range kids {
		_ = s.md.Delete(ctx, p+"/"+c, metadata.AnyVersion)
	}
	_ = s.md.Delete(ctx, p, metadata.AnyVersion)
}

func kindNoun(k Kind) string {
	switch k {
	case KindSource:
		return "Source"
	case KindSink:
		return "Sink"
	}
	return "Function"
}
