package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TokenConfig configures the JWT provider. Exactly one of SecretKey and
// PublicKey is set (Pulsar: tokenSecretKey wins when both are).
type TokenConfig struct {
	// SecretKey is the raw HMAC key (HS256/HS384/HS512).
	SecretKey []byte
	// PublicKey verifies RS*/PS* (RSA), ES* (ECDSA) or EdDSA tokens.
	PublicKey crypto.PublicKey
	// RoleClaim holds the role (default "sub"): a string, or a list whose
	// first element is a string.
	RoleClaim string
	// AudienceClaim, if set, must be present and equal Audience (or be a
	// list containing it).
	AudienceClaim string
	Audience      string
	// ClockSkew is the leeway applied to exp and nbf (default 0).
	ClockSkew time.Duration
}

// TokenProvider authenticates compact JWS tokens (method "token").
type TokenProvider struct {
	cfg     TokenConfig
	key     any
	methods []string
}

// hmacMinKey is the smallest HMAC key accepted: 256 bits, as HS256 and
// Pulsar's key generator use.
const hmacMinKey = 32

// NewTokenProvider checks cfg and pins the accepted algorithms to the key
// type: a token signed with another family, or unsigned (alg "none"), is
// rejected whatever its header says.
func NewTokenProvider(cfg TokenConfig) (*TokenProvider, error) {
	if cfg.RoleClaim == "" {
		cfg.RoleClaim = "sub"
	}
	if cfg.AudienceClaim != "" && cfg.Audience == "" {
		return nil, errors.New("auth: tokenAudienceClaim is set but tokenAudience is not")
	}
	p := &TokenProvider{cfg: cfg}
	switch k := cfg.PublicKey.(type) {
	case nil:
		if len(cfg.SecretKey) == 0 {
			return nil, errors.New("auth: token provider needs tokenSecretKey or tokenPublicKey")
		}
		if len(cfg.SecretKey) < hmacMinKey {
			return nil, fmt.Errorf("auth: tokenSecretKey has %d bytes, at least %d are required", len(cfg.SecretKey), hmacMinKey)
		}
		p.key = cfg.SecretKey
		p.methods = []string{"HS256", "HS384", "HS512"}
	case *rsa.PublicKey:
		p.key = k
		p.methods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	case *ecdsa.PublicKey:
		p.key = k
		switch k.Curve.Params().BitSize {
		case 256:
			p.methods = []string{"ES256"}
		case 384:
			p.methods = []string{"ES384"}
		case 521:
			p.methods = []string{"ES512"}
		default:
			return nil, fmt.Errorf("auth: unsupported EC curve %s", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
		p.key = k
		p.methods = []string{"EdDSA"}
	default:
		return nil, fmt.Errorf("auth: unsupported public key type %T", k)
	}
	if len(cfg.SecretKey) > 0 {
		p.key = cfg.SecretKey
		p.methods = []string{"HS256", "HS384", "HS512"}
	}
	return p, nil
}

// Name implements Provider.
func (p *TokenProvider) Name() string { return MethodToken }

// Authenticate implements Provider. Surrounding ASCII whitespace is
// trimmed first (clients send token files with a trailing newline).
func (p *TokenProvider) Authenticate(c Credentials) (Identity, error) {
	return p.Validate(string(bytes.TrimSpace(c.Data)))
}

// Validate verifies a token and returns its identity.
func (p *TokenProvider) Validate(tok string) (Identity, error) {
	if tok == "" {
		return Identity{}, fmt.Errorf("%w: blank token", ErrAuthentication)
	}
	claims := jwt.MapClaims{}
	parser := jwt.NewParser(jwt.WithValidMethods(p.methods), jwt.WithLeeway(p.cfg.ClockSkew))
	_, err := parser.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return p.key, nil })
	if err != nil {
		return Identity{}, fmt.Errorf("%w: token: %w", ErrAuthentication, err)
	}
	if p.cfg.AudienceClaim != "" && !claimHas(claims[p.cfg.AudienceClaim], p.cfg.Audience) {
		return Identity{}, fmt.Errorf("%w: token: audience does not include %q", ErrAuthentication, p.cfg.Audience)
	}
	role := firstString(claims[p.cfg.RoleClaim])
	if role == "" {
		return Identity{}, fmt.Errorf("%w: token: no role in claim %q", ErrAuthentication, p.cfg.RoleClaim)
	}
	id := Identity{Role: role, Method: MethodToken}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		id.Expires = exp.Time
	}
	return id, nil
}

// claimHas reports whether claim v is want or a list containing it.
func claimHas(v any, want string) bool {
	switch x := v.(type) {
	case string:
		return x == want
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && s == want {
				return true
			}
		}
	}
	return false
}

// firstString returns v if it is a string, or the first element of a
// list if that is a string.
func firstString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		if len(x) > 0 {
			if s, ok := x[0].(string); ok {
				return s
			}
		}
	}
	return ""
}
