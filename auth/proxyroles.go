package auth

import (
	"errors"
	"fmt"
	"slices"
)

// Proxies and the original principal.
//
// A proxy authenticates to the broker with its own credentials and names
// the client it acts for: CONNECT.original_principal on the binary
// protocol, the X-Original-Principal header on HTTP. Only roles listed in
// proxyRoles may do so, and they must: a proxy role without an original
// principal, or naming another proxy role, is refused. A client that is
// not a proxy role and names an original principal (other than itself on
// HTTP) is refused too, so no client can borrow another's identity.
// Authorization then checks both identities: the original principal and
// the proxy role (which therefore needs the same grants, or superuser).

// HeaderOriginalPrincipal is the HTTP header a proxy names its client in.
const HeaderOriginalPrincipal = "X-Original-Principal"

// ErrInvalidRoles is returned for an invalid (role, original principal)
// pair.
var ErrInvalidRoles = errors.New("invalid roles")

// IsProxyRole reports whether role is one of proxyRoles.
func (s *Security) IsProxyRole(role string) bool {
	return s != nil && role != "" && slices.Contains(s.Config.ProxyRoles, role)
}

// CheckOriginalPrincipal validates the pair (role of the connection,
// original principal it names); http relaxes the rule for a non-proxy
// role naming itself, as Pulsar does on HTTP.
func (s *Security) CheckOriginalPrincipal(role, original string, http bool) error {
	if s.IsProxyRole(role) {
		if original == "" {
			return fmt.Errorf("%w: proxy role %q must name an original principal", ErrInvalidRoles, role)
		}
		if s.IsProxyRole(original) {
			return fmt.Errorf("%w: original principal %q is a proxy role", ErrInvalidRoles, original)
		}
		return nil
	}
	if original == "" || (http && original == role) {
		return nil
	}
	return fmt.Errorf("%w: role %q is not a proxy role and may not name original principal %q", ErrInvalidRoles, role, original)
}

// AuthorizedRoles is the list of roles a request must be authorized
// for: the original principal first, then the proxy role.
func AuthorizedRoles(role, original string) []string {
	if original == "" || original == role {
		return []string{role}
	}
	return []string{original, role}
}
