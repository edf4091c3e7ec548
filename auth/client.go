package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ClientAuth is a client's credentials, from Pulsar's authPlugin /
// authParams pair (pulsar-admin --auth-plugin/--auth-params,
// brokerClientAuthenticationPlugin/Parameters).
type ClientAuth struct {
	Method string // token, tls, basic
	// token: the token itself, or a file re-read at every use.
	token, tokenFile string
	// tls: certificate and key files.
	CertFile, KeyFile string
	// basic.
	user, password string
}

// ParseClientAuth reads a plugin name (short: token, tls, basic, or the
// Java class names AuthenticationToken, AuthenticationTls,
// AuthenticationBasic) and its parameters:
//
//	token: "token:<jwt>", "file:///path", or the bare token
//	tls:   "tlsCertFile:<path>,tlsKeyFile:<path>" or the same as JSON
//	basic: {"userId":"u","password":"p"} (also "username"), or
//	       "userId:u,password:p"
//
// An empty plugin means no credentials (nil, nil).
func ParseClientAuth(plugin, params string) (*ClientAuth, error) {
	if plugin == "" {
		if params != "" {
			return nil, errors.New("auth params given without an auth plugin")
		}
		return nil, nil
	}
	low := strings.ToLower(plugin)
	c := &ClientAuth{}
	switch {
	case low == MethodToken || strings.HasSuffix(low, ".authenticationtoken"):
		c.Method = MethodToken
		switch p := strings.TrimSpace(params); {
		case strings.HasPrefix(p, "token:"):
			c.token = strings.TrimSpace(p[len("token:"):])
		case strings.HasPrefix(p, "file://"):
			c.tokenFile = p[len("file://"):]
		case p != "":
			c.token = p
		}
		if c.token == "" && c.tokenFile == "" {
			return nil, errors.New("token auth needs params token:<jwt> or file:///path")
		}
	case low == MethodTLS || strings.HasSuffix(low, ".authenticationtls"):
		c.Method = MethodTLS
		m := paramMap(params)
		c.CertFile, c.KeyFile = m["tlsCertFile"], m["tlsKeyFile"]
		if c.CertFile == "" || c.KeyFile == "" {
			return nil, errors.New("tls auth needs params tlsCertFile:<path>,tlsKeyFile:<path>")
		}
	case low == MethodBasic || strings.HasSuffix(low, ".authenticationbasic"):
		c.Method = MethodBasic
		m := paramMap(params)
		c.user, c.password = m["userId"], m["password"]
		if c.user == "" {
			c.user = m["username"]
		}
		if c.user == "" || c.password == "" {
			return nil, errors.New(`basic auth needs params {"userId":"...","password":"..."}`)
		}
	default:
		return nil, fmt.Errorf("unsupported auth plugin %q (token, tls, basic)", plugin)
	}
	return c, nil
}

// paramMap reads JSON object params or "k:v,k:v".
func paramMap(params string) map[string]string {
	m := map[string]string{}
	p := strings.TrimSpace(params)
	if strings.HasPrefix(p, "{") {
		var raw map[string]any
		if json.Unmarshal([]byte(p), &raw) == nil {
			for k, v := range raw {
				m[k] = fmt.Sprint(v)
			}
		}
		return m
	}
	for _, kv := range strings.Split(p, ",") {
		if k, v, ok := strings.Cut(kv, ":"); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// Data is the CONNECT auth_data (nil for tls).
func (c *ClientAuth) Data() ([]byte, error) {
	switch c.Method {
	case MethodToken:
		if c.tokenFile != "" {
			b, err := os.ReadFile(c.tokenFile)
			if err != nil {
				return nil, err
			}
			return []byte(strings.TrimSpace(string(b))), nil
		}
		return []byte(c.token), nil
	case MethodBasic:
		return []byte(c.user + ":" + c.password), nil
	}
	return nil, nil
}

// HTTPHeader is the Authorization header value ("" for tls).
func (c *ClientAuth) HTTPHeader() (string, error) {
	d, err := c.Data()
	if err != nil {
		return "", err
	}
	switch c.Method {
	case MethodToken:
		return "Bearer " + string(d), nil
	case MethodBasic:
		return "Basic " + base64.StdEncoding.EncodeToString(d), nil
	}
	return "", nil
}
