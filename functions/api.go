package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// MaxPackage bounds an uploaded package.
const MaxPackage = 256 << 20

// Builtins lists the connectors every worker runs without a package:
// name → (kind, description).
var Builtins = []BuiltinInfo{
	{Name: "file", Description: "Reads the files of a directory (one message per line) / writes messages as lines to files", Source: true, Sink: true},
	{Name: "http", Description: "HTTP webhook: every POST body becomes a message", Source: true},
	{Name: "log", Description: "Writes every message to the instance's log (stdout)", Sink: true},
	{Name: "jdbc-postgres", Description: "Upserts messages (JSON objects) into a PostgreSQL table by key, in batches", Sink: true},
}

// BuiltinInfo is Pulsar's ConnectorDefinition, roughly.
type BuiltinInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Source      bool   `json:"-"`
	Sink        bool   `json:"-"`
}

const forwardedHeader = "X-Magnetar-Forwarded"

// kindAccess is what a role needs to manage a kind of deployment:
// superusers and tenant admins may, others need the functions, sources or
// sinks action on the namespace (Pulsar's function authorization).
var kindAccess = map[Kind]auth.Access{KindFunction: auth.AccessFunctions, KindSource: auth.AccessSources, KindSink: auth.AccessSinks}

// Register declares /admin/v3/functions, /admin/v3/sources and
// /admin/v3/sinks on rt, and the worker's own /admin/v2/worker and
// /admin/v2/worker-stats (workerapi.go).
func (w *Worker) Register(rt *httpapi.Table) {
	for _, k := range []Kind{KindFunction, KindSource, KindSink} {
		base := "/admin/v3/" + string(k)
		fn := base + "/{tenant}/{namespace}/{name}"
		acc := kindAccess[k]
		route := func(name, method, pattern string, h func(*call)) httpapi.Route {
			return httpapi.Route{Name: string(k) + "." + name, Method: method, Pattern: pattern, Access: acc, Handler: w.kindHandler(k, h)}
		}
		upload := func(name, method string, h func(*call)) httpapi.Route {
			r := route(name, method, fn, h)
			r.Consumes, r.MaxBody = []string{httpapi.Multipart, httpapi.JSON}, httpapi.MaxPackageBody
			return r
		}
		rt.Add(
			route("list", http.MethodGet, base+"/{tenant}/{namespace}", w.handleList),
			upload("create", http.MethodPost, w.handleCreate),
			upload("update", http.MethodPut, w.handleUpdate),
			route("delete", http.MethodDelete, fn, w.handleDelete),
			route("get", http.MethodGet, fn, w.handleGet),
			route("status", http.MethodGet, fn+"/status", w.handleStatus),
			route("instance.status", http.MethodGet, fn+"/{instance}/status", w.handleStatus),
			route("stats", http.MethodGet, fn+"/stats", w.handleStats),
			route("instance.stats", http.MethodGet, fn+"/{instance}/stats", w.handleStats),
		)
		for _, op := range []string{"start", "stop", "restart"} {
			rt.Add(route(op, http.MethodPost, fn+"/"+op, w.handleControl(op)),
				route("instance."+op, http.MethodPost, fn+"/{instance}/"+op, w.handleControl(op)))
		}
	}
	fn := "/admin/v3/functions/{tenant}/{namespace}/{name}"
	multipart := []string{httpapi.Multipart}
	rt.Add(
		httpapi.Route{Name: "functions.trigger", Method: http.MethodPost, Pattern: fn + "/trigger", Access: auth.AccessFunctions,
			Consumes: multipart, MaxBody: 16 << 20, Handler: w.kindHandler(KindFunction, w.handleTrigger)},
		httpapi.Route{Name: "functions.state.get", Method: http.MethodGet, Pattern: fn + "/state/{key}", Access: auth.AccessFunctions,
			Response: State{}, Handler: w.kindHandler(KindFunction, w.handleGetState)},
		httpapi.Route{Name: "functions.state.put", Method: http.MethodPost, Pattern: fn + "/state/{key}", Access: auth.AccessFunctions,
			Consumes: []string{httpapi.Multipart, httpapi.JSON}, Request: State{}, Response: State{}, Handler: w.kindHandler(KindFunction, w.handlePutState)},
		// The SDK sends a counter's delta as a decimal number in
		// text/plain (a JSON number is the same bytes).
		httpapi.Route{Name: "functions.counter.incr", Method: http.MethodPost, Pattern: fn + "/counter/{key}", Access: auth.AccessFunctions,
			Consumes: []string{httpapi.JSON, "text/plain"}, Response: State{}, Handler: w.kindHandler(KindFunction, w.handleIncr)},
		// Pulsar's upload and download by path: a superuser's files,
		// kept in the worker's store (pkgstore.go).
		httpapi.Route{Name: "functions.upload", Method: http.MethodPost, Pattern: "/admin/v3/functions/upload", Access: auth.AccessSuperUser,
			Consumes: multipart, MaxBody: httpapi.MaxPackageBody, Handler: w.handleUploadByPath},
		httpapi.Route{Name: "functions.download", Method: http.MethodGet, Pattern: "/admin/v3/functions/download", Access: auth.AccessSuperUser,
			Handler: w.handleDownloadByPath},
		httpapi.Route{Name: "functions.function.download", Method: http.MethodGet, Pattern: fn + "/download", Access: auth.AccessFunctions,
			Handler: w.kindHandler(KindFunction, w.handleDownload)},
		httpapi.Route{Name: "sources.builtins", Method: http.MethodGet, Pattern: "/admin/v3/sources/builtinsources", Access: auth.AccessAny,
			Response: []BuiltinInfo{}, Handler: w.builtinList(true)},
		httpapi.Route{Name: "sinks.builtins", Method: http.MethodGet, Pattern: "/admin/v3/sinks/builtinsinks", Access: auth.AccessAny,
			Response: []BuiltinInfo{}, Handler: w.builtinList(false)},
		// Rescan the connectors directory (connectors_dir.go).
		httpapi.Route{Name: "sources.builtins.reload", Method: http.MethodPost, Pattern: "/admin/v3/sources/reloadBuiltInSources", Access: auth.AccessSuperUser,
			Handler: w.handleReloadConnectors},
		httpapi.Route{Name: "sinks.builtins.reload", Method: http.MethodPost, Pattern: "/admin/v3/sinks/reloadBuiltInSinks", Access: auth.AccessSuperUser,
			Handler: w.handleReloadConnectors},
		httpapi.Route{Name: "functions.connectors", Method: http.MethodGet, Pattern: "/admin/v3/functions/connectors", Access: auth.AccessAny,
			Response: []BuiltinInfo{}, Handler: w.builtinList(true)},
	)
	w.registerWorkerRoutes(rt) // workerapi.go
}

type call struct {
	kind                  Kind
	tenant, ns, name, key string
	instance              int // -1: all
	w                     http.ResponseWriter
	r                     *http.Request
	ctx                   context.Context
	cancel                context.CancelFunc
	hasInstance, fwdLocal bool
	log                   *slog.Logger
}

func (w *Worker) kindHandler(k Kind, h func(*call)) httpapi.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request, p httpapi.Params) {
		c := &call{kind: k, tenant: p["tenant"], ns: p["namespace"], name: p["name"], key: p["key"], instance: -1, w: rw, r: r, log: w.log}
		if s, ok := p["instance"]; ok {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				httpapi.WriteError(rw, http.StatusBadRequest, fmt.Sprintf("instance id %q is not a non-negative integer", s))
				return
			}
			c.instance, c.hasInstance = n, true
		}
		c.fwdLocal = r.Header.Get(forwardedHeader) != ""
		c.ctx, c.cancel = context.WithTimeout(r.Context(), 60*time.Second)
		defer c.cancel()
		h(c)
	}
}

func (c *call) fail(err error) {
	switch {
	case errors.Is(err, ErrBadConfig), errors.Is(err, ErrExists):
		httpapi.WriteError(c.w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrNotFound):
		httpapi.WriteError(c.w, http.StatusNotFound, err.Error())
	case errors.Is(err, auth.ErrAuthorization):
		httpapi.WriteError(c.w, http.StatusForbidden, strings.TrimPrefix(err.Error(), auth.ErrAuthorization.Error()+": "))
	default:
		httpapi.InternalError(c.w, c.log, "functions", err)
	}
}

func (w *Worker) builtinList(source bool) httpapi.HandlerFunc {
	return func(rw http.ResponseWriter, _ *http.Request, _ httpapi.Params) {
		httpapi.WriteJSON(rw, http.StatusOK, w.connectorList(source))
	}
}

func configPart(k Kind) string {
	switch k {
	case KindSource:
		return "sourceConfig"
	case KindSink:
		return "sinkConfig"
	}
	return "functionConfig"
}

// upload is a create or update request: the configuration part (or a
// JSON body), the package (a "data" file part, or a "url" of the form
// builtin://NAME, file:///path or http(s)://...) and an update's
// updateOptions part (Pulsar's UpdateOptions JSON).
type upload struct {
	cfg, pkg, updateOptions []byte
	url                     string
}

// readUpload parses a create/update request.
func (c *call) readUpload() (up upload, err error) {
	ct := c.r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		up.cfg, err = io.ReadAll(io.LimitReader(c.r.Body, 4<<20))
		return up, err
	}
	c.r.Body = http.MaxBytesReader(c.w, c.r.Body, MaxPackage+8<<20)
	if err := c.r.ParseMultipartForm(32 << 20); err != nil {
		return up, badf("multipart form: %v", err)
	}
	defer c.r.MultipartForm.RemoveAll()
	readPart := func(name string) ([]byte, error) {
		if v, ok := c.r.MultipartForm.Value[name]; ok && len(v) > 0 {
			return []byte(v[0]), nil
		}
		if fh, ok := c.r.MultipartForm.File[name]; ok && len(fh) > 0 {
			if fh[0].Size > MaxPackage {
				return nil, badf("part %s is %d bytes, over %d", name, fh[0].Size, MaxPackage)
			}
			f, err := fh[0].Open()
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return io.ReadAll(f)
		}
		return nil, nil
	}
	if up.cfg, err = readPart(configPart(c.kind)); err != nil {
		return up, err
	}
	if up.pkg, err = readPart("data"); err != nil {
		return up, err
	}
	if up.updateOptions, err = readPart("updateOptions"); err != nil {
		return up, err
	}
	u, err := readPart("url")
	up.url = string(u)
	return up, err
}

// mergeJSON overlays upd's non-null top-level fields on base.
func mergeJSON(base, upd []byte) ([]byte, error) {
	var b, u map[string]json.RawMessage
	if err := json.Unmarshal(base, &b); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(upd, &u); err != nil {
		return nil, badf("config JSON: %v", err)
	}
	for k, v := range u {
		if string(v) != "null" {
			b[k] = v
		}
	}
	return json.Marshal(b)
}

// parseConfig decodes a configuration of kind k, fills tenant, namespace
// and name from the path, and returns its normal form and spec.
func parseConfig(k Kind, raw []byte, t, ns, name string) (json.RawMessage, *Spec, string, error) {
	var target interface{ Spec() (*Spec, error) }
	var archive *string
	switch k {
	case KindFunction:
		c := &FunctionConfig{}
		target, archive = c, &c.Go
	case KindSource:
		c := &SourceConfig{}
		target, archive = c, &c.Archive
	case KindSink:
		c := &SinkConfig{}
		target, archive = c, &c.Archive
	}
	if len(raw) == 0 {
		return nil, nil, "", badf("missing %s", configPart(k))
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(target); err != nil {
		return nil, nil, "", badf("%s JSON: %v", configPart(k), err)
	}
	// The path names the deployment; a body that names another is an error.
	set := func(field *string, v, what string) error {
		if *field != "" && *field != v {
			return badf("%s %q in the config differs from %q in the path", what, *field, v)
		}
		*field = v
		return nil
	}
	var tp, np, nm *string
	switch c := target.(type) {
	case *FunctionConfig:
		tp, np, nm = &c.Tenant, &c.Namespace, &c.Name
		c.FQFN = ""
	case *SourceConfig:
		tp, np, nm = &c.Tenant, &c.Namespace, &c.Name
	case *SinkConfig:
		tp, np, nm = &c.Tenant, &c.Namespace, &c.Name
	}
	for _, f := range []struct {
		p    *string
		v, w string
	}{{tp, t, "tenant"}, {np, ns, "namespace"}, {nm, name, "name"}} {
		if err := set(f.p, f.v, f.w); err != nil {
			return nil, nil, "", err
		}
	}
	spec, err := target.Spec()
	if err != nil {
		return nil, nil, "", err
	}
	norm, _ := json.Marshal(target)
	return norm, spec, *archive, nil
}

func (w *Worker) resolvePackage(ctx context.Context, k Kind, pkg []byte, url, archive string) (string, error) {
	if len(pkg) > 0 {
		return w.st.putPackage(ctx, pkg)
	}
	if url == "" {
		url = archive
	}
	switch {
	case strings.HasPrefix(url, "builtin://"):
		name := strings.TrimPrefix(url, "builtin://")
		if isCompiledBuiltin(name) {
			return url, nil
		}
		// A connector of the connectors directory: looked up by name
		// among those scanned, never a path (connectors_dir.go).
		if id, found, err := w.resolveDirConnector(ctx, k, name); found {
			return id, err
		}
		return "", badf("no builtin connector %q", name)
	case url == "":
		return "", nil
	}
	// file:// and http(s):// are checked against the operator's roots
	// and patterns before anything is read or contacted (packages.go).
	data, err := w.fetchPackage(ctx, k, url)
	if err != nil {
		return "", err
	}
	return w.st.putPackage(ctx, data)
}

func (w *Worker) handleCreate(c *call) {
	up, err := c.readUpload()
	if err != nil {
		c.fail(err)
		return
	}
	norm, spec, archive, err := parseConfig(c.kind, up.cfg, c.tenant, c.ns, c.name)
	if err != nil {
		c.fail(err)
		return
	}
	// The function runs with its submitter's credentials (instanceauth.go).
	cred, err := w.cacheAuth(c.r)
	if err != nil {
		c.fail(err)
		return
	}
	id, err := w.resolvePackage(c.ctx, c.kind, up.pkg, up.url, archive)
	if err != nil {
		c.fail(err)
		return
	}
	if id == "" {
		c.fail(badf("no package: upload the executable as the data part or give a url"))
		return
	}
	spec.Package = id
	if err := w.checkIO(c.kind, spec); err != nil {
		c.fail(err)
		return
	}
	rec := &Record{Kind: c.kind, Config: norm, Spec: spec, Package: id, Version: 1, Auth: cred}
	if err := w.st.put(c.ctx, rec, -2); err != nil {
		c.fail(err)
		return
	}
	w.Kick()
	c.w.WriteHeader(http.StatusNoContent)
}

func (w *Worker) handleUpdate(c *call) {
	up, err := c.readUpload()
	if err != nil {
		c.fail(err)
		return
	}
	cfg, pkg, url := up.cfg, up.pkg, up.url
	// The stored credentials stay unless updateOptions.updateAuthData
	// asks for the updater's (instanceauth.go).
	newAuth, replaceAuth, err := w.updateAuth(c.r, up.updateOptions)
	if err != nil {
		c.fail(err)
		return
	}
	var old string
	_, err = w.st.update(c.ctx, c.kind, c.tenant, c.ns, c.name, func(r *Record) error {
		merged := []byte(r.Config)
		if len(cfg) > 0 {
			if merged, err = mergeJSON(r.Config, cfg); err != nil {
				return err
			}
		}
		norm, spec, archive, err := parseConfig(c.kind, merged, c.tenant, c.ns, c.name)
		if err != nil {
			return err
		}
		id := r.Package
		if len(pkg) > 0 || url != "" || (archive != "" && archive != r.Spec.Package && strings.HasPrefix(archive, "builtin://")) {
			if id, err = w.resolvePackage(c.ctx, c.kind, pkg, url, archive); err != nil {
				return err
			}
		}
		old = r.Package
		spec.Package = id
		if err := w.checkIO(c.kind, spec); err != nil {
			return err
		}
		r.Config, r.Spec, r.Package = norm, spec, id
		if replaceAuth {
			r.Auth = newAuth
		}
		r.Version++
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	if old != "" && !w.packageInUse(c.ctx, old) {
		w.st.deletePackage(c.ctx, old)
	}
	w.Kick()
	c.w.WriteHeader(http.StatusNoContent)
}

func (w *Worker) packageInUse(ctx context.Context, id string) bool {
	recs, err := w.st.all(ctx)
	if err != nil {
		return true
	}
	for _, r := range recs {
		if r.Package == id {
			return true
		}
	}
	used, err := w.st.uploadInUse(ctx, id)
	return used || err != nil
}

func (w *Worker) handleDelete(c *call) {
	r, _, err := w.st.get(c.ctx, c.kind, c.tenant, c.ns, c.name)
	if err != nil {
		c.fail(err)
		return
	}
	if err := w.st.delete(c.ctx, c.kind, c.tenant, c.ns, c.name); err != nil {
		c.fail(err)
		return
	}
	if !w.packageInUse(c.ctx, r.Package) {
		w.st.deletePackage(c.ctx, r.Package)
	}
	if c.kind == KindFunction {
		w.st.deleteState(c.ctx, c.tenant, c.ns, c.name)
	}
	w.Kick()
	c.w.WriteHeader(http.StatusNoContent)
}

func (w *Worker) handleGet(c *call) {
	r, _, err := w.st.get(c.ctx, c.kind, c.tenant, c.ns, c.name)
	if err != nil {
		c.fail(err)
		return
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(r.Config)
}

func (w *Worker) handleList(c *call) {
	names, err := w.st.list(c.ctx, c.kind, c.tenant, c.ns)
	if err != nil {
		c.fail(err)
		return
	}
	httpapi.WriteJSON(c.w, http.StatusOK, names)
}

func (w *Worker) handleControl(op string) func(*call) {
	return func(c *call) {
		_, err := w.st.update(c.ctx, c.kind, c.tenant, c.ns, c.name, func(r *Record) error {
			ids := []int{c.instance}
			if c.instance < 0 {
				ids = ids[:0]
				for i := 0; i < r.Spec.Parallelism; i++ {
					ids = append(ids, i)
				}
			} else if c.instance >= r.Spec.Parallelism {
				return fmt.Errorf("%w: instance %d of %s (parallelism %d)", ErrNotFound, c.instance, r.Spec.FQFN(), r.Spec.Parallelism)
			}
			if r.Stopped == nil {
				r.Stopped = map[int]bool{}
			}
			if r.Restarts == nil {
				r.Restarts = map[int]int64{}
			}
			for _, i := range ids {
				switch op {
				case "start":
					delete(r.Stopped, i)
				case "stop":
					r.Stopped[i] = true
				case "restart":
					delete(r.Stopped, i)
					r.Restarts[i]++
				}
			}
			return nil
		})
		if err != nil {
			c.fail(err)
			return
		}
		w.Kick()
		c.w.WriteHeader(http.StatusNoContent)
	}
}
