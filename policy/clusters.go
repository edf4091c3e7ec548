package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/metadata"
)

// ClustersPath is the metadata node under which clusters are registered
// (ClustersPath/<cluster>, a ClusterData), as in Pulsar's configuration
// store.
const ClustersPath = "/admin/clusters"

// GlobalCluster is Pulsar's pseudo-cluster of v1 global namespaces; it is
// never listed and may not be a replication cluster.
const GlobalCluster = "global"

// Cluster registry errors.
var (
	ErrClusterNotFound = errors.New("policy: cluster not found")
	ErrClusterExists   = errors.New("policy: cluster already exists")
)

// ClusterData is a registered cluster, with Pulsar's JSON field names.
// The replicators of other clusters connect to BrokerServiceURL (or
// BrokerServiceURLTLS); ServiceURL is the cluster's admin HTTP API.
// Fields Magnetar does not use are stored and returned as given.
type ClusterData struct {
	ServiceURL                         string   `json:"serviceUrl,omitempty"`
	ServiceURLTLS                      string   `json:"serviceUrlTls,omitempty"`
	BrokerServiceURL                   string   `json:"brokerServiceUrl,omitempty"`
	BrokerServiceURLTLS                string   `json:"brokerServiceUrlTls,omitempty"`
	ProxyServiceURL                    string   `json:"proxyServiceUrl,omitempty"`
	ProxyProtocol                      string   `json:"proxyProtocol,omitempty"`
	AuthenticationPlugin               string   `json:"authenticationPlugin,omitempty"`
	AuthenticationParameters           string   `json:"authenticationParameters,omitempty"`
	PeerClusterNames                   []string `json:"peerClusterNames"`
	BrokerClientTLSEnabled             bool     `json:"brokerClientTlsEnabled"`
	TLSAllowInsecureConnection         bool     `json:"tlsAllowInsecureConnection"`
	BrokerClientTLSEnabledWithKeyStore bool     `json:"brokerClientTlsEnabledWithKeyStore"`
	BrokerClientTLSTrustStoreType      string   `json:"brokerClientTlsTrustStoreType,omitempty"`
	BrokerClientTLSTrustStore          string   `json:"brokerClientTlsTrustStore,omitempty"`
	BrokerClientTLSTrustStorePassword  string   `json:"brokerClientTlsTrustStorePassword,omitempty"`
	BrokerClientTLSKeyStoreType        string   `json:"brokerClientTlsKeyStoreType,omitempty"`
	BrokerClientTLSKeyStore            string   `json:"brokerClientTlsKeyStore,omitempty"`
	BrokerClientTLSKeyStorePassword    string   `json:"brokerClientTlsKeyStorePassword,omitempty"`
	BrokerClientTrustCertsFilePath     string   `json:"brokerClientTrustCertsFilePath,omitempty"`
	BrokerClientKeyFilePath            string   `json:"brokerClientKeyFilePath,omitempty"`
	BrokerClientCertificateFilePath    string   `json:"brokerClientCertificateFilePath,omitempty"`
	ListenerName                       string   `json:"listenerName,omitempty"`
}

// Validate checks the URL schemes as Pulsar does: serviceUrl http,
// serviceUrlTls https, brokerServiceUrl pulsar, brokerServiceUrlTls
// pulsar+ssl, proxyServiceUrl pulsar or pulsar+ssl. Empty URLs are
// allowed.
func (c *ClusterData) Validate() error {
	check := func(field, v string, schemes ...string) error {
		if v == "" {
			return nil
		}
		scheme, rest, ok := strings.Cut(v, "://")
		if !ok || rest == "" || !slices.Contains(schemes, scheme) {
			return fmt.Errorf("illegal %s %q, example: %s://pulsar.example.com", field, v, schemes[0])
		}
		// Multi-host URLs (pulsar://h1:6650,h2:6650) list hosts after
		// the first without a scheme.
		for _, h := range strings.Split(rest, ",") {
			if _, err := url.Parse(scheme + "://" + strings.TrimSpace(h)); err != nil || strings.TrimSpace(h) == "" {
				return fmt.Errorf("illegal %s %q", field, v)
			}
		}
		return nil
	}
	return errors.Join(
		check("service url", c.ServiceURL, "http"),
		check("service url tls", c.ServiceURLTLS, "https"),
		check("broker service url", c.BrokerServiceURL, "pulsar"),
		check("broker service url tls", c.BrokerServiceURLTLS, "pulsar+ssl"),
		check("proxy service url", c.ProxyServiceURL, "pulsar", "pulsar+ssl"),
	)
}

func (c *ClusterData) fill() {
	if c.PeerClusterNames == nil {
		c.PeerClusterNames = []string{}
	}
}

// ValidClusterName reports whether s may name a cluster.
func ValidClusterName(s string) bool { return ValidName(s) && s != GlobalCluster }

// Clusters lists the registered clusters, sorted (the pseudo-cluster
// "global" is left out).
func (s *Store) Clusters(ctx context.Context) ([]string, error) {
	cs, err := s.children(ctx, ClustersPath)
	if err != nil {
		return nil, err
	}
	cs = slices.DeleteFunc(cs, func(c string) bool { return c == GlobalCluster })
	slices.Sort(cs)
	return cs, nil
}

// Cluster returns a cluster's data (ErrClusterNotFound).
func (s *Store) Cluster(ctx context.Context, name string) (ClusterData, error) {
	var cd ClusterData
	if !ValidName(name) {
		return cd, ErrClusterNotFound
	}
	data, _, err := s.meta.Get(ctx, ClustersPath+"/"+name)
	if errors.Is(err, metadata.ErrNotFound) {
		return cd, ErrClusterNotFound
	}
	if err != nil {
		return cd, err
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &cd); err != nil {
			return cd, fmt.Errorf("policy: cluster %s: %w", name, err)
		}
	}
	cd.fill()
	return cd, nil
}

// CreateCluster registers a cluster (ErrInvalidName, ErrClusterExists, or
// a *BadValueError for a bad URL).
func (s *Store) CreateCluster(ctx context.Context, name string, cd ClusterData) error {
	if !ValidClusterName(name) {
		return fmt.Errorf("%w: cluster %q", ErrInvalidName, name)
	}
	if err := cd.Validate(); err != nil {
		return &BadValueError{err}
	}
	cd.fill()
	data, _ := json.Marshal(cd)
	_, err := s.meta.Put(ctx, ClustersPath+"/"+name, data, metadata.NotExists)
	if errors.Is(err, metadata.ErrExists) {
		return ErrClusterExists
	}
	if err == nil {
		s.notifyClusters()
	}
	return err
}

// UpdateCluster replaces a cluster's data (ErrClusterNotFound, or a
// *BadValueError for a bad URL).
func (s *Store) UpdateCluster(ctx context.Context, name string, cd ClusterData) error {
	if err := cd.Validate(); err != nil {
		return &BadValueError{err}
	}
	cd.fill()
	data, _ := json.Marshal(cd)
	if !ValidName(name) {
		return ErrClusterNotFound
	}
	_, v, err := s.meta.Get(ctx, ClustersPath+"/"+name)
	if errors.Is(err, metadata.ErrNotFound) {
		return ErrClusterNotFound
	}
	if err != nil {
		return err
	}
	if _, err = s.meta.Put(ctx, ClustersPath+"/"+name, data, v); err != nil {
		return err
	}
	s.notifyClusters()
	return nil
}

// EnsureCluster registers name with cd if it is absent, and fills in the
// URLs of a registration that has none (a cluster registered before its
// first broker started). It never overwrites URLs already set.
func (s *Store) EnsureCluster(ctx context.Context, name string, cd ClusterData) error {
	err := s.CreateCluster(ctx, name, cd)
	if !errors.Is(err, ErrClusterExists) {
		return err
	}
	cur, err := s.Cluster(ctx, name)
	if err != nil {
		return err
	}
	if cur.ServiceURL != "" || cur.BrokerServiceURL != "" {
		return nil
	}
	cur.ServiceURL, cur.BrokerServiceURL = cd.ServiceURL, cd.BrokerServiceURL
	if cur.ServiceURLTLS == "" {
		cur.ServiceURLTLS = cd.ServiceURLTLS
	}
	if cur.BrokerServiceURLTLS == "" {
		cur.BrokerServiceURLTLS = cd.BrokerServiceURLTLS
	}
	return s.UpdateCluster(ctx, name, cur)
}

// DeleteCluster removes a cluster. It refuses (ErrNotEmpty) while a
// namespace still replicates to it; a missing cluster is
// ErrClusterNotFound.
func (s *Store) DeleteCluster(ctx context.Context, name string) error {
	if !ValidName(name) {
		return ErrClusterNotFound
	}
	ok, err := s.meta.Exists(ctx, ClustersPath+"/"+name)
	if err != nil {
		return err
	}
	if !ok {
		return ErrClusterNotFound
	}
	tenants, err := s.Tenants(ctx)
	if err != nil {
		return err
	}
	for _, t := range tenants {
		nss, err := s.Namespaces(ctx, t)
		if err != nil && !errors.Is(err, ErrTenantNotFound) {
			return err
		}
		for _, ns := range nss {
			p, err := s.Get(ctx, ns)
			if err != nil {
				return err
			}
			if slices.Contains(p.ReplicationClusters, name) {
				return fmt.Errorf("%w: namespace %s replicates to cluster %s", ErrNotEmpty, ns, name)
			}
		}
	}
	err = s.meta.Delete(ctx, ClustersPath+"/"+name, metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return ErrClusterNotFound
	}
	if err == nil {
		s.notifyClusters()
	}
	return err
}

// notifyClusters tells the subscribers that any namespace's effective
// replication may have changed (a cluster's URLs did).
func (s *Store) notifyClusters() { s.notify("") }
