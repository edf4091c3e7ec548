package auth

import "context"

type roleKey struct{}

// RoleFromContext returns the authenticated role of an HTTP request
// ("" when authentication is off).
func RoleFromContext(ctx context.Context) string {
	s, _ := ctx.Value(roleKey{}).(string)
	return s
}

// WithRole attaches role to ctx.
func WithRole(ctx context.Context, role string) context.Context {
	return context.WithValue(ctx, roleKey{}, role)
}

type identityKey struct{}

// WithIdentity attaches the authenticated identity of a request to ctx
// (the role of RoleFromContext may differ: a proxy's original principal).
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFromContext returns the identity WithIdentity attached.
func IdentityFromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}
