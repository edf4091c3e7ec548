package auth

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// FuzzTokenValidate feeds arbitrary auth_data to the token provider: it
// must not panic, and nothing but a token signed with the key may pass.
func FuzzTokenValidate(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	p, err := NewTokenProvider(TokenConfig{SecretKey: key, AudienceClaim: "aud", Audience: "m"})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := CreateToken(key, TokenSpec{Subject: "a", Claims: map[string]any{"aud": "m"}})
	f.Add(good)
	f.Add(good + "\n")
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.")
	f.Add("..")
	f.Add("not-a-jwt")
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := p.Authenticate(Credentials{Data: []byte(tok)})
		if err != nil {
			return
		}
		if id.Role == "" {
			t.Fatalf("accepted with empty role: %q", tok)
		}
		// A token that passed must be the seed token (modulo surrounding
		// space) or another HMAC-SHA* signature by the key: re-signing
		// its claims would be needed to forge one, which the fuzzer cannot.
		if strings.TrimSpace(tok) != good {
			parts := strings.Split(strings.TrimSpace(tok), ".")
			if len(parts) != 3 {
				t.Fatalf("accepted a non-JWS: %q", tok)
			}
		}
	})
}

// FuzzAuthenticateHTTP feeds arbitrary Authorization headers and method
// names: no panic, and no identity without valid credentials.
func FuzzAuthenticateHTTP(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	tp, _ := NewTokenProvider(TokenConfig{SecretKey: key})
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	bp, err := ParseHtpasswd([]byte("u:" + string(h)))
	if err != nil {
		f.Fatal(err)
	}
	a := NewAuthenticator("", tp, bp, TLSProvider{})
	f.Add("Bearer x", "")
	f.Add("Basic "+base64.StdEncoding.EncodeToString([]byte("u:bad")), "basic")
	f.Add("basic dTpwdw==", "")
	f.Add("", "tls")
	f.Add("Bearer ", "token")
	f.Fuzz(func(t *testing.T, header, method string) {
		r, _ := http.NewRequest("GET", "http://x/", nil)
		r.Header["Authorization"] = []string{header}
		if method != "" {
			r.Header["X-Pulsar-Auth-Method-Name"] = []string{method}
		}
		id, err := a.AuthenticateHTTP(r)
		if err != nil {
			return
		}
		// The only credential the fuzzer can find is u:pw in basic form.
		if id.Role != "u" || id.Method != MethodBasic {
			t.Fatalf("header %q method %q authenticated as %+v", header, method, id)
		}
	})
}

// FuzzHtpasswd parses arbitrary htpasswd files and authenticates
// arbitrary user:password data against them.
func FuzzHtpasswd(f *testing.F) {
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	f.Add("u:"+string(h), "u:pw")
	f.Add("a:b\n#c\n", ":")
	f.Fuzz(func(t *testing.T, file, data string) {
		p, err := ParseHtpasswd([]byte(file))
		if err != nil {
			return
		}
		_, _ = p.Authenticate(Credentials{Data: []byte(data)})
	})
}
