package functions

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata"
)

// PackageStore reads the packages of Pulsar's package management
// (package packages) for function://, source:// and sink:// package
// URLs. Fetch authorizes the role in ctx itself (the packages permission
// on the package's namespace, as its REST routes require) and returns at
// most limit bytes.
type PackageStore interface {
	Fetch(ctx context.Context, url string, limit int64) ([]byte, error)
}

// UsePackages makes p the worker's package store; call it before Start.
// Without one, package-management URLs are refused with 400.
func (w *Worker) UsePackages(p PackageStore) { w.pkgs = p }

// packageSchemes are the URL schemes of package management.
var packageSchemes = map[string]bool{"function": true, "source": true, "sink": true}

// fetchManaged reads a package-management URL through the store.
func (w *Worker) fetchManaged(ctx context.Context, raw string) ([]byte, error) {
	if w.pkgs == nil {
		return nil, fmt.Errorf("%w %q: package management is not available on this worker", ErrPackageURL, raw)
	}
	data, err := w.pkgs.Fetch(ctx, raw, MaxPackage)
	if errors.Is(err, auth.ErrAuthorization) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrPackageURL, raw, err)
	}
	return data, nil
}

// Uploads by path (Pulsar's /admin/v3/functions/upload and download?path=):
// a superuser's files, kept in the worker's package store (content
// addressed, like deployed packages) under an index node per path:
//
//	/functions/uploads/{hex(path)}  {"path": PATH, "package": "sha256:HEX"}
//
// A path is a key, never a file name: nothing outside the store is read.
const rootUploads = "/functions/uploads"

// maxUploadPath bounds an upload's path.
const maxUploadPath = 1024

type uploadIndex struct {
	Path    string `json:"path"`
	Package string `json:"package"`
}

func uploadPath(p string) string { return rootUploads + "/" + hex.EncodeToString([]byte(p)) }

func checkUploadPath(p string) error {
	if strings.TrimSpace(p) == "" {
		return badf("path is empty")
	}
	if len(p) > maxUploadPath {
		return badf("path is %d bytes, over %d", len(p), maxUploadPath)
	}
	return nil
}

// uploadInUse reports whether an upload index names package id.
func (s store) uploadInUse(ctx context.Context, id string) (bool, error) {
	kids, err := s.children(ctx, rootUploads)
	if err != nil {
		return true, err
	}
	for _, k := range kids {
		b, _, err := s.md.Get(ctx, rootUploads+"/"+k)
		if errors.Is(err, metadata.ErrNotFound) {
			continue
		}
		if err != nil {
			return true, err
		}
		var u uploadIndex
		if json.Unmarshal(b, &u) == nil && u.Package == id {
			return true, nil
		}
	}
	return false, nil
}

func (w *Worker) handleUploadByPath(rw http.ResponseWriter, r *http.Request, _ httpapi.Params) {
	r.Body = http.MaxBytesReader(rw, r.Body, MaxPackage+8<<20)
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpapi.WriteError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("the upload is over %d bytes", tooBig.Limit))
			return
		}
		httpapi.WriteError(rw, http.StatusBadRequest, "multipart form: "+err.Error())
		return
	}
	defer r.MultipartForm.RemoveAll()
	path := r.FormValue("path")
	if err := checkUploadPath(path); err != nil {
		httpapi.WriteError(rw, http.StatusBadRequest, err.Error())
		return
	}
	fh := r.MultipartForm.File["data"]
	if len(fh) == 0 {
		httpapi.WriteError(rw, http.StatusBadRequest, "no data part: send the file as the multipart part \"data\"")
		return
	}
	if fh[0].Size > MaxPackage {
		httpapi.WriteError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("the file is %d bytes, over %d", fh[0].Size, MaxPackage))
		return
	}
	f, err := fh[0].Open()
	if err != nil {
		httpapi.InternalError(rw, w.log, "functions upload", err)
		return
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		httpapi.InternalError(rw, w.log, "functions upload", err)
		return
	}
	ctx := r.Context()
	id, err := w.st.putPackage(ctx, data)
	if err != nil {
		httpapi.InternalError(rw, w.log, "functions upload", err)
		return
	}
	b, _ := json.Marshal(uploadIndex{Path: path, Package: id})
	var old uploadIndex
	if ob, _, err := w.st.md.Get(ctx, uploadPath(path)); err == nil {
		_ = json.Unmarshal(ob, &old)
	}
	if _, err := w.st.md.Put(ctx, uploadPath(path), b, metadata.AnyVersion); err != nil {
		httpapi.InternalError(rw, w.log, "functions upload", err)
		return
	}
	if old.Package != "" && old.Package != id && !w.packageInUse(ctx, old.Package) {
		w.st.deletePackage(ctx, old.Package)
	}
	rw.WriteHeader(http.StatusNoContent)
}

func (w *Worker) handleDownloadByPath(rw http.ResponseWriter, r *http.Request, _ httpapi.Params) {
	path := r.URL.Query().Get("path")
	if err := checkUploadPath(path); err != nil {
		httpapi.WriteError(rw, http.StatusBadRequest, err.Error())
		return
	}
	b, _, err := w.st.md.Get(r.Context(), uploadPath(path))
	if errors.Is(err, metadata.ErrNotFound) {
		httpapi.WriteError(rw, http.StatusNotFound, fmt.Sprintf("no file uploaded at path %q", path))
		return
	}
	if err != nil {
		httpapi.InternalError(rw, w.log, "functions download", err)
		return
	}
	var u uploadIndex
	if err := json.Unmarshal(b, &u); err != nil {
		httpapi.InternalError(rw, w.log, "functions download", err)
		return
	}
	w.sendPackage(rw, r.Context(), u.Package)
}

// handleDownload answers a function's package (Pulsar's
// /admin/v3/functions/{tenant}/{namespace}/{name}/download).
func (w *Worker) handleDownload(c *call) {
	rec, _, err := w.st.get(c.ctx, c.kind, c.tenant, c.ns, c.name)
	if err != nil {
		c.fail(err)
		return
	}
	if !strings.HasPrefix(rec.Package, "sha256:") {
		c.fail(badf("%s %s/%s/%s runs %s, which has no package to download", kindNoun(c.kind), c.tenant, c.ns, c.name, rec.Package))
		return
	}
	w.sendPackage(c.w, c.ctx, rec.Package)
}

func (w *Worker) sendPackage(rw http.ResponseWriter, ctx context.Context, id string) {
	data, err := w.st.getPackage(ctx, id)
	if err != nil {
		httpapi.InternalError(rw, w.log, "functions download", err)
		return
	}
	rw.Header().Set("Content-Type", httpapi.OctetStream)
	rw.WriteHeader(http.StatusOK)
	_, _ = rw.Write(data)
}
