package packages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Root is the metadata store node under which package records live:
// Root/{type}/{tenant}/{namespace}/{name}/{version}.
const Root = "/packages"

// EntrySize is the most bytes of a package one ledger entry holds.
const EntrySize = 1 << 20

// readBatch is how many entries a download reads from the bookies at a
// time.
const readBatch = 4

// recordFormat is the version of the record's JSON.
const recordFormat = 1

// ledgerPassword is the password of package ledgers (bookies check its
// digest on every read and write).
var ledgerPassword = []byte("magnetar-packages")

// ErrNotFound: no such package version (HTTP 404).
var ErrNotFound = errors.New("package not found")

// ErrExists: an upload of a version that exists (HTTP 404, as Pulsar
// answers it: its "already exists" is a NotFoundException).
var ErrExists = errors.New("package exists")

// Metadata is Pulsar's PackageMetadata, as the REST API carries it.
type Metadata struct {
	Description      string            `json:"description,omitempty"`
	Contact          string            `json:"contact,omitempty"`
	CreateTime       int64             `json:"createTime"`
	ModificationTime int64             `json:"modificationTime"`
	Properties       map[string]string `json:"properties,omitempty"`
}

// record is the JSON of a package version's metadata node.
type record struct {
	Format   int      `json:"format"`
	Metadata Metadata `json:"metadata"`
	// Ledger holds the contents, EntrySize bytes an entry (the last one
	// shorter; an empty package has no entry). It is CLOSED before the
	// record is written.
	Ledger  int64  `json:"ledger"`
	Size    int64  `json:"size"`
	Entries int64  `json:"entries"`
	SHA256  string `json:"sha256"`
}

// Options configure a Store.
type Options struct {
	Metadata metadata.Store
	Ledgers  *ledger.Client
	// Replicas is Pulsar's packagesReplicas: the ensemble, write and ack
	// quorum of package ledgers (0: 1).
	Replicas int
	// Security authorizes Fetch (the function worker's function://
	// URLs) as the routes are: the caller's role (from the context)
	// needs AccessPackages on the package's namespace. Nil: no checks.
	Security *auth.Security
	Logger   *slog.Logger
}

// Store keeps packages: metadata in the metadata store, contents in
// ledgers on the bookies. Safe for concurrent use.
type Store struct {
	md   metadata.Store
	lc   *ledger.Client
	reps int
	sec  *auth.Security
	log  *slog.Logger
}

// New returns a store over o's metadata store and ledger client.
func New(o Options) (*Store, error) {
	if o.Metadata == nil || o.Ledgers == nil {
		return nil, errors.New("packages: a metadata store and a ledger client are needed")
	}
	if o.Replicas < 0 || o.Replicas > 64 {
		return nil, fmt.Errorf("packages: packagesReplicas %d: want 1..64", o.Replicas)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{md: o.Metadata, lc: o.Ledgers, reps: max(o.Replicas, 1), sec: o.Security, log: log}, nil
}

func recordPath(n Name) string {
	return namePath(n) + "/" + n.Version
}

func namePath(n Name) string {
	return Root + "/" + string(n.Type) + "/" + n.Tenant + "/" + n.Namespace + "/" + n.Name
}

func (s *Store) get(ctx context.Context, n Name) (*record, metadata.Version, error) {
	b, v, err := s.md.Get(ctx, recordPath(n))
	if errors.Is(err, metadata.ErrNotFound) || err == nil && len(b) == 0 {
		return nil, 0, fmt.Errorf("%w: Package '%s' metadata does not exist", ErrNotFound, n)
	}
	if err != nil {
		return nil, 0, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, 0, fmt.Errorf("package %s: record: %w", n, err)
	}
	return &r, v, nil
}

// Upload stores the package read from data with its metadata m. A
// version that exists is refused (ErrExists); versions are immutable.
func (s *Store) Upload(ctx context.Context, n Name, m Metadata, data io.Reader) error {
	pu, err := s.WriteContents(ctx, n, data)
	if err != nil {
		return err
	}
	return pu.Commit(ctx, m)
}

// Pending is a package version whose contents are in a closed ledger
// and whose record is not written yet: Commit writes it, Abort deletes
// the ledger.
type Pending struct {
	s       *Store
	n       Name
	rec     record
	settled bool
}

// WriteContents stores data in a new ledger for version n (refused with
// ErrExists if n exists). On error nothing is left behind.
func (s *Store) WriteContents(ctx context.Context, n Name, data io.Reader) (*Pending, error) {
	if _, _, err := s.get(ctx, n); err == nil {
		return nil, fmt.Errorf("%w: Package '%s' metadata already exists", ErrExists, n)
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	h, err := s.lc.Create(ctx, ledger.CreateOptions{Ensemble: s.reps, WriteQuorum: s.reps, AckQuorum: s.reps,
		Password: ledgerPassword, Custom: map[string][]byte{"application": []byte("magnetar-packages"), "package": []byte(n.String())}})
	if err != nil {
		return nil, fmt.Errorf("package %s: create ledger: %w", n, err)
	}
	pu := &Pending{s: s, n: n, rec: record{Format: recordFormat, Ledger: h.ID()}}
	ok := false
	defer func() {
		if !ok {
			pu.Abort(ctx)
		}
	}()
	sum := sha256.New()
	buf := make([]byte, EntrySize)
	for {
		k, rerr := io.ReadFull(data, buf)
		if k > 0 {
			if _, err := h.Add(ctx, buf[:k]); err != nil {
				return nil, fmt.Errorf("package %s: write entry %d: %w", n, pu.rec.Entries, err)
			}
			sum.Write(buf[:k])
			pu.rec.Size += int64(k)
			pu.rec.Entries++
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return nil, rerr
		}
	}
	if err := h.Close(ctx); err != nil {
		return nil, fmt.Errorf("package %s: close ledger: %w", n, err)
	}
	pu.rec.SHA256 = hex.EncodeToString(sum.Sum(nil))
	ok = true
	return pu, nil
}

// Commit writes the record with metadata m (created and modified now).
// A version created meanwhile wins: ErrExists, and the ledger goes.
func (pu *Pending) Commit(ctx context.Context, m Metadata) error {
	if pu.settled {
		return errors.New("packages: pending upload already settled")
	}
	now := time.Now().UnixMilli()
	m.CreateTime, m.ModificationTime = now, now
	pu.rec.Metadata = m
	b, err := json.Marshal(pu.rec)
	if err == nil {
		_, err = pu.s.md.Put(ctx, recordPath(pu.n), b, metadata.NotExists)
	}
	if err != nil {
		pu.Abort(ctx)
		if errors.Is(err, metadata.ErrExists) {
			return fmt.Errorf("%w: Package '%s' already exists", ErrExists, pu.n)
		}
		return err
	}
	pu.settled = true
	return nil
}

// Abort deletes the ledger of an upload that will not be committed.
func (pu *Pending) Abort(ctx context.Context) {
	if pu.settled {
		return
	}
	pu.settled = true
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := pu.s.lc.Delete(dctx, pu.rec.Ledger); err != nil {
		pu.s.log.Warn("packages: deleting the ledger of an upload not committed", "package", pu.n.String(), "ledger", pu.rec.Ledger, "err", err)
	}
}

// Download writes the package's contents to w. The contents are checked
// against the size and SHA-256 recorded at upload; a mismatch is an error
// after the bytes were written.
func (s *Store) Download(ctx context.Context, n Name, w io.Writer) error {
	r, _, err := s.get(ctx, n)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%w: Package '%s' does not exist", ErrNotFound, n)
		}
		return err
	}
	sum := sha256.New()
	var size int64
	if r.Entries > 0 {
		rh, err := s.lc.OpenNoRecovery(ctx, r.Ledger)
		if errors.Is(err, ledger.ErrNoSuchLedger) {
			return fmt.Errorf("%w: Package '%s' does not exist", ErrNotFound, n)
		}
		if err != nil {
			return fmt.Errorf("package %s: open ledger %d: %w", n, r.Ledger, err)
		}
		defer rh.Close()
		if rh.LastAddConfirmed() != r.Entries-1 {
			return fmt.Errorf("package %s: ledger %d ends at entry %d, the record says %d entries", n, r.Ledger, rh.LastAddConfirmed(), r.Entries)
		}
		for first := int64(0); first < r.Entries; first += readBatch {
			last := min(first+readBatch, r.Entries) - 1
			ents, err := rh.Read(ctx, first, last)
			if err != nil {
				return fmt.Errorf("package %s: read entries %d..%d of ledger %d: %w", n, first, last, r.Ledger, err)
			}
			for _, e := range ents {
				sum.Write(e)
				size += int64(len(e))
				if _, err := w.Write(e); err != nil {
					return err
				}
			}
		}
	}
	if got := hex.EncodeToString(sum.Sum(nil)); size != r.Size || got != r.SHA256 {
		return fmt.Errorf("package %s: read %d bytes with SHA-256 %s, stored %d bytes with %s", n, size, got, r.Size, r.SHA256)
	}
	return nil
}

// Fetch returns the contents of the package url names (the function
// worker's function://, source:// and sink:// URLs) up to limit bytes,
// after checking that the context's role may use packages of its
// namespace.
func (s *Store) Fetch(ctx context.Context, url string, limit int64) ([]byte, error) {
	n, err := ParseName(url)
	if err != nil {
		return nil, err
	}
	if err := s.sec.AuthorizeRoute(ctx, auth.RoleFromContext(ctx), auth.AccessPackages, map[string]string{"tenant": n.Tenant, "namespace": n.Namespace}); err != nil {
		return nil, err
	}
	r, _, err := s.get(ctx, n)
	if err != nil {
		return nil, err
	}
	if r.Size > limit {
		return nil, fmt.Errorf("package %s: %d bytes, over %d", n, r.Size, limit)
	}
	var buf bytes.Buffer
	if err := s.Download(ctx, n, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// GetMetadata returns a version's metadata.
func (s *Store) GetMetadata(ctx context.Context, n Name) (Metadata, error) {
	r, _, err := s.get(ctx, n)
	if err != nil {
		return Metadata{}, err
	}
	return r.Metadata, nil
}

// UpdateMetadata replaces a version's description, contact and
// properties with m's; the creation time stays, the modification time
// becomes now.
func (s *Store) UpdateMetadata(ctx context.Context, n Name, m Metadata) error {
	for {
		r, v, err := s.get(ctx, n)
		if err != nil {
			return err
		}
		m.CreateTime = r.Metadata.CreateTime
		m.ModificationTime = max(time.Now().UnixMilli(), r.Metadata.ModificationTime)
		r.Metadata = m
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = s.md.Put(ctx, recordPath(n), b, v)
		if errors.Is(err, metadata.ErrBadVersion) {
			continue
		}
		if errors.Is(err, metadata.ErrNotFound) {
			return fmt.Errorf("%w: Package '%s' metadata does not exist", ErrNotFound, n)
		}
		return err
	}
}

// Delete removes a version: its record first (readers then answer 404),
// then its ledger. The name's node goes with its last version.
func (s *Store) Delete(ctx context.Context, n Name) error {
	r, v, err := s.get(ctx, n)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%w: Package '%s' does not exist", ErrNotFound, n)
		}
		return err
	}
	if err := s.md.Delete(ctx, recordPath(n), v); err != nil {
		if errors.Is(err, metadata.ErrNotFound) || errors.Is(err, metadata.ErrBadVersion) {
			return fmt.Errorf("%w: Package '%s' does not exist", ErrNotFound, n)
		}
		return err
	}
	if err := s.lc.Delete(ctx, r.Ledger); err != nil {
		s.log.Warn("packages: deleting the ledger of a deleted package", "package", n.String(), "ledger", r.Ledger, "err", err)
	}
	// Empty parents go too, up to the type; a node that gained a child
	// meanwhile stays (ErrNotEmpty).
	for p := namePath(n); p != Root+"/"+string(n.Type); p = metadata.Parent(p) {
		kids, err := s.md.Children(ctx, p)
		if err != nil || len(kids) > 0 {
			break
		}
		if err := s.md.Delete(ctx, p, metadata.AnyVersion); err != nil {
			break
		}
	}
	return nil
}

// List returns the names of the packages of a type in tenant/namespace,
// sorted.
func (s *Store) List(ctx context.Context, t Type, tenant, namespace string) ([]string, error) {
	if err := checkNamespace(tenant, namespace); err != nil {
		return nil, err
	}
	kids, err := s.md.Children(ctx, Root+"/"+string(t)+"/"+tenant+"/"+namespace)
	if errors.Is(err, metadata.ErrNotFound) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(kids)
	return kids, nil
}

// Versions returns the versions of n's package (n's version is
// ignored), sorted; a package without versions is ErrNotFound.
func (s *Store) Versions(ctx context.Context, n Name) ([]string, error) {
	kids, err := s.md.Children(ctx, namePath(n))
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return nil, err
	}
	if len(kids) == 0 {
		return nil, fmt.Errorf("%w: Package '%s://%s/%s/%s' does not exist", ErrNotFound, n.Type, n.Tenant, n.Namespace, n.Name)
	}
	slices.Sort(kids)
	return kids, nil
}
