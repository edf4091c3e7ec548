package packages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// Disabled is the answer of every route when package management is off
// (Pulsar's enablePackagesManagement=false): 503.
const Disabled = "Package Management Service is not enabled in the broker."

// maxMetadata bounds the metadata part of an upload and the body of a
// metadata update.
const maxMetadata = 1 << 20

// Register declares /admin/v3/packages on rt, served by s; with s nil
// every route answers 503 (package management is off). Every route takes
// AccessPackages: superusers, the tenant's admins, or the packages
// permission on the namespace, as Pulsar's canDoPackageOps.
func Register(rt *httpapi.Table, s *Store, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &api{s: s, log: log}
	const base = "/admin/v3/packages/{type}/{tenant}/{namespace}"
	const version = base + "/{packageName}/{version}"
	route := func(name, method, pattern string, h httpapi.HandlerFunc) httpapi.Route {
		return httpapi.Route{Name: "packages." + name, Method: method, Pattern: pattern, Access: auth.AccessPackages, Handler: a.enabled(h)}
	}
	list := route("list", http.MethodGet, base, a.list)
	list.Response = []string{}
	versions := route("versions", http.MethodGet, base+"/{packageName}", a.versions)
	versions.Response = []string{}
	upload := route("upload", http.MethodPost, version, a.upload)
	upload.Consumes, upload.MaxBody = []string{httpapi.Multipart}, httpapi.MaxPackageBody
	getMeta := route("metadata.get", http.MethodGet, version+"/metadata", a.getMetadata)
	getMeta.Response = Metadata{}
	putMeta := route("metadata.update", http.MethodPut, version+"/metadata", a.updateMetadata)
	putMeta.Request = Metadata{}
	rt.Add(list, versions, upload, getMeta, putMeta,
		route("download", http.MethodGet, version, a.download),
		route("delete", http.MethodDelete, version, a.delete))
}

type api struct {
	s   *Store
	log *slog.Logger
}

func (a *api) enabled(h httpapi.HandlerFunc) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
		if a.s == nil {
			httpapi.WriteError(w, http.StatusServiceUnavailable, Disabled)
			return
		}
		h(w, r, p)
	}
}

// fail answers err with Pulsar's status: a bad name or type 412, an
// absent (or, on upload, an existing) package 404.
func (a *api) fail(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, ErrBadName):
		httpapi.WriteError(w, http.StatusPreconditionFailed, err.Error())
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrExists):
		httpapi.WriteError(w, http.StatusNotFound, err.Error())
	case errors.As(err, &tooBig):
		httpapi.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the package is over %d bytes", tooBig.Limit))
	case errors.Is(err, errBadRequest):
		httpapi.WriteError(w, http.StatusBadRequest, err.Error())
	default:
		httpapi.InternalError(w, a.log, "packages", err)
	}
}

var errBadRequest = errors.New("bad request")

func name(p httpapi.Params) (Name, error) {
	return NameOf(p["type"], p["tenant"], p["namespace"], p["packageName"], p["version"])
}

func ctxOf(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 10*time.Minute)
}

func (a *api) list(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	t, err := ParseType(p["type"])
	if err != nil {
		a.fail(w, err)
		return
	}
	out, err := a.s.List(r.Context(), t, p["tenant"], p["namespace"])
	if err != nil {
		a.fail(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (a *api) versions(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	n, err := NameOf(p["type"], p["tenant"], p["namespace"], p["packageName"], "")
	if err != nil {
		a.fail(w, err)
		return
	}
	out, err := a.s.Versions(r.Context(), n)
	if err != nil {
		a.fail(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (a *api) getMetadata(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	n, err := name(p)
	if err != nil {
		a.fail(w, err)
		return
	}
	m, err := a.s.GetMetadata(r.Context(), n)
	if err != nil {
		a.fail(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, m)
}

func (a *api) updateMetadata(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	n, err := name(p)
	if err != nil {
		a.fail(w, err)
		return
	}
	var m *Metadata
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadata)).Decode(&m); err != nil && !errors.Is(err, io.EOF) {
		a.fail(w, fmt.Errorf("%w: package metadata: %v", errBadRequest, err))
		return
	}
	if m == nil {
		a.fail(w, fmt.Errorf("%w: Unknown error, metadata is null when processing update package metadata request", errBadRequest))
		return
	}
	if err := a.s.UpdateMetadata(r.Context(), n, *m); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) delete(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	n, err := name(p)
	if err != nil {
		a.fail(w, err)
		return
	}
	if err := a.s.Delete(r.Context(), n); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// download streams the contents; the status is sent with the first
// bytes, so a failure after that aborts the connection (the client sees
// a truncated answer, never a wrong complete one).
func (a *api) download(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	n, err := name(p)
	if err != nil {
		a.fail(w, err)
		return
	}
	if _, err := a.s.GetMetadata(r.Context(), n); err != nil {
		if errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("%w: Package '%s' does not exist", ErrNotFound, n)
		}
		a.fail(w, err)
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	sw := &startWriter{w: w}
	if err := a.s.Download(ctx, n, sw); err != nil {
		if !sw.started {
			a.fail(w, err)
			return
		}
		a.log.Warn("packages: download failed after the answer began", "package", n.String(), "err", err)
		panic(http.ErrAbortHandler)
	}
	sw.start()
}

// startWriter sends the 200 header with the first bytes.
type startWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *startWriter) start() {
	if !s.started {
		s.started = true
		s.w.Header().Set("Content-Type", httpapi.OctetStream)
		s.w.WriteHeader(http.StatusOK)
	}
}

func (s *startWriter) Write(b []byte) (int, error) {
	s.start()
	return s.w.Write(b)
}

// upload reads the multipart parts in order: "metadata" (Pulsar's
// PackageMetadata JSON) and "file" (the contents, streamed into the
// ledger). Pulsar's clients send the metadata first; a file before its
// metadata is stored all the same and the metadata applied after.
func (a *api) upload(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	n, err := name(p)
	if err != nil {
		a.fail(w, err)
		return
	}
	if _, params, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || params["boundary"] == "" {
		a.fail(w, fmt.Errorf("%w: want a multipart/form-data body with a boundary", errBadRequest))
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		a.fail(w, fmt.Errorf("%w: multipart body: %v", errBadRequest, err))
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	var meta *Metadata
	var pu *Pending
	defer func() {
		if pu != nil {
			pu.Abort(ctx) // no-op once committed
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			a.fail(w, badBody(err))
			return
		}
		switch part.FormName() {
		case "metadata":
			if err := json.NewDecoder(io.LimitReader(part, maxMetadata)).Decode(&meta); err != nil {
				a.fail(w, fmt.Errorf("%w: package metadata: %v", errBadRequest, err))
				return
			}
		case "file":
			if pu != nil {
				a.fail(w, fmt.Errorf("%w: two file parts", errBadRequest))
				return
			}
			// Pulsar's Java client sends the file before the metadata:
			// the contents go to a ledger now, the record once the
			// metadata is known.
			if pu, err = a.s.WriteContents(ctx, n, part); err != nil {
				a.fail(w, badBody(err))
				return
			}
		}
		part.Close()
	}
	if pu == nil {
		a.fail(w, fmt.Errorf("%w: no file part: send the package as the multipart part \"file\"", errBadRequest))
		return
	}
	if meta == nil {
		a.fail(w, fmt.Errorf("%w: Unknown error, metadata is null when processing update package metadata request", errBadRequest))
		return
	}
	if err := pu.Commit(ctx, *meta); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// badBody turns a truncated or malformed body into a 400 (an oversized
// one stays a MaxBytesError: 413).
func badBody(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) || errors.Is(err, ErrExists) || errors.Is(err, ErrBadName) || errors.Is(err, errBadRequest) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return err
}
