package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/metadata"
)

// unloadWait bounds how long an unload waits for a topic's writes in
// flight.
func (b *Broker) unloadWait() time.Duration {
	if c := b.cfg.Cluster; c != nil && c.UnloadTimeout > 0 {
		return c.UnloadTimeout
	}
	return 30 * time.Second
}

// registerClusterRoutes installs the HTTP endpoints of a cluster: broker
// list, leader, readiness, load report, bundles, unload and split.
func (b *Broker) registerClusterRoutes(rt *Router) {
	rt.Handle("GET", "/admin/v2/brokers/leaderBroker", b.httpLeaderBroker)
	rt.Handle("GET", "/admin/v2/brokers/health", b.httpHealth)
	rt.Handle("GET", "/admin/v2/brokers/{cluster}", b.httpListBrokers)
	rt.Handle("GET", "/admin/v2/brokers/ready", b.httpReady)
	rt.Handle("GET", "/admin/v2/broker-stats/load-report", b.httpLoadReport)
	rt.Handle("GET", "/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces", b.httpOwnedNamespaces)
	rt.Handle("GET", "/admin/v2/namespaces/{tenant}/{ns}/bundles", b.httpBundles)
	rt.Handle("PUT", "/admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload", b.httpUnloadBundle)
	rt.Handle("PUT", "/admin/v2/namespaces/{tenant}/{ns}/{bundle}/split", b.httpSplitBundle)
	rt.Handle("PUT", "/admin/v2/namespaces/{tenant}/{ns}/unload", b.httpUnloadNamespace)
	rt.Handle("GET", "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}/bundle", b.httpTopicBundle)
}

// httpClusterLookup answers /lookup/v2/topic/... : 200 with LookupData
// when the owner is known (or taken here), 307 to the broker that decides
// otherwise.
func (b *Broker) httpClusterLookup(w http.ResponseWriter, r *http.Request, tn topicName) {
	auth, _ := strconv.ParseBool(r.URL.Query().Get("authoritative"))
	res, err := b.cluster.Lookup(r.Context(), tn.String(), auth)
	if err != nil {
		switch {
		case errors.Is(err, metadata.ErrNotFound):
			WriteError(w, http.StatusNotFound, "Namespace does not exist")
		case errors.Is(err, cluster.ErrNoBroker):
			WriteError(w, http.StatusServiceUnavailable, err.Error())
		default:
			WriteError(w, http.StatusServiceUnavailable, err.Error())
		}
		return
	}
	if res.Redirect {
		loc := res.Target.HTTPURL + lookupURLPath(tn) + "?authoritative=" + strconv.FormatBool(res.Authoritative)
		http.Redirect(w, r, loc, http.StatusTemporaryRedirect)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]string{
		"brokerUrl":    res.Target.NativeURL,
		"brokerUrlTls": res.Target.NativeURLTLS,
		"httpUrl":      res.Target.HTTPURL,
		"httpUrlTls":   res.Target.HTTPURLTLS,
		"nativeUrl":    res.Target.NativeURL,
		"brokerUrlSsl": "",
	})
}

func (b *Broker) needCluster(w http.ResponseWriter) bool {
	if b.cluster == nil {
		WriteError(w, http.StatusPreconditionFailed, "not a clustered broker (standalone owns every bundle)")
		return false
	}
	return true
}

func (b *Broker) httpLeaderBroker(w http.ResponseWriter, r *http.Request, _ Params) {
	if b.cluster == nil {
		WriteJSON(w, http.StatusOK, cluster.LeaderInfo{BrokerID: b.brokerID(), ServiceURL: b.webURL()})
		return
	}
	li, err := b.cluster.Leader(r.Context())
	if errors.Is(err, cluster.ErrNoLeader) {
		WriteError(w, http.StatusNotFound, "Couldn't find leader broker")
		return
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	WriteJSON(w, http.StatusOK, li)
}

func (b *Broker) httpReady(w http.ResponseWriter, _ *http.Request, _ Params) {
	b.mu.Lock()
	ok := b.mu.started && !b.mu.closing && !b.mu.closed
	b.mu.Unlock()
	if !ok {
		WriteError(w, http.StatusInternalServerError, "broker is not ready")
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok"))
}

func (b *Broker) httpLoadReport(w http.ResponseWriter, _ *http.Request, _ Params) {
	if !b.needCluster(w) {
		return
	}
	WriteJSON(w, http.StatusOK, b.cluster.LoadReport())
}

func (b *Broker) httpOwnedNamespaces(w http.ResponseWriter, r *http.Request, p Params) {
	if !b.needCluster(w) {
		return
	}
	if p["broker"] != b.brokerID() {
		rep, err := b.cluster.Report(r.Context(), p["broker"])
		if err != nil {
			WriteError(w, http.StatusNotFound, "broker not found")
			return
		}
		http.Redirect(w, r, rep.WebServiceURL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		return
	}
	type status struct {
		Assignment   string `json:"broker_assignment"`
		IsControlled bool   `json:"is_controlled"`
		IsActive     bool   `json:"is_active"`
	}
	out := map[string]status{}
	for _, k := range b.cluster.OwnedBundles() {
		out[k] = status{Assignment: "shared", IsActive: true}
	}
	WriteJSON(w, http.StatusOK, out)
}

func (b *Broker) httpBundles(w http.ResponseWriter, r *http.Request, p Params) {
	ns := p["tenant"] + "/" + p["ns"]
	if b.cluster == nil {
		one, _ := bundle.Even(1)
		WriteJSON(w, http.StatusOK, one)
		return
	}
	bs, err := b.cluster.Bundles(r.Context(), ns)
	if errors.Is(err, metadata.ErrNotFound) {
		WriteError(w, http.StatusNotFound, "Namespace does not exist")
		return
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	WriteJSON(w, http.StatusOK, bs)
}

// bundleParam parses {bundle} and checks that it is a current bundle of
// the namespace (412 otherwise, 404 for an unknown namespace).
func (b *Broker) bundleParam(w http.ResponseWriter, r *http.Request, p Params) (string, bundle.Range, bool) {
	ns := p["tenant"] + "/" + p["ns"]
	rg, err := bundle.ParseRange(p["bundle"])
	if err != nil {
		WriteError(w, http.StatusPreconditionFailed, err.Error())
		return "", rg, false
	}
	bs, err := b.cluster.Bundles(r.Context(), ns)
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		WriteError(w, http.StatusNotFound, "Namespace does not exist")
		return "", rg, false
	case err != nil:
		WriteError(w, http.StatusInternalServerError, err.Error())
		return "", rg, false
	case !bs.Has(rg):
		WriteError(w, http.StatusPreconditionFailed, "Namespace bundle "+ns+"/"+rg.String()+" does not exist")
		return "", rg, false
	}
	return ns, rg, true
}

// redirectToOwner sends a bundle request to the bundle's owner (307);
// false when this broker owns it or nobody does (unowned).
func (b *Broker) redirectToOwner(w http.ResponseWriter, r *http.Request, ns string, rg bundle.Range) (redirected, owned bool) {
	if b.cluster.Owns(cluster.BundleKey(ns, rg)) {
		return false, true
	}
	od, ok, err := b.cluster.Owner(r.Context(), ns, rg)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return true, false
	}
	if !ok {
		return false, false
	}
	u := *r.URL
	q := u.Query()
	q.Set("authoritative", "true")
	u.RawQuery = q.Encode()
	http.Redirect(w, r, od.HTTPURL+u.RequestURI(), http.StatusTemporaryRedirect)
	return true, false
}

func (b *Broker) httpUnloadBundle(w http.ResponseWriter, r *http.Request, p Params) {
	if b.cluster == nil {
		b.standaloneUnload(w, r, p)
		return
	}
	ns, rg, ok := b.bundleParam(w, r, p)
	if !ok {
		return
	}
	redirected, owned := b.redirectToOwner(w, r, ns, rg)
	if redirected {
		return
	}
	if owned {
		if err := b.cluster.Unload(context.WithoutCancel(r.Context()), ns, rg); err != nil && !errors.Is(err, cluster.ErrNotOwned) {
			WriteError(w, http.StatusPreconditionFailed, err.Error())
			return
		}
	}
	// Not owned by anyone: a no-op, as Pulsar's.
	w.WriteHeader(http.StatusNoContent)
}

func (b *Broker) httpUnloadNamespace(w http.ResponseWriter, r *http.Request, p Params) {
	if b.cluster == nil {
		b.standaloneUnload(w, r, p)
		return
	}
	ns := p["tenant"] + "/" + p["ns"]
	bs, err := b.cluster.Bundles(r.Context(), ns)
	if errors.Is(err, metadata.ErrNotFound) {
		WriteError(w, http.StatusNotFound, "Namespace does not exist")
		return
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	ctx := context.WithoutCancel(r.Context())
	for _, rg := range bs.Ranges() {
		if err := b.cluster.UnloadBundle(ctx, ns, rg); err != nil {
			WriteError(w, http.StatusInternalServerError, "unload "+rg.String()+": "+err.Error())
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (b *Broker) httpSplitBundle(w http.ResponseWriter, r *http.Request, p Params) {
	if !b.needCluster(w) {
		return
	}
	ns, rg, ok := b.bundleParam(w, r, p)
	if !ok {
		return
	}
	redirected, owned := b.redirectToOwner(w, r, ns, rg)
	if redirected {
		return
	}
	if !owned {
		WriteError(w, http.StatusPreconditionFailed, "Namespace bundle "+ns+"/"+rg.String()+" is not owned by any broker; look one of its topics up first")
		return
	}
	q := r.URL.Query()
	unload, _ := strconv.ParseBool(q.Get("unload"))
	algo := q.Get("splitAlgorithmName")
	var topics []string
	if algo == cluster.SplitTopicCount {
		topics = b.loadedTopicsOf(cluster.BundleKey(ns, rg))
	}
	if _, err := b.cluster.Split(context.WithoutCancel(r.Context()), ns, rg, algo, topics, unload); err != nil {
		WriteError(w, http.StatusPreconditionFailed, "Split bundle failed due to invalid request: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (b *Broker) loadedTopicsOf(key string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for full, l := range b.mu.topics {
		select {
		case <-l.done:
			if l.t != nil && l.t.bundleKey == key {
				out = append(out, full)
			}
		default:
		}
	}
	return out
}

func (b *Broker) httpTopicBundle(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok {
		return
	}
	if exists, err := b.reg.namespaceExists(r.Context(), tn.NamespaceName()); err != nil || !exists {
		WriteError(w, http.StatusNotFound, "Namespace does not exist")
		return
	}
	if b.cluster == nil {
		one, _ := bundle.Even(1)
		WriteJSON(w, http.StatusOK, one.Ranges()[0].String())
		return
	}
	_, rg, err := b.cluster.TopicBundle(r.Context(), tn.String())
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(rg.String()))
}

// httpListBrokers is /admin/v2/brokers/{cluster}: the live brokers.
func (b *Broker) httpListBrokers(w http.ResponseWriter, r *http.Request, p Params) {
	if p["cluster"] != b.cfg.ClusterName {
		WriteError(w, http.StatusNotFound, "Cluster does not exist")
		return
	}
	ids, err := b.liveBrokers(r.Context())
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	WriteJSON(w, http.StatusOK, ids)
}

// liveBrokers lists the cluster's live brokers (this one on a single
// node).
func (b *Broker) liveBrokers(ctx context.Context) ([]string, error) {
	if b.cluster == nil {
		return []string{b.brokerID()}, nil
	}
	return b.cluster.Brokers(ctx)
}

// healthState is the broker's health-check topic: a managed ledger of its
// own (one per broker id, so no other broker opens it), opened on first
// use and closed with the broker.
type healthState struct {
	mu sync.Mutex
	ml ManagedLedger
}

// httpHealth is /admin/v2/brokers/health: a real check, as Pulsar's: the
// metadata store answers (and, in a cluster, the broker's session lease
// holds), and a message written through a managed ledger to the bookies
// reads back equal. 200 "ok", else 503 with the failing step.
func (b *Broker) httpHealth(w http.ResponseWriter, r *http.Request, _ Params) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := b.healthCheck(ctx); err != nil {
		WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok"))
}

func (b *Broker) healthCheck(ctx context.Context) error {
	if _, err := b.deps.Metadata.Exists(ctx, "/"); err != nil {
		return fmt.Errorf("metadata store: %w", err)
	}
	if b.cluster != nil && !b.cluster.SessionAlive() {
		return errors.New("metadata session lease lost")
	}
	b.health.mu.Lock()
	defer b.health.mu.Unlock()
	if b.health.ml == nil {
		name := "persistent://pulsar/system/healthcheck-" + strings.NewReplacer(":", "_", "/", "_").Replace(b.brokerID())
		ml, err := b.deps.OpenLedger(ctx, name)
		if err != nil {
			return fmt.Errorf("open health-check ledger: %w", err)
		}
		b.health.ml = ml
	}
	msg := make([]byte, mledger.EntryHeadroom+16)
	_, _ = rand.Read(msg[mledger.EntryHeadroom:])
	want := bytes.Clone(msg[mledger.EntryHeadroom:])
	type added struct {
		pos position
		err error
	}
	ch := make(chan added, 1)
	b.health.ml.AddEntry(msg, mledger.EntryHeadroom, 1, func(pos position, err error) { ch <- added{pos, err} })
	var a added
	select {
	case a = <-ch:
	case <-ctx.Done():
		return fmt.Errorf("bookie write: %w", ctx.Err())
	}
	if a.err != nil {
		b.health.ml.Close()
		b.health.ml = nil
		return fmt.Errorf("bookie write: %w", a.err)
	}
	got, err := b.health.ml.ReadEntry(a.pos)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if !bytes.Equal(got, want) {
		return errors.New("read back a different message")
	}
	return nil
}

// closeHealth closes the health-check ledger.
func (b *Broker) closeHealth() {
	b.health.mu.Lock()
	defer b.health.mu.Unlock()
	if b.health.ml != nil {
		b.health.ml.Close()
		b.health.ml = nil
	}
}

// standaloneUnload serves bundle and namespace unload on a single node:
// the namespace has the one bundle 0x00000000_0xffffffff, and unloading it
// unloads every loaded topic of the namespace (clients reconnect).
func (b *Broker) standaloneUnload(w http.ResponseWriter, r *http.Request, p Params) {
	ns := p["tenant"] + "/" + p["ns"]
	if ok, err := b.policies.NamespaceExists(r.Context(), ns); err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	} else if !ok {
		WriteError(w, http.StatusNotFound, "Namespace does not exist")
		return
	}
	const full = "0x00000000_0xffffffff"
	if bd, ok := p["bundle"]; ok && bd != full {
		WriteError(w, http.StatusPreconditionFailed, "Invalid bundle range "+bd+": namespace "+ns+" has the one bundle "+full)
		return
	}
	topics, err := b.TopicsOfNamespace(r.Context(), ns, true, true)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	for _, t := range topics {
		if _, err := b.UnloadTopic(t); err != nil {
			WriteError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
