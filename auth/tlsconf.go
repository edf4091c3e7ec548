package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ServerTLS serves the certificate, key and client trust bundle named by
// the tls* settings, re-reading them when a file's modification time or
// size changes (checked at most every refresh interval, at handshakes).
// A reload that fails keeps the previous material and is reported by
// LastError.
type ServerTLS struct {
	certFile, keyFile, caFile string
	refresh                   time.Duration
	requireClientCert         bool
	allowInsecure             bool
	minVersion, maxVersion    uint16
	ciphers                   []uint16

	mu      sync.Mutex
	checked time.Time
	stamp   string
	cfg     *tls.Config
	lastErr error
}

// NewServerTLS loads the files once; errors are returned.
func NewServerTLS(c *Config) (*ServerTLS, error) {
	if c.TLSCertificateFilePath == "" || c.TLSKeyFilePath == "" {
		return nil, errors.New("auth: TLS needs tlsCertificateFilePath and tlsKeyFilePath")
	}
	if c.TLSRequireTrustedClientCertOnConnect && c.TLSTrustCertsFilePath == "" {
		return nil, errors.New("auth: tlsRequireTrustedClientCertOnConnect needs tlsTrustCertsFilePath")
	}
	s := &ServerTLS{
		certFile: c.TLSCertificateFilePath, keyFile: c.TLSKeyFilePath, caFile: c.TLSTrustCertsFilePath,
		refresh:           time.Duration(c.TLSCertRefreshCheckDurationSec) * time.Second,
		requireClientCert: c.TLSRequireTrustedClientCertOnConnect,
		allowInsecure:     c.TLSAllowInsecureConnection,
		minVersion:        tls.VersionTLS12,
	}
	if len(c.TLSProtocols) > 0 {
		s.minVersion, s.maxVersion = 0, 0
		for _, p := range c.TLSProtocols {
			v, err := tlsVersion(p)
			if err != nil {
				return nil, err
			}
			if s.minVersion == 0 || v < s.minVersion {
				s.minVersion = v
			}
			if v > s.maxVersion {
				s.maxVersion = v
			}
		}
	}
	for _, name := range c.TLSCiphers {
		id, err := cipherID(name)
		if err != nil {
			return nil, err
		}
		s.ciphers = append(s.ciphers, id)
	}
	cfg, stamp, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cfg, s.stamp, s.checked = cfg, stamp, time.Now()
	return s, nil
}

func tlsVersion(p string) (uint16, error) {
	switch strings.ToUpper(strings.ReplaceAll(p, "v", "V")) {
	case "TLSV1.2":
		return tls.VersionTLS12, nil
	case "TLSV1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("auth: tlsProtocols: %q is not supported (TLSv1.2, TLSv1.3)", p)
}

func cipherID(name string) (uint16, error) {
	for _, cs := range tls.CipherSuites() {
		if cs.Name == name {
			return cs.ID, nil
		}
	}
	return 0, fmt.Errorf("auth: tlsCiphers: unknown or insecure cipher suite %q", name)
}

// fileStamp identifies the current contents of the files cheaply: size,
// modification time and, where the system has them, inode and change
// time. A rotation that renames new files over the old ones within one
// tick of the file system's coarse clock, at the same size (a PEM file
// often keeps its length when a name in it changes), changes only the
// inode: with size and mtime alone it went unseen, and the old
// certificate was served until the files changed again.
func (s *ServerTLS) fileStamp() string {
	return filesStamp(s.certFile, s.keyFile, s.caFile)
}

func filesStamp(files ...string) string {
	var b strings.Builder
	for _, f := range files {
		if f == "" {
			continue
		}
		st, err := os.Stat(f)
		if err != nil {
			fmt.Fprintf(&b, "%s:missing;", f)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d", f, st.ModTime().UnixNano(), st.Size())
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			fmt.Fprintf(&b, ":%d:%d:%d.%d", sys.Dev, sys.Ino, sys.Ctim.Sec, sys.Ctim.Nsec)
		}
		b.WriteByte(';')
	}
	return b.String()
}

func (s *ServerTLS) load() (*tls.Config, string, error) {
	stamp := s.fileStamp()
	cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("auth: TLS certificate/key: %w", err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   s.minVersion,
		MaxVersion:   s.maxVersion,
		CipherSuites: s.ciphers,
		ClientAuth:   tls.NoClientCert,
	}
	if s.caFile != "" {
		pem, err := os.ReadFile(s.caFile)
		if err != nil {
			return nil, "", fmt.Errorf("auth: tlsTrustCertsFilePath: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, "", fmt.Errorf("auth: tlsTrustCertsFilePath %s: no PEM certificates", s.caFile)
		}
		cfg.ClientCAs = pool
		switch {
		case s.requireClientCert:
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		case s.allowInsecure:
			// Requested, not verified: such a certificate never becomes an
			// identity (PeerCertificates needs VerifiedChains).
			cfg.ClientAuth = tls.RequestClientCert
		default:
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	return cfg, stamp, nil
}

// current returns the config, reloading it if the files changed.
func (s *ServerTLS) current() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.checked) < s.refresh {
		return s.cfg
	}
	s.checked = now
	if s.fileStamp() == s.stamp {
		return s.cfg
	}
	cfg, stamp, err := s.load()
	if err != nil {
		s.lastErr = err
		return s.cfg
	}
	s.cfg, s.stamp, s.lastErr = cfg, stamp, nil
	return s.cfg
}

// VerifyClient verifies a client chain (leaf first) against the current
// trust file, for client-authentication use.
func (s *ServerTLS) VerifyClient(chain []*x509.Certificate) bool {
	cfg := s.current()
	if cfg.ClientCAs == nil || len(chain) == 0 {
		return false
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: cfg.ClientCAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err == nil
}

// LastError is the error of the last failed reload (nil after a good one).
func (s *ServerTLS) LastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Config returns a tls.Config for a listener; every handshake uses the
// current files.
func (s *ServerTLS) Config() *tls.Config {
	return &tls.Config{
		MinVersion: s.minVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current(), nil
		},
	}
}

// ClientTLS builds a client tls.Config: trust file (system roots when
// empty), an optional client certificate, hostname verification unless
// insecure.
func ClientTLS(trustFile, certFile, keyFile string, insecure bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure}
	if trustFile != "" {
		pem, err := os.ReadFile(trustFile)
		if err != nil {
			return nil, fmt.Errorf("auth: trust file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("auth: trust file %s: no PEM certificates", trustFile)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("auth: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
