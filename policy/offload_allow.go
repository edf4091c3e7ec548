package policy

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
)

// OffloadAllowed is what the operator lets offload policies set below the
// broker level (namespace and topic policies, which tenant admins write)
// point at. A tenant may choose the driver, bucket, region, thresholds
// and its own credentials, but every filesystem location must lie under
// one of FileSystemRoots and every S3 endpoint must be one of
// ServiceEndpoints. The broker's own fileSystemURI directory,
// fileSystemProfilePath and endpoint are always allowed; empty lists
// allow nothing else.
type OffloadAllowed struct {
	// FileSystemRoots are absolute directories
	// (offloadAllowedFileSystemRoots).
	FileSystemRoots []string
	// ServiceEndpoints are S3 endpoint URLs
	// (offloadAllowedServiceEndpoints), compared by scheme, host and port
	// (default ports filled in) and path.
	ServiceEndpoints []string
	// ProfilePaths are the broker's own fileSystemProfilePath values.
	ProfilePaths []string
}

// CheckAllowed refuses (with a *BadValueError, HTTP 412) a location in o
// the operator did not allow. Nothing is read, written or contacted.
func (o *OffloadPolicies) CheckAllowed(a OffloadAllowed) error {
	if o == nil {
		return nil
	}
	if u := o.FileSystemURI; u != "" {
		dir, err := offloadDir(u)
		if err != nil {
			return &BadValueError{fmt.Errorf("fileSystemURI %q: %v", u, err)}
		}
		if !underRoot(dir, a.FileSystemRoots) {
			return &BadValueError{fmt.Errorf("fileSystemURI %q is outside the directories the operator allows for offload (offloadAllowedFileSystemRoots: %s)", u, listOrNone(a.FileSystemRoots))}
		}
	}
	if p := o.FileSystemProfilePath; p != "" {
		clean := filepath.Clean(p)
		own := false
		for _, q := range a.ProfilePaths {
			if q != "" && filepath.Clean(q) == clean {
				own = true
			}
		}
		if !own && (!filepath.IsAbs(clean) || !underRoot(clean, a.FileSystemRoots)) {
			return &BadValueError{fmt.Errorf("fileSystemProfilePath %q is neither the broker's own nor under the directories the operator allows for offload (offloadAllowedFileSystemRoots: %s)", p, listOrNone(a.FileSystemRoots))}
		}
	}
	for _, e := range []string{o.S3ManagedLedgerOffloadServiceEndpoint, o.ManagedLedgerOffloadServiceEndpoint} {
		if e == "" {
			continue
		}
		ne, err := normalEndpoint(e)
		if err != nil {
			return &BadValueError{fmt.Errorf("s3ManagedLedgerOffloadServiceEndpoint %q: %v", e, err)}
		}
		ok := false
		for _, allowed := range a.ServiceEndpoints {
			if na, err := normalEndpoint(allowed); err == nil && na == ne {
				ok = true
			}
		}
		if !ok {
			return &BadValueError{fmt.Errorf("s3ManagedLedgerOffloadServiceEndpoint %q is not an endpoint the operator allows for offload (offloadAllowedServiceEndpoints: %s)", e, listOrNone(a.ServiceEndpoints))}
		}
	}
	return nil
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none besides the broker's own"
	}
	return strings.Join(l, ", ")
}

// offloadDir is the absolute, cleaned directory of a fileSystemURI
// (file:///dir or a plain absolute path).
func offloadDir(u string) (string, error) {
	p := u
	if strings.Contains(u, "://") {
		pu, err := url.Parse(u)
		if err != nil {
			return "", err
		}
		if pu.Scheme != "file" {
			return "", fmt.Errorf("scheme %q: the filesystem driver takes file:///dir", pu.Scheme)
		}
		if pu.Host != "" && pu.Host != "localhost" {
			return "", fmt.Errorf("host %q: the filesystem driver takes file:///dir", pu.Host)
		}
		p = pu.Path
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("want an absolute directory")
	}
	return filepath.Clean(p), nil
}

// underRoot reports whether dir (absolute, clean) is one of roots or
// inside one.
func underRoot(dir string, roots []string) bool {
	for _, r := range roots {
		if r == "" {
			continue
		}
		rd, err := offloadDir(r)
		if err != nil {
			continue
		}
		if dir == rd || strings.HasPrefix(dir, strings.TrimSuffix(rd, "/")+"/") {
			return true
		}
	}
	return false
}

// normalEndpoint is scheme://host:port/path in lower case with the
// scheme's default port filled in, for comparing endpoints.
func normalEndpoint(e string) (string, error) {
	if !strings.Contains(e, "://") {
		e = "https://" + e
	}
	u, err := url.Parse(e)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if u.User != nil {
		return "", fmt.Errorf("credentials in the URL are not accepted")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return "", fmt.Errorf("no host")
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(host), port) + strings.TrimSuffix(u.Path, "/"), nil
}
