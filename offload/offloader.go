package offload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Source is the closed ledger an offload copies: what a managed ledger's
// ReadLedger offers.
type Source interface {
	ID() int64
	LastAddConfirmed() int64
	Length() int64
	Read(ctx context.Context, first, last int64) ([][]byte, error)
}

// storeOpTimeout bounds clean-up calls made after the caller's context
// failed.
const storeOpTimeout = 30 * time.Second

// readBatch is how many entries one ledger read fetches while offloading.
const readBatch = 100

// Offloader copies closed ledgers to an object store and reads them back.
// Safe for concurrent use.
type Offloader struct {
	cfg   Config
	store blobStore
	s3    *s3Store // the same store, when the driver is S3
	m     *Metrics
}

// New connects an offloader for cfg (validated). m may be nil.
func New(cfg Config, m *Metrics) (*Offloader, error) {
	if !cfg.Enabled() {
		return nil, fmt.Errorf("%w: no managedLedgerOffloadDriver", ErrBadConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.ensureDefaults()
	o := &Offloader{cfg: cfg, m: m}
	if o.m == nil {
		o.m = NewMetrics()
	}
	if strings.EqualFold(cfg.Driver, DriverFilesystem) {
		ds, err := newDirStore(cfg.Directory)
		if err != nil {
			return nil, err
		}
		o.store = ds
	} else {
		s3, err := newS3Store(cfg)
		if err != nil {
			return nil, err
		}
		o.store, o.s3 = s3, s3
	}
	return o, nil
}

// Config returns the offloader's settings.
func (o *Offloader) Config() Config { return o.cfg }

// DriverName is the configured driver.
func (o *Offloader) DriverName() string { return o.cfg.Driver }

// DriverMetadata is recorded with each offload (see Config.DriverMetadata).
func (o *Offloader) DriverMetadata() map[string]string { return o.cfg.DriverMetadata() }

// storeFor is the store holding an offload with driver metadata meta:
// the configured connection, with the bucket the offload recorded.
func (o *Offloader) storeFor(meta map[string]string) blobStore {
	if o.s3 != nil && meta != nil {
		return o.s3.withBucket(meta["bucket"])
	}
	return o.store
}

func objectMeta(role, mlName string) map[string]string {
	return map[string]string{metaVersion: FormatVersion, metaRole: role, metaML: mlName}
}

// Offload copies src (closed, non-empty) to the data object
// <uid>-ledger-<id> and the index object <uid>-ledger-<id>-index, then
// verifies them: the index is read back and must describe src, the data
// object must have the length the index records, and the last entry read
// back through a read handle must equal src's. On any error both objects
// are removed (best effort) and the error returned.
func (o *Offloader) Offload(ctx context.Context, src Source, uid UID, mlName string) (err error) {
	start := time.Now()
	lac, length := src.LastAddConfirmed(), src.Length()
	if lac < 0 {
		return fmt.Errorf("ledger %d: empty: %w", src.ID(), ErrNotOffloadable)
	}
	dataKey, indexKey := DataKey(uid, src.ID()), IndexKey(uid, src.ID())
	defer func() {
		if err != nil {
			o.m.Errors.Inc()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeOpTimeout)
			_ = o.store.remove(cctx, indexKey)
			_ = o.store.remove(cctx, dataKey)
			cancel()
		}
	}()
	ix := &index{seg: Segment{LastEntryID: lac, Length: length, Entries: lac + 1, CtimeMs: time.Now().UnixMilli()}}
	var (
		pending  [][]byte // read from src, not yet placed
		nextRead int64    // next entry id to read from src
		nextID   int64    // id of pending[0]
		written  int64    // entry bytes placed so far
		offset   int64
		bb       blockBuilder
	)
	peek := func() ([]byte, bool, error) {
		if len(pending) == 0 {
			if nextRead > lac {
				return nil, false, nil
			}
			last := min(nextRead+readBatch-1, lac)
			es, err := src.Read(ctx, nextRead, last)
			if err != nil {
				return nil, false, fmt.Errorf("read ledger %d entries %d..%d: %w", src.ID(), nextRead, last, err)
			}
			if int64(len(es)) != last-nextRead+1 {
				return nil, false, fmt.Errorf("read ledger %d: %d entries, want %d", src.ID(), len(es), last-nextRead+1)
			}
			pending, nextRead = es, last+1
		}
		return pending[0], true, nil
	}
	next := func() ([]byte, error) {
		e, ok, err := peek()
		if err != nil || !ok {
			return nil, err
		}
		// Block size: what is left of the ledger, capped at MaxBlockSize,
		// but never smaller than the next entry needs.
		left := (lac-nextID+1)*entryHeaderSize + (length - written) + blockHeaderSize
		size := min(o.cfg.MaxBlockSize, left)
		size = max(size, int64(blockHeaderSize+entryHeaderSize+len(e)))
		bb.reset(int(size), nextID)
		for {
			e, ok, err := peek()
			if err != nil {
				return nil, err
			}
			if !ok || !bb.add(nextID, e) {
				break
			}
			written += int64(len(e))
			pending = pending[1:]
			nextID++
		}
		ix.blocks = append(ix.blocks, indexEntry{firstEntryID: bb.first, partID: int32(len(ix.blocks) + 1), offset: offset})
		offset += size
		return bb.finish(), nil
	}
	n, err := o.store.putParts(ctx, dataKey, objectMeta("data", mlName), next)
	if err != nil {
		return fmt.Errorf("offload ledger %d data: %w", src.ID(), err)
	}
	if nextID != lac+1 {
		return fmt.Errorf("offload ledger %d: wrote %d of %d entries: %w", src.ID(), nextID, lac+1, ErrCorrupt)
	}
	ix.dataLength = n
	if err := o.store.put(ctx, indexKey, ix.encode(), objectMeta("index", mlName)); err != nil {
		return fmt.Errorf("offload ledger %d index: %w", src.ID(), err)
	}
	if err := o.verify(ctx, src, uid, ix); err != nil {
		return fmt.Errorf("offload ledger %d: verify: %w", src.ID(), err)
	}
	o.m.Bytes.Add(float64(n))
	o.m.Ledgers.Inc()
	o.m.WriteSeconds.Observe(time.Since(start).Seconds())
	return nil
}

// verify checks what Offload wrote (see Offload).
func (o *Offloader) verify(ctx context.Context, src Source, uid UID, want *index) error {
	sz, err := o.store.size(ctx, DataKey(uid, src.ID()))
	if err != nil {
		return err
	}
	if sz != want.dataLength {
		return fmt.Errorf("data object is %d bytes, index says %d: %w", sz, want.dataLength, ErrCorrupt)
	}
	h, err := o.open(ctx, o.store, src.ID(), uid)
	if err != nil {
		return err
	}
	defer h.Close()
	if !bytes.Equal(h.ix.encode(), want.encode()) {
		return fmt.Errorf("index read back differs: %w", ErrCorrupt)
	}
	lac := src.LastAddConfirmed()
	got, err := h.Read(ctx, lac, lac)
	if err != nil {
		return err
	}
	exp, err := src.Read(ctx, lac, lac)
	if err != nil {
		return err
	}
	if len(got) != 1 || len(exp) != 1 || !bytes.Equal(got[0], exp[0]) {
		return fmt.Errorf("last entry read back differs: %w", ErrCorrupt)
	}
	return nil
}

// Open returns a read handle on ledger id offloaded under uid.
// driverMeta is what the offload recorded (nil: the configured bucket).
// Opening reads the index object (up to 3 tries).
func (o *Offloader) Open(ctx context.Context, ledgerID int64, uid UID, driverMeta map[string]string) (*ReadHandle, error) {
	return o.open(ctx, o.storeFor(driverMeta), ledgerID, uid)
}

func (o *Offloader) open(ctx context.Context, st blobStore, ledgerID int64, uid UID) (*ReadHandle, error) {
	key := IndexKey(uid, ledgerID)
	var err error
	for try := 0; try < 3; try++ {
		var b []byte
		var meta map[string]string
		start := time.Now()
		b, meta, err = st.getRange(ctx, key, 0, -1)
		o.m.ReadSeconds.Observe(time.Since(start).Seconds())
		if err == nil {
			if err = checkVersion(key, meta); err != nil {
				break
			}
			var ix *index
			if ix, err = decodeIndex(b); err != nil {
				break
			}
			return newReadHandle(ledgerID, uid, st, ix, o.cfg.ReadBufferSize, o.m), nil
		}
		if errors.Is(err, ErrNotFound) || ctx.Err() != nil {
			break
		}
	}
	o.m.ReadErrors.Inc()
	return nil, fmt.Errorf("open offloaded ledger %d (%s): %w", ledgerID, uid, err)
}

func checkVersion(key string, meta map[string]string) error {
	if v := meta[metaVersion]; v != FormatVersion {
		return fmt.Errorf("invalid object version %q for %s, expect %s: %w", v, key, FormatVersion, ErrCorrupt)
	}
	return nil
}

// Delete removes the objects of ledger id offloaded under uid (index
// first). Absent objects are not an error, so a complete, partial or
// never-written offload can all be deleted.
func (o *Offloader) Delete(ctx context.Context, ledgerID int64, uid UID, driverMeta map[string]string) error {
	st := o.storeFor(driverMeta)
	if err := st.remove(ctx, IndexKey(uid, ledgerID)); err != nil {
		return err
	}
	if err := st.remove(ctx, DataKey(uid, ledgerID)); err != nil {
		return err
	}
	o.m.Deleted.Inc()
	return nil
}

// List returns the object keys (in the configured bucket or directory)
// that start with prefix.
func (o *Offloader) List(ctx context.Context, prefix string) ([]string, error) {
	return o.store.list(ctx, prefix)
}

// PutRaw writes one object of data as a single PUT (benchmarks compare
// offload throughput with it).
func (o *Offloader) PutRaw(ctx context.Context, key string, data []byte) error {
	return o.store.put(ctx, key, data, nil)
}

// RemoveRaw deletes an object written by PutRaw.
func (o *Offloader) RemoveRaw(ctx context.Context, key string) error {
	return o.store.remove(ctx, key)
}

// PendingUploads lists the keys (starting with prefix) of unfinished
// multipart uploads; always empty for the filesystem driver.
func (o *Offloader) PendingUploads(ctx context.Context, prefix string) ([]string, error) {
	if o.s3 == nil {
		return nil, nil
	}
	ups, err := o.s3.pendingUploads(ctx, prefix)
	var keys []string
	for _, u := range ups {
		keys = append(keys, u[0])
	}
	return keys, err
}
