package sdk

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// credentials are the function's identity towards brokers and the
// worker, as the worker hands them over: Pulsar's GoInstanceConfig
// fields, read once from the pipe MAGNETAR_CONF_FD names.
type credentials struct {
	Plugin     string `json:"clientAuthenticationPlugin"`
	Params     string `json:"clientAuthenticationParameters"`
	TrustCerts string `json:"tlsTrustCertsFilePath"`
}

// readCredentials reads the configuration pipe (none: no credentials).
// The process is made non-dumpable first: its memory, environment and
// descriptors are then closed to other processes of the same account
// (other functions' instances under a root worker).
func readCredentials() (credentials, error) {
	var c credentials
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	s := os.Getenv("MAGNETAR_CONF_FD")
	if s == "" {
		return c, nil
	}
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 3 {
		return c, fmt.Errorf("MAGNETAR_CONF_FD %q is not a descriptor", s)
	}
	f := os.NewFile(uintptr(fd), "conf")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		return c, fmt.Errorf("instance configuration: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("instance configuration: %w", err)
	}
	return c, nil
}

// token returns the token of a token plugin's parameters ("" for none).
func (c credentials) token() (string, error) {
	switch p := strings.ToLower(c.Plugin); {
	case p == "":
		return "", nil
	case p == "token" || strings.HasSuffix(p, ".authenticationtoken"):
	default:
		return "", fmt.Errorf("client authentication plugin %q: this SDK speaks token", c.Plugin)
	}
	params := strings.TrimSpace(c.Params)
	switch {
	case strings.HasPrefix(params, "token:"):
		return strings.TrimSpace(params[len("token:"):]), nil
	case strings.HasPrefix(params, "file://"):
		b, err := os.ReadFile(params[len("file://"):])
		return strings.TrimSpace(string(b)), err
	case strings.HasPrefix(params, "{"):
		var m struct {
			Token string `json:"token"`
		}
		err := json.Unmarshal([]byte(params), &m)
		return m.Token, err
	}
	if params == "" {
		return "", errors.New("token plugin without a token")
	}
	return params, nil
}

// apply sets the client's authentication and trust, and returns the
// HTTP client and Authorization header for the worker's state API.
func (c credentials) apply(o *pulsarclient.ClientOptions) (*http.Client, string, error) {
	tok, err := c.token()
	if err != nil {
		return nil, "", err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	header := ""
	if tok != "" {
		o.Authentication = pulsarclient.NewAuthenticationToken(tok)
		header = "Bearer " + tok
	}
	if c.TrustCerts != "" {
		o.TLSTrustCertsFilePath = c.TrustCerts
		pem, err := os.ReadFile(c.TrustCerts)
		if err != nil {
			return nil, "", fmt.Errorf("tlsTrustCertsFilePath: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, "", fmt.Errorf("tlsTrustCertsFilePath %s holds no certificate", c.TrustCerts)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		hc.Transport = tr
	}
	return hc, header, nil
}
