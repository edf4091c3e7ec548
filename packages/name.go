package packages

import (
	"errors"
	"fmt"
	"strings"
)

// Type is a package's kind: what it may be deployed as.
type Type string

// The package types Pulsar knows.
const (
	TypeFunction Type = "function"
	TypeSource   Type = "source"
	TypeSink     Type = "sink"
)

// ErrBadName wraps every refused package name or type (HTTP 412, as in
// Pulsar).
var ErrBadName = errors.New("invalid package name")

// ParseType reads a package type, as Pulsar's PackageType.getEnum does
// (exact, lower case).
func ParseType(s string) (Type, error) {
	switch t := Type(s); t {
	case TypeFunction, TypeSource, TypeSink:
		return t, nil
	}
	return "", fmt.Errorf("%w: Invalid package type '%s', it should be function, sink, or source", ErrBadName, s)
}

// Name is a package version's name: type://tenant/namespace/name@version.
type Name struct {
	Type                    Type
	Tenant, Namespace, Name string
	Version                 string // "latest" when the name gave none
}

// String is the canonical form type://tenant/namespace/name@version.
func (n Name) String() string {
	return string(n.Type) + "://" + n.Tenant + "/" + n.Namespace + "/" + n.Name + "@" + n.Version
}

// ParseName reads type://tenant/namespace/name[@version] with Pulsar's
// rules: exactly three path parts, at most one '@', every part non-empty
// and neither ".", ".." nor holding '/', '\' or NUL; no version means
// "latest".
func ParseName(s string) (Name, error) {
	bad := func() (Name, error) {
		return Name{}, fmt.Errorf("%w '%s', it should be in the format of type://tenant/namespace/name@version", ErrBadName, s)
	}
	typ, rest, ok := strings.Cut(s, "://")
	if !ok {
		return bad()
	}
	t, err := ParseType(typ)
	if err != nil {
		return Name{}, err
	}
	path, version, _ := strings.Cut(rest, "@")
	if strings.Contains(version, "@") {
		return bad()
	}
	parts := strings.Split(path, "/")
	if len(parts) != 3 {
		return bad()
	}
	if version == "" {
		version = "latest"
	}
	n := Name{Type: t, Tenant: parts[0], Namespace: parts[1], Name: parts[2], Version: version}
	for _, c := range []struct{ what, v string }{{"tenant", n.Tenant}, {"namespace", n.Namespace}, {"name", n.Name}, {"version", n.Version}} {
		if !validComponent(c.v) {
			return Name{}, fmt.Errorf("%w: Invalid package %s '%s' in package name '%s'", ErrBadName, c.what, c.v, s)
		}
	}
	return n, nil
}

// NameOf builds a name from the parts of a REST path.
func NameOf(typ, tenant, namespace, name, version string) (Name, error) {
	return ParseName(typ + "://" + tenant + "/" + namespace + "/" + name + "@" + version)
}

// validComponent: one non-empty path segment, not a relative reference.
// The metadata store accepts any such segment as a node name.
func validComponent(v string) bool {
	return v != "" && v != "." && v != ".." && !strings.ContainsAny(v, "/\\\x00")
}

// checkNamespace validates the tenant and namespace of a listing.
func checkNamespace(tenant, namespace string) error {
	if !validComponent(tenant) {
		return fmt.Errorf("%w: Invalid package tenant '%s'", ErrBadName, tenant)
	}
	if !validComponent(namespace) {
		return fmt.Errorf("%w: Invalid package namespace '%s'", ErrBadName, namespace)
	}
	return nil
}

// IsPackageURL reports whether u names a package of the store
// (function://, source:// or sink://).
func IsPackageURL(u string) bool {
	typ, _, ok := strings.Cut(u, "://")
	if !ok {
		return false
	}
	_, err := ParseType(typ)
	return err == nil
}
