package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
)

// RouteTable is where the REST API registers (broker.Router).
type RouteTable interface {
	Handle(method, pattern string, h broker.HandlerFunc)
}

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

// Register adds /admin/v3/functions, /admin/v3/sources and
// /admin/v3/sinks to rt.
func (w *Worker) Register(rt RouteTable) {
	for _, k := range []Kind{KindFunction, KindSource, KindSink} {
		base := "/admin/v3/" + string(k)
		fn := base + "/{tenant}/{namespace}/{name}"
		rt.Handle(http.MethodGet, base+"/{tenant}/{namespace}", w.kindHandler(k, w.handleList))
		rt.Handle(http.MethodPost, fn, w.kindHandler(k, w.handleCreate))
		rt.Handle(http.MethodPut, fn, w.kindHandler(k, w.handleUpdate))
		rt.Handle(http.MethodDelete, fn, w.kindHandler(k, w.handleDelete))
		rt.Handle(http.MethodGet, fn, w.kindHandler(k, w.handleGet))
		rt.Handle(http.MethodGet, fn+"/status", w.kindHandler(k, w.handleStatus))
		rt.Handle(http.MethodGet, fn+"/{instance}/status", w.kindHandler(k, w.handleStatus))
		rt.Handle(http.MethodGet, fn+"/stats", w.kindHandler(k, w.handleStats))
		rt.Handle(http.MethodGet, fn+"/{instance}/stats", w.kindHandler(k, w.handleStats))
		for _, op := range []string{"start", "stop", "restart"} {
			rt.Handle(http.MethodPost, fn+"/"+op, w.kindHandler(k, w.handleControl(op)))
			rt.Handle(http.MethodPost, fn+"/{instance}/"+op, w.kindHandler(k, w.handleControl(op)))
		}
	}
	fn := "/admin/v3/functions/{tenant}/{namespace}/{name}"
	rt.Handle(http.MethodPost, fn+"/trigger", w.kindHandler(KindFunction, w.handleTrigger))
	rt.Handle(http.MethodGet, fn+"/state/{key}", w.kindHandler(KindFunction, w.handleGetState))
	rt.Handle(http.MethodPost, fn+"/state/{key}", w.kindHandler(KindFunction, w.handlePutState))
	rt.Handle(http.MethodPost, fn+"/counter/{key}", w.kindHandler(KindFunction, w.handleIncr))
	rt.Handle(http.MethodGet, "/admin/v3/sources/builtinsources", w.builtinList(true))
	rt.Handle(http.MethodGet, "/admin/v3/sinks/builtinsinks", w.builtinList(false))
	rt.Handle(http.MethodGet, "/admin/v3/functions/connectors", w.builtinList(true))
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
}

func (w *Worker) kindHandler(k Kind, h func(*call)) broker.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request, p broker.Params) {
		c := &call{kind: k, tenant: p["tenant"], ns: p["namespace"], name: p["name"], key: p["key"], instance: -1, w: rw, r: r}
		if s, ok := p["instance"]; ok {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				broker.WriteError(rw, http.StatusBadRequest, fmt.Sprintf("instance id %q is not a non-negative integer", s))
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
		broker.WriteError(c.w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrNotFound):
		broker.WriteError(c.w, http.StatusNotFound, err.Error())
	default:
		broker.WriteError(c.w, http.StatusInternalServerError, err.Error())
	}
}

func (w *Worker) builtinList(source bool) broker.HandlerFunc {
	return func(rw http.ResponseWriter, _ *http.Request, _ broker.Params) {
		out := []map[string]string{}
		for _, b := range Builtins {
			if (source && b.Source) || (!source && b.Sink) {
				out = append(out, map[string]string{"name": b.Name, "description": b.Description})
			}
		}
		broker.WriteJSON(rw, http.StatusOK, out)
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

// readUpload parses a create/update request: the configuration part (or
// a JSON body) and the package (a "data" file part, or a "url" of the
// form builtin://NAME or file:///path).
func (c *call) readUpload() (cfg []byte, pkg []byte, url string, err error) {
	ct := c.r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		cfg, err = io.ReadAll(io.LimitReader(c.r.Body, 4<<20))
		return cfg, nil, "", err
	}
	c.r.Body = http.MaxBytesReader(c.w, c.r.Body, MaxPackage+8<<20)
	if err := c.r.ParseMultipartForm(32 << 20); err != nil {
		return nil, nil, "", badf("multipart form: %v", err)
	}
	defer c.r.MultipartForm.RemoveAll()
	readPart := func(name string) ([]byte, bool, error) {
		if v, ok := c.r.MultipartForm.Value[name]; ok && len(v) > 0 {
			return []byte(v[0]), true, nil
		}
		if fh, ok := c.r.MultipartForm.File[name]; ok && len(fh) > 0 {
			if fh[0].Size > MaxPackage {
				return nil, true, badf("part %s is %d bytes, over %d", name, fh[0].Size, MaxPackage)
			}
			f, err := fh[0].Open()
			if err != nil {
				return nil, true, err
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			return b, true, err
		}
		return nil, false, nil
	}
	if cfg, _, err = readPart(configPart(c.kind)); err != nil {
		return nil, nil, "", err
	}
	if pkg, _, err = readPart("data"); err != nil {
		return nil, nil, "", err
	}
	u, _, err := readPart("url")
	return cfg, pkg, string(u), err
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

func (w *Worker) resolvePackage(ctx context.Context, pkg []byte, url, archive string) (string, error) {
	if len(pkg) > 0 {
		return w.st.putPackage(ctx, pkg)
	}
	if url == "" {
		url = archive
	}
	switch {
	case strings.HasPrefix(url, "builtin://"):
		name := strings.TrimPrefix(url, "builtin://")
		for _, b := range Builtins {
			if b.Name == name {
				return url, nil
			}
		}
		return "", badf("no builtin connector %q", name)
	case strings.HasPrefix(url, "file://"):
		data, err := os.ReadFile(strings.TrimPrefix(url, "file://"))
		if err != nil {
			return "", badf("package url %s: %v", url, err)
		}
		return w.st.putPackage(ctx, data)
	case url == "":
		return "", nil
	}
	return "", badf("package url %q: want builtin://NAME or file:///path (or upload the package as the data part)", url)
}

func (w *Worker) handleCreate(c *call) {
	cfg, pkg, url, err := c.readUpload()
	if err != nil {
		c.fail(err)
		return
	}
	norm, spec, archive, err := parseConfig(c.kind, cfg, c.tenant, c.ns, c.name)
	if err != nil {
		c.fail(err)
		return
	}
	id, err := w.resolvePackage(c.ctx, pkg, url, archive)
	if err != nil {
		c.fail(err)
		return
	}
	if id == "" {
		c.fail(badf("no package: upload the executable as the data part or give a url"))
		return
	}
	spec.Package = id
	rec := &Record{Kind: c.kind, Config: norm, Spec: spec, Package: id, Version: 1}
	if err := w.st.put(c.ctx, rec, -2); err != nil {
		c.fail(err)
		return
	}
	w.Kick()
	c.w.WriteHeader(http.StatusNoContent)
}

func (w *Worker) handleUpdate(c *call) {
	cfg, pkg, url, err := c.readUpload()
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
			if id, err = w.resolvePackage(c.ctx, pkg, url, archive); err != nil {
				return err
			}
		}
		old = r.Package
		spec.Package = id
		r.Config, r.Spec, r.Package = norm, spec, id
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
	return false
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
	broker.WriteJSON(c.w, http.StatusOK, names)
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
