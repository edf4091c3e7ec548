package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/metadata"
)

// OwnerData is Pulsar's NamespaceEphemeralData, the value of an owner
// node, plus LockID, which tells this broker's node (this process, this
// session) from any other with the same URLs.
type OwnerData struct {
	NativeURL           string            `json:"nativeUrl"`
	NativeURLTLS        string            `json:"nativeUrlTls,omitempty"`
	HTTPURL             string            `json:"httpUrl"`
	HTTPURLTLS          string            `json:"httpUrlTls,omitempty"`
	Disabled            bool              `json:"disabled"`
	AdvertisedListeners map[string]string `json:"advertisedListeners"`
	LockID              string            `json:"magnetarLockId,omitempty"`
}

func (s *Service) ownerValue(session int64) []byte {
	v, _ := json.Marshal(OwnerData{
		NativeURL: s.o.ServiceURL, NativeURLTLS: s.o.ServiceURLTLS,
		HTTPURL: s.o.WebURL, HTTPURLTLS: s.o.WebURLTLS,
		AdvertisedListeners: map[string]string{},
		LockID:              s.o.BrokerID + "/" + strconv.FormatInt(session, 16) + "/" + s.nonce,
	})
	return v
}

// Owner reads the owner of a bundle; ok is false if nobody owns it.
func (s *Service) Owner(ctx context.Context, ns string, r bundle.Range) (OwnerData, bool, error) {
	od, _, _, ok, err := s.ownerNode(ctx, ns, r)
	return od, ok, err
}

// ownerNode is Owner with the node's bytes and version.
func (s *Service) ownerNode(ctx context.Context, ns string, r bundle.Range) (OwnerData, []byte, metadata.Version, bool, error) {
	data, v, err := s.st.Get(ctx, ownerPath(ns, r))
	if errors.Is(err, metadata.ErrNotFound) {
		return OwnerData{}, nil, 0, false, nil
	}
	if err != nil {
		return OwnerData{}, nil, 0, false, err
	}
	var od OwnerData
	if err := json.Unmarshal(data, &od); err != nil {
		return OwnerData{}, nil, 0, false, fmt.Errorf("cluster: owner of %s: %w", BundleKey(ns, r), err)
	}
	return od, data, v, true, nil
}

// acquire takes ownership of a bundle. It returns the owner found: this
// broker's own data when it got the bundle (or already had it), another
// broker's when that one holds it.
func (s *Service) acquire(ctx context.Context, ns string, r bundle.Range) (OwnerData, bool, error) {
	key := BundleKey(ns, r)
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return OwnerData{}, false, ErrClosed
	}
	if o := s.mu.owned[key]; o != nil {
		s.mu.Unlock()
		if !o.active.Load() {
			return OwnerData{}, false, ErrUnloading
		}
		return s.self(), true, nil
	}
	s.mu.Unlock()
	session := s.leaseSession.Load()
	if !s.leaseValidFor(session) {
		return OwnerData{}, false, fmt.Errorf("%w: metadata session not established", ErrNotOwned)
	}
	val := s.ownerValue(session)
	p := ownerPath(ns, r)
	var err error
	if s.sess != nil {
		err = s.sess.CreateEphemeral(ctx, p, val)
	} else if e, ok := s.st.(metadata.Ephemeraler); ok {
		err = e.PutEphemeral(ctx, p, val)
	} else {
		_, err = s.st.Put(ctx, p, val, metadata.NotExists)
	}
	if err != nil {
		if !errors.Is(err, metadata.ErrExists) && !errors.Is(err, metadata.ErrUnavailable) {
			return OwnerData{}, false, err
		}
		// Someone has it, or our own create went through before the
		// connection dropped: the value tells.
		data, _, gerr := s.st.Get(ctx, p)
		if gerr != nil {
			if errors.Is(gerr, metadata.ErrNotFound) {
				return OwnerData{}, false, fmt.Errorf("%w: owner of %s changed, retry", ErrUnloading, key)
			}
			return OwnerData{}, false, gerr
		}
		if !bytes.Equal(data, val) {
			var od OwnerData
			if err := json.Unmarshal(data, &od); err != nil {
				return OwnerData{}, false, err
			}
			return od, false, nil
		}
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		s.releaseNode(ctx, &owned{ns: ns, r: r, session: session, value: val})
		return OwnerData{}, false, ErrClosed
	}
	o := &owned{ns: ns, r: r, session: session, value: val}
	o.active.Store(true)
	s.mu.owned[key] = o
	s.mu.Unlock()
	s.log.Info("bundle acquired", "bundle", key)
	return s.self(), true, nil
}

func (s *Service) self() OwnerData {
	return OwnerData{NativeURL: s.o.ServiceURL, NativeURLTLS: s.o.ServiceURLTLS, HTTPURL: s.o.WebURL, HTTPURLTLS: s.o.WebURLTLS}
}

// Owns reports whether this broker may serve the bundle with the given key
// right now: it holds the owner node, is not unloading it, and its
// metadata session is certainly alive. It is cheap (no I/O): the broker
// calls it before every acknowledgement.
func (s *Service) Owns(key string) bool {
	s.mu.Lock()
	o := s.mu.owned[key]
	s.mu.Unlock()
	return o != nil && o.active.Load() && s.leaseValidFor(o.session)
}

// Holds reports whether this broker may still acknowledge writes to the
// bundle: it holds the owner node on a live session, active or unloading
// (an unload lets pending writes complete before it releases the node).
func (s *Service) Holds(key string) bool {
	s.mu.Lock()
	o := s.mu.owned[key]
	s.mu.Unlock()
	return o != nil && s.leaseValidFor(o.session)
}

// SessionAlive reports whether the metadata session lease holds now.
func (s *Service) SessionAlive() bool { return s.leaseValidFor(s.leaseSession.Load()) }

// TopicBundle returns the namespace and bundle of a canonical topic name,
// reading the namespace's current boundaries.
func (s *Service) TopicBundle(ctx context.Context, topic string) (string, bundle.Range, error) {
	ns, err := NamespaceOf(topic)
	if err != nil {
		return "", bundle.Range{}, err
	}
	b, _, err := namespaceBundles(ctx, s.st, ns)
	if err != nil {
		return "", bundle.Range{}, err
	}
	return ns, b.ForTopic(topic), nil
}

// CheckTopic returns the key of the topic's bundle if this broker serves
// it, else ErrNotOwned or ErrUnloading. A standalone (Options.Standalone)
// takes an unowned bundle first.
func (s *Service) CheckTopic(ctx context.Context, topic string) (string, error) {
	ns, r, err := s.TopicBundle(ctx, topic)
	if err != nil {
		return "", err
	}
	key := BundleKey(ns, r)
	s.mu.Lock()
	o := s.mu.owned[key]
	s.mu.Unlock()
	if o == nil && s.o.Standalone {
		// The only broker: a lookup would choose this one.
		if od, _, err := s.acquire(ctx, ns, r); err != nil {
			return "", err
		} else if !s.IsSelf(od) {
			return "", fmt.Errorf("%w: %s (bundle %s) is owned by %s", ErrNotOwned, topic, key, od.NativeURL)
		}
		s.mu.Lock()
		o = s.mu.owned[key]
		s.mu.Unlock()
	}
	switch {
	case o == nil || !s.leaseValidFor(o.session):
		return "", fmt.Errorf("%w: %s (bundle %s); redo the lookup", ErrNotOwned, topic, key)
	case !o.active.Load():
		return "", fmt.Errorf("%w: %s", ErrUnloading, key)
	}
	return key, nil
}

// OwnedBundles lists the keys of the bundles this broker serves, sorted.
func (s *Service) OwnedBundles() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.mu.owned))
	for k, o := range s.mu.owned {
		if o.active.Load() {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// splitKey parses "tenant/ns/0xL_0xU".
func splitKey(key string) (string, bundle.Range, error) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", bundle.Range{}, fmt.Errorf("%w: bundle key %q", bundle.ErrInvalid, key)
	}
	r, err := bundle.ParseRange(key[i+1:])
	return key[:i], r, err
}

// Unload releases a bundle this broker owns, gracefully: lookups answer
// "being unloaded" from now on, the broker closes the bundle's topics
// (clients get CLOSE_PRODUCER/CLOSE_CONSUMER; pending writes complete and
// ledgers are closed), then the owner node is deleted so the next lookup
// assigns it again. Unloading a bundle not owned here is ErrNotOwned.
func (s *Service) Unload(ctx context.Context, ns string, r bundle.Range) error {
	key := BundleKey(ns, r)
	s.mu.Lock()
	o := s.mu.owned[key]
	if o == nil || !o.active.Load() {
		s.mu.Unlock()
		if o != nil {
			return ErrUnloading
		}
		return fmt.Errorf("%w: %s", ErrNotOwned, key)
	}
	o.active.Store(false)
	s.mu.Unlock()
	t0 := time.Now()
	s.bundleLost(o)
	s.releaseNode(ctx, o)
	s.mu.Lock()
	if s.mu.owned[key] == o {
		delete(s.mu.owned, key)
	}
	s.mu.Unlock()
	s.log.Info("bundle unloaded", "bundle", key, "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// SplitAlgorithm names Pulsar's split algorithms.
const (
	SplitRangeEqually = "range_equally_divide"
	SplitTopicCount   = "topic_count_equally_divide"
)

// Split divides a bundle this broker owns in two (algorithm
// SplitRangeEqually, or SplitTopicCount with the topics the broker serves
// in it), takes both halves, writes the new boundaries with a
// compare-and-set, and closes the parent's topics (their clients look up
// again and land on a half). With unload, both halves are then unloaded
// so that the load manager may place them elsewhere.
func (s *Service) Split(ctx context.Context, ns string, r bundle.Range, algorithm string, topics []string, unload bool) ([2]bundle.Range, error) {
	key := BundleKey(ns, r)
	if !s.Owns(key) {
		return [2]bundle.Range{}, fmt.Errorf("%w: %s", ErrNotOwned, key)
	}
	var point uint32
	switch algorithm {
	case "", SplitRangeEqually:
		point = bundle.Middle(r)
	case SplitTopicCount:
		p, ok := bundle.SplitByTopics(r, topics)
		if !ok {
			return [2]bundle.Range{}, fmt.Errorf("%w: fewer than two topics in %s", bundle.ErrCannotSplit, key)
		}
		point = p
	default:
		return [2]bundle.Range{}, fmt.Errorf("%w: split algorithm %q", bundle.ErrInvalid, algorithm)
	}
	halves := [2]bundle.Range{{Lower: r.Lower, Upper: point}, {Lower: point, Upper: r.Upper}}
	for attempt := 0; ; attempt++ {
		b, v, err := namespaceBundles(ctx, s.st, ns)
		if err != nil {
			return halves, err
		}
		nb, err := b.Split(r, point)
		if err != nil {
			return halves, err
		}
		for _, h := range halves {
			if _, mine, err := s.acquire(ctx, ns, h); err != nil || !mine {
				return halves, fmt.Errorf("cluster: split %s: take %s: %v", key, h, err)
			}
		}
		err = writeBundles(ctx, s.st, ns, nb, v)
		if errors.Is(err, metadata.ErrBadVersion) && attempt < 7 {
			continue
		}
		if err != nil {
			return halves, err
		}
		break
	}
	s.log.Info("bundle split", "bundle", key, "into", halves[0].String()+","+halves[1].String())
	if err := s.Unload(ctx, ns, r); err != nil {
		s.log.Warn("split: unload parent", "bundle", key, "err", err)
	}
	if unload {
		for _, h := range halves {
			_ = s.Unload(ctx, ns, h)
		}
	}
	return halves, nil
}

// Bundles returns a namespace's current bundles.
func (s *Service) Bundles(ctx context.Context, ns string) (bundle.Bundles, error) {
	b, _, err := namespaceBundles(ctx, s.st, ns)
	return b, err
}

// ClaimUnowned takes an unowned bundle on a standalone (Options.
// Standalone: the only broker, where any placement would put it) and
// reports whether this broker owns it now; elsewhere it only reports
// ownership (a bundle is placed by lookups).
func (s *Service) ClaimUnowned(ctx context.Context, ns string, r bundle.Range) (bool, error) {
	if s.Owns(BundleKey(ns, r)) {
		return true, nil
	}
	if !s.o.Standalone {
		return false, nil
	}
	od, _, err := s.acquire(ctx, ns, r)
	if err != nil {
		return false, err
	}
	return s.IsSelf(od), nil
}
