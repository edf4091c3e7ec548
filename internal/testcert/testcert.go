// Package testcert makes throw-away certificate authorities and
// certificates at test time (nothing is checked in): a CA, server
// certificates with DNS/IP SANs, and client certificates whose CN is
// the role.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority.
type CA struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
}

// Pair is a certificate and its key, PEM-encoded, and where they were
// written.
type Pair struct {
	CertPEM, KeyPEM   []byte
	CertFile, KeyFile string
}

var serial int64 = time.Now().UnixNano()

func next() *big.Int { serial++; return big.NewInt(serial) }

// NewCA makes a self-signed CA named cn.
func NewCA(cn string) (*CA, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          next(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: c, Key: k, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// WriteCA writes the CA certificate to dir/name and returns the path.
func (ca *CA) WriteCA(dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, ca.CertPEM, 0o644)
}

// Server issues a server certificate for the given DNS names and IPs.
func (ca *CA) Server(cn string, dns []string, ips []net.IP) (*Pair, error) {
	return ca.issue(cn, dns, ips, x509.ExtKeyUsageServerAuth, 24*time.Hour)
}

// Client issues a client certificate with CN = role.
func (ca *CA) Client(role string) (*Pair, error) {
	return ca.issue(role, nil, nil, x509.ExtKeyUsageClientAuth, 24*time.Hour)
}

func (ca *CA) issue(cn string, dns []string, ips []net.IP, eku x509.ExtKeyUsage, life time.Duration) (*Pair, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: next(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"Magnetar tests"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(life),
		DNSNames:     dns,
		IPAddresses:  ips,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{eku},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &k.PublicKey, ca.Key)
	if err != nil {
		return nil, err
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return &Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}),
	}, nil
}

// Write writes the pair to dir/name.crt and dir/name.key (0600).
func (p *Pair) Write(dir, name string) (*Pair, error) {
	p.CertFile = filepath.Join(dir, name+".crt")
	p.KeyFile = filepath.Join(dir, name+".key")
	if err := os.WriteFile(p.CertFile, p.CertPEM, 0o644); err != nil {
		return nil, err
	}
	return p, os.WriteFile(p.KeyFile, p.KeyPEM, 0o600)
}
