package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/functions/iopolicy"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Options configure a Worker.
type Options struct {
	// Metadata is where functions, packages, state and worker membership
	// live; workers sharing it share the deployment.
	Metadata metadata.Store
	// ID names this worker (unique among the workers of a store).
	ID string
	// DataDir holds unpacked packages, instance logs and instance dirs.
	DataDir string
	// BuiltinCommand runs a builtin connector (builtin://NAME): the
	// command and its arguments; the name is passed in MAGNETAR_BUILTIN.
	BuiltinCommand []string
	// Cluster is the cluster name in metrics labels.
	Cluster string
	// Reconcile is how often the worker re-reads the assignment inputs
	// (default 1s); changes made through this worker apply at once.
	Reconcile time.Duration
	Logger    *slog.Logger

	// FunctionsDirectory and ConnectorsDirectory are where file:// package
	// URLs of functions, and of sources and sinks, may point (Pulsar's
	// functionsDirectory and connectorsDirectory; "" allows no local
	// file). FunctionsURLPatterns and ConnectorsURLPatterns are regular
	// expressions a package URL (file:// or http(s)://) may match instead
	// (Pulsar's additionalEnabledFunctionsUrlPatterns and
	// additionalEnabledConnectorUrlPatterns; empty: no downloads).
	FunctionsDirectory, ConnectorsDirectory     string
	FunctionsURLPatterns, ConnectorsURLPatterns []string
	// InstanceUser is the account instances run as when the worker runs
	// as root (default "nobody"; the magnetar key functionsInstanceUser).
	// A worker that is not root runs instances as itself.
	InstanceUser string
	// Client is the worker's identity and trust on its own connections
	// to brokers and other workers (client.go). Instances never get its
	// credentials; they get its TrustCertsFile.
	Client ClientOptions
	// AuthenticationEnabled is the worker's authenticationEnabled: only
	// then does a function carry its submitter's credentials, and
	// FunctionAuthProvider (Pulsar's functionAuthProviderClassName; "" is
	// ProviderToken, the only one) chooses them (instanceauth.go).
	AuthenticationEnabled bool
	FunctionAuthProvider  string
	// ConnectorDirectories, ConnectorListenAddresses and ConnectorHosts
	// are what the builtin connectors may name in their configs
	// (connectorsAllowedDirectories, connectorsAllowedListenAddresses,
	// connectorsAllowedHosts; package functions/iopolicy has the rules):
	// directory roots of the file source and sink (none: no file
	// connector), HOST:PORTS entries for the http source (nil: loopback
	// only) and for the hosts of the jdbc-postgres sink (none: no
	// connection).
	ConnectorDirectories, ConnectorListenAddresses, ConnectorHosts []string
}

// WorkerInfo is the value of a worker's membership node.
type WorkerInfo struct {
	ID  string `json:"workerId"`
	URL string `json:"workerUrl"`
}

// Worker runs the instances assigned to it and serves the REST API.
type Worker struct {
	opts Options
	st   store
	log  *slog.Logger
	kick chan struct{}

	serviceURL, wURL string       // set by Start
	peers            *http.Client // to other workers (client.go)

	fnRules, connRules packageRules
	pkgs               PackageStore // nil: no package management (pkgstore.go)
	runAs              *account     // nil: instances run as the worker
	io                 *iopolicy.Policy

	connMu   sync.RWMutex
	dirConns map[string]dirConnector // the connectors directory's (connectors_dir.go)

	mu        sync.Mutex
	instances map[instKey]*instance
	workers   []WorkerInfo

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewWorker returns a worker; Start begins its work.
func NewWorker(o Options) (*Worker, error) {
	if o.Metadata == nil {
		return nil, errors.New("functions: Metadata is required")
	}
	if o.ID == "" || !nameRe.MatchString(o.ID) {
		return nil, fmt.Errorf("functions: worker id %q must match [-=:.\\w]+", o.ID)
	}
	if o.DataDir == "" {
		return nil, errors.New("functions: DataDir is required")
	}
	if o.Reconcile <= 0 {
		o.Reconcile = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Cluster == "" {
		o.Cluster = "standalone"
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = o.Client.TLS
	w := &Worker{opts: o, st: store{o.Metadata}, log: o.Logger, kick: make(chan struct{}, 1),
		instances: map[instKey]*instance{}, peers: &http.Client{Transport: tr, Timeout: time.Minute}}
	var err error
	if w.fnRules, err = compileRules(o.FunctionsDirectory, "functionsDirectory", o.FunctionsURLPatterns, "additionalEnabledFunctionsUrlPatterns"); err != nil {
		return nil, err
	}
	if w.connRules, err = compileRules(o.ConnectorsDirectory, "connectorsDirectory", o.ConnectorsURLPatterns, "additionalEnabledConnectorUrlPatterns"); err != nil {
		return nil, err
	}
	w.reloadConnectors()
	if err := checkAuthProvider(o.FunctionAuthProvider); err != nil {
		return nil, err
	}
	if w.io, err = newIOPolicy(o); err != nil {
		return nil, fmt.Errorf("functions: %w", err)
	}
	if os.Geteuid() == 0 {
		if o.InstanceUser == "" {
			o.InstanceUser = DefaultInstanceUser
		}
		if w.runAs, err = lookupAccount(o.InstanceUser); err != nil {
			return nil, err
		}
		if w.runAs.uid == 0 {
			return nil, fmt.Errorf("functions: functionsInstanceUser %q is root: instances of a root worker must run unprivileged", o.InstanceUser)
		}
		w.opts.InstanceUser = o.InstanceUser
	}
	// The data directory holds the packages instances execute: others may
	// search it (instances under another account), not list it.
	if err := os.MkdirAll(o.DataDir, 0o711); err != nil {
		return nil, fmt.Errorf("functions: %w", err)
	}
	return w, nil
}

func (w *Worker) workerURL() string { return w.wURL }

// Start registers the worker in the membership list and starts the
// assignment loop. serviceURL is the broker's pulsar:// URL the instances
// connect to; workerURL is this worker's http:// base URL (instances
// reach their state through it).
func (w *Worker) Start(ctx context.Context, serviceURL, workerURL string) error {
	w.serviceURL, w.wURL = serviceURL, workerURL
	info, _ := json.Marshal(WorkerInfo{ID: w.opts.ID, URL: w.workerURL()})
	p := rootWorkers + "/" + w.opts.ID
	if e, ok := w.opts.Metadata.(metadata.Ephemeraler); ok {
		if err := e.PutEphemeral(ctx, p, info); err != nil {
			return fmt.Errorf("functions: register worker: %w", err)
		}
	} else if _, err := w.opts.Metadata.Put(ctx, p, info, metadata.AnyVersion); err != nil {
		return fmt.Errorf("functions: register worker: %w", err)
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if wt, ok := w.opts.Metadata.(metadata.Watcher); ok {
		_ = wt.Watch(w.ctx, rootWorkers, func(metadata.Event) { w.Kick() })
	}
	w.wg.Add(1)
	go w.loop()
	return nil
}

// Kick makes the worker reconcile now.
func (w *Worker) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *Worker) loop() {
	defer w.wg.Done()
	t := time.NewTicker(w.opts.Reconcile)
	defer t.Stop()
	for {
		if err := w.reconcile(w.ctx); err != nil && w.ctx.Err() == nil {
			w.log.Warn("functions reconcile", "err", err)
		}
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		case <-w.kick:
		}
	}
}

// Close stops every local instance (SIGTERM, then SIGKILL after a grace
// period) and leaves the membership list.
func (w *Worker) Close() error {
	if w.cancel == nil {
		return nil
	}
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	all := make([]*instance, 0, len(w.instances))
	for k, in := range w.instances {
		all = append(all, in)
		delete(w.instances, k)
	}
	w.mu.Unlock()
	for _, in := range all {
		in.cancel()
	}
	for _, in := range all {
		<-in.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := w.opts.Metadata.Delete(ctx, rootWorkers+"/"+w.opts.ID, metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) || errors.Is(err, metadata.ErrClosed) {
		err = nil
	}
	return err
}

// liveWorkers reads the membership list.
func (w *Worker) liveWorkers(ctx context.Context) ([]WorkerInfo, error) {
	ids, err := w.st.children(ctx, rootWorkers)
	if err != nil {
		return nil, err
	}
	out := make([]WorkerInfo, 0, len(ids))
	for _, id := range ids {
		b, _, err := w.opts.Metadata.Get(ctx, rootWorkers+"/"+id)
		if err != nil {
			continue
		}
		var wi WorkerInfo
		if json.Unmarshal(b, &wi) == nil {
			out = append(out, wi)
		}
	}
	return out, nil
}

// owner picks the worker of an instance by rendezvous hashing: every
// worker computes the same answer from the same membership list, and when
// a worker leaves only its instances move.
func owner(workers []WorkerInfo, k instKey) string {
	best, bestH := "", uint64(0)
	for _, wi := range workers {
		h := fnv.New64a()
		h.Write([]byte(wi.ID))
		h.Write([]byte{0})
		h.Write([]byte(string(k.kind) + "/" + k.fqfn + "/" + strconv.Itoa(k.id)))
		if v := h.Sum64(); best == "" || v > bestH {
			best, bestH = wi.ID, v
		}
	}
	return best
}

func (w *Worker) reconcile(ctx context.Context) error {
	workers, err := w.liveWorkers(ctx)
	if err != nil {
		return err
	}
	recs, err := w.st.all(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.workers = workers
	w.mu.Unlock()
	want := map[instKey]*Record{}
	for _, r := range recs {
		for i := 0; i < r.Spec.Parallelism; i++ {
			k := instKey{kind: r.Kind, fqfn: r.Spec.FQFN(), id: i}
			if owner(workers, k) != w.opts.ID || r.Stopped[i] {
				continue
			}
			want[k] = r
		}
	}
	w.mu.Lock()
	var stop []*instance
	for k, in := range w.instances {
		r, ok := want[k]
		if !ok || r.Version != in.version || r.Restarts[k.id] != in.restart {
			stop = append(stop, in)
			delete(w.instances, k)
		}
	}
	w.mu.Unlock()
	for _, in := range stop {
		in.cancel()
		<-in.done
	}
	for k, r := range want {
		w.mu.Lock()
		_, running := w.instances[k]
		if !running {
			ictx, cancel := context.WithCancel(w.ctx)
			in := &instance{key: k, rec: r, version: r.Version, restart: r.Restarts[k.id], cancel: cancel, done: make(chan struct{})}
			w.instances[k] = in
			go w.supervise(ictx, in)
		}
		w.mu.Unlock()
		if !running {
			p := rootAssignments + "/" + string(k.kind) + "/" + k.fqfn + "/" + strconv.Itoa(k.id)
			_, _ = w.opts.Metadata.Put(ctx, p, []byte(w.opts.ID), metadata.AnyVersion)
		}
	}
	return nil
}

// local returns the local instance k, if this worker runs it.
func (w *Worker) local(k instKey) *instance {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.instances[k]
}

// ownerURL returns the base URL of the worker that should run k.
func (w *Worker) ownerURL(k instKey) (id, url string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id = owner(w.workers, k)
	for _, wi := range w.workers {
		if wi.ID == id {
			return id, wi.URL
		}
	}
	return id, ""
}
