package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// Client creates, opens and deletes ledgers. Ledger metadata lives in a
// metadata.Store; entries on bookies reached through a BookieResolver.
//
// Safe for concurrent use.
type Client struct {
	store   metadata.Store
	bookies BookieResolver
	opts    Options

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // background goroutines of the client and its handles
	closed atomic.Bool
}

// NewClient returns a client over store and bookies.
func NewClient(store metadata.Store, bookies BookieResolver, opts Options) (*Client, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{store: store, bookies: bookies, opts: opts, ctx: ctx, cancel: cancel}, nil
}

// Close stops the client's background work (it does not close open
// handles: close them first) and waits for it.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.cancel()
	c.wg.Wait()
	return nil
}

// goTracked runs f on a goroutine that Close waits for.
func (c *Client) goTracked(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// WritableBookies lists the bookies placement may choose from.
func (c *Client) WritableBookies(ctx context.Context) ([]string, error) {
	if c.opts.Bookies != nil {
		out := slices.Clone(c.opts.Bookies)
		if ro := c.opts.ReadOnly; ro != nil {
			out = slices.DeleteFunc(out, ro)
		}
		return out, nil
	}
	names, err := c.store.Children(ctx, AvailablePath)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := names[:0]
	for _, n := range names {
		if n != "readonly" {
			out = append(out, n)
		}
	}
	return out, nil
}

// pickBookies returns n distinct random bookies from avail not in exclude.
func pickBookies(avail []string, n int, exclude func(string) bool) ([]string, error) {
	var cand []string
	for _, b := range avail {
		if !exclude(b) {
			cand = append(cand, b)
		}
	}
	if len(cand) < n {
		return nil, fmt.Errorf("%w: need %d, have %d", ErrNotEnoughBookies, n, len(cand))
	}
	rand.Shuffle(len(cand), func(i, j int) { cand[i], cand[j] = cand[j], cand[i] })
	return cand[:n], nil
}

// newID allocates a ledger id from the store's sequential counter.
func (c *Client) newID(ctx context.Context) (int64, error) {
	p, err := c.store.CreateSequential(ctx, idGenPrefix, nil)
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(metadata.Base(p), "ID-"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ledger: sequential node %q: %w", p, err)
	}
	// The counter lives in the parent; the node itself is not needed.
	if err := c.store.Delete(ctx, p, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		c.opts.Logger.Warn("ledger: deleting id node", "path", p, "err", err)
	}
	return id, nil
}

// Create creates a new OPEN ledger on E random writable bookies and returns
// its write handle. ErrNotEnoughBookies and metadata errors are safe to
// retry.
func (c *Client) Create(ctx context.Context, o CreateOptions) (*WriteHandle, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	o.ensureDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	avail, err := c.WritableBookies(ctx)
	if err != nil {
		return nil, err
	}
	excl, err := c.affinityExcluded(ctx, o.Affinity, avail, o.Ensemble)
	if err != nil {
		return nil, err
	}
	ens, err := pickBookies(avail, o.Ensemble, func(b string) bool { return excl[b] })
	if err != nil {
		return nil, err
	}
	id, err := c.newID(ctx)
	if err != nil {
		return nil, err
	}
	m := Metadata{
		Format: MetadataFormat, EnsembleSize: o.Ensemble, WriteQuorum: o.WriteQuorum, AckQuorum: o.AckQuorum,
		State: StateOpen, LastEntryID: -1, Ensembles: []Segment{{FirstEntry: 0, Bookies: ens}},
		DigestType: DigestCRC32C, Password: slices.Clone(o.Password), CTime: time.Now().UnixMilli(), Custom: o.Custom,
	}
	v, err := c.store.Put(ctx, LedgerPath(id), encodeMetadata(&m), metadata.NotExists)
	if err != nil {
		return nil, err
	}
	return newWriteHandle(c, id, m, v, o.Affinity), nil
}

// Metadata returns ledger id's metadata record and its version.
func (c *Client) Metadata(ctx context.Context, id int64) (Metadata, metadata.Version, error) {
	return readMetadata(ctx, c.store, id)
}

// Delete deletes ledger id's metadata, then asks the bookies that
// implement LedgerDeleter to drop its data (best effort; other bookies
// reclaim it by garbage collection). Deleting an absent ledger is not an
// error (as mledger.LedgerStore requires). Metadata errors are safe to
// retry.
func (c *Client) Delete(ctx context.Context, id int64) error {
	m, v, err := readMetadata(ctx, c.store, id)
	if errors.Is(err, ErrNoSuchLedger) {
		return nil
	}
	if err != nil && !errors.Is(err, ErrBadMetadata) {
		return err
	}
	if err := c.store.Delete(ctx, LedgerPath(id), v); err != nil {
		if errors.Is(err, metadata.ErrNotFound) {
			return nil
		}
		return err
	}
	seen := map[string]bool{}
	for _, s := range m.Ensembles {
		for _, b := range s.Bookies {
			if seen[b] {
				continue
			}
			seen[b] = true
			if bc, err := c.bookies.Client(b); err == nil {
				if d, ok := bc.(LedgerDeleter); ok {
					_ = d.DeleteLedger(ctx, id)
				}
			}
		}
	}
	return nil
}

// Ledgers lists the ids of every ledger with metadata, ascending.
func (c *Client) Ledgers(ctx context.Context) ([]int64, error) {
	var ids []int64
	l1, err := c.store.Children(ctx, LedgersRoot)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, a := range l1 {
		if _, err := strconv.Atoi(a); err != nil {
			continue
		}
		l2, err := c.store.Children(ctx, LedgersRoot+"/"+a)
		if err != nil {
			return nil, err
		}
		for _, b := range l2 {
			l3, err := c.store.Children(ctx, LedgersRoot+"/"+a+"/"+b)
			if err != nil {
				return nil, err
			}
			for _, n := range l3 {
				if id, ok := ParseLedgerPath(LedgersRoot + "/" + a + "/" + b + "/" + n); ok {
					ids = append(ids, id)
				}
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// probeTimeout bounds the probe of an excluded bookie (answering).
const probeTimeout = time.Second

// answering returns the bookies of cands that want selects and that
// answer a request now (the last-add-confirmed of ledger id: any answer
// from the bookie, "no such ledger" included, means it serves again). The
// probes run at once, each within probeTimeout.
func (c *Client) answering(ctx context.Context, id int64, cands []string, want func(string) bool) []string {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var mu sync.Mutex
	var out []string
	var wg sync.WaitGroup
	for _, b := range cands {
		if !want(b) {
			continue
		}
		bc, err := c.bookies.Client(b)
		if err != nil {
			continue
		}
		wg.Go(func() {
			_, _, err := bc.ReadLAC(ctx, id)
			if err == nil || errors.Is(err, bkproto.ErrNoLedger) || errors.Is(err, bkproto.ErrNoEntry) {
				mu.Lock()
				out = append(out, b)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}
