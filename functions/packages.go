package functions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Package URLs (the "url" part of a create or update, or the config's
// archive / go field) are checked before anything is read or contacted,
// as Pulsar's worker does (PackageUrlValidator):
//
//   - file:///path: the file, after symbolic links are resolved, must lie
//     inside FunctionsDirectory (functions) or ConnectorsDirectory
//     (sources and sinks), or the URL must match an additional pattern;
//   - http:// and https://: the URL must match one of
//     FunctionsURLPatterns / ConnectorsURLPatterns (regular expressions
//     matched against the whole URL, Pulsar's
//     additionalEnabledFunctionsUrlPatterns and
//     additionalEnabledConnectorUrlPatterns); so must every redirect;
//   - builtin://NAME: a builtin connector, always allowed;
//   - function://, source:// and sink://: a package of package
//     management (pkgstore.go), read if the caller may use the packages
//     of its namespace (403 otherwise).
//
// A refused URL is a 400 with the reason; the package store is not
// touched and no connection is made.

// ErrPackageURL wraps every refused package URL (HTTP 400).
var ErrPackageURL = fmt.Errorf("%w: package url", ErrBadConfig)

// packageRules is one kind's allowed package locations.
type packageRules struct {
	dir      string // absolute, symlinks resolved; "" = no local files
	patterns []*regexp.Regexp
	dirKey   string // the configuration key naming dir, for errors
	patKey   string
}

func compileRules(dir, dirKey string, patterns []string, patKey string) (packageRules, error) {
	r := packageRules{dirKey: dirKey, patKey: patKey}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return r, err
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		r.dir = abs
	}
	for _, p := range patterns {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		re, err := regexp.Compile(`^(?:` + p + `)$`)
		if err != nil {
			return r, fmt.Errorf("functions: %s %q: %w", patKey, p, err)
		}
		r.patterns = append(r.patterns, re)
	}
	return r, nil
}

func (r packageRules) matches(u string) bool {
	for _, re := range r.patterns {
		if re.MatchString(u) {
			return true
		}
	}
	return false
}

func (w *Worker) rulesFor(k Kind) packageRules {
	if k == KindFunction {
		return w.fnRules
	}
	return w.connRules
}

// fetchPackage reads the package a file:// or http(s):// URL names, if
// the rules of kind k allow it.
func (w *Worker) fetchPackage(ctx context.Context, k Kind, raw string) ([]byte, error) {
	rules := w.rulesFor(k)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrPackageURL, raw, err)
	}
	if packageSchemes[u.Scheme] {
		return w.fetchManaged(ctx, raw)
	}
	switch u.Scheme {
	case "file":
		return w.readLocalPackage(rules, raw, u)
	case "http", "https":
		if !rules.matches(raw) {
			return nil, fmt.Errorf("%w %q is not allowed: it matches none of %s", ErrPackageURL, raw, rules.patKey)
		}
		return w.downloadPackage(ctx, rules, raw)
	}
	return nil, fmt.Errorf("%w %q: want builtin://NAME, function://, source:// or sink:// (package management), file:///path, http(s)://... (or upload the package as the data part)", ErrPackageURL, raw)
}

// readLocalPackage opens the file first and checks the path the open
// file really has (/proc/self/fd), so a symbolic link swapped in after a
// check cannot lead outside the directory.
func (w *Worker) readLocalPackage(rules packageRules, raw string, u *url.URL) ([]byte, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("%w %q: file URLs name a local path (file:///path)", ErrPackageURL, raw)
	}
	if rules.dir == "" && !rules.matches(raw) {
		return nil, fmt.Errorf("%w %q is not allowed: local packages are off (%s is empty) and it matches none of %s", ErrPackageURL, raw, rules.dirKey, rules.patKey)
	}
	f, err := os.Open(u.Path)
	if err != nil {
		// Say only that it cannot be used: whether a path exists outside
		// the directory is not the caller's business.
		if !rules.matches(raw) && !strings.HasPrefix(filepath.Clean(u.Path), rules.dir+"/") {
			return nil, fmt.Errorf("%w %q is not allowed: it is outside %s (%s) and matches none of %s", ErrPackageURL, raw, rules.dirKey, rules.dir, rules.patKey)
		}
		return nil, fmt.Errorf("%w %q: cannot be read", ErrPackageURL, raw)
	}
	defer f.Close()
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrPackageURL, raw, err)
	}
	inside := rules.dir != "" && strings.HasPrefix(real, strings.TrimSuffix(rules.dir, "/")+"/")
	if !inside && !rules.matches(raw) {
		return nil, fmt.Errorf("%w %q is not allowed: it is outside %s (%s) and matches none of %s", ErrPackageURL, raw, rules.dirKey, rules.dir, rules.patKey)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w %q: not a regular file", ErrPackageURL, raw)
	}
	if st.Size() > MaxPackage {
		return nil, fmt.Errorf("%w %q: %d bytes, over %d", ErrPackageURL, raw, st.Size(), MaxPackage)
	}
	return io.ReadAll(io.LimitReader(f, MaxPackage+1))
}

// downloadTimeout bounds one package download.
const downloadTimeout = 2 * time.Minute

func (w *Worker) downloadPackage(ctx context.Context, rules packageRules, raw string) ([]byte, error) {
	cl := &http.Client{
		Timeout: downloadTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if !rules.matches(req.URL.String()) {
				return fmt.Errorf("redirect to %q matches none of %s", req.URL.String(), rules.patKey)
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrPackageURL, raw, err)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w %q: download: %v", ErrPackageURL, raw, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w %q: download answered %s", ErrPackageURL, raw, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxPackage+1))
	if err != nil {
		return nil, fmt.Errorf("%w %q: download: %v", ErrPackageURL, raw, err)
	}
	if len(data) > MaxPackage {
		return nil, fmt.Errorf("%w %q: over %d bytes", ErrPackageURL, raw, MaxPackage)
	}
	return data, nil
}
