package georep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// replProducer is the replicator's producer on a remote cluster: a
// pulsarclient.EntryProducer (CONNECT, LOOKUP with redirects, PRODUCER,
// SEND), enough to push stored entries as they are. It never batches or
// re-frames: one local entry is one SEND. Receipts arrive on receipts in
// send order; the producer's end closes done (err holds the reason).
type replProducer struct {
	cl       *pulsarclient.Client
	ep       *pulsarclient.EntryProducer
	addr     string
	since    time.Time
	receipts chan replReceipt
	done     chan struct{}

	once sync.Once
	err  error
}

type replReceipt struct {
	seq uint64
	pos storage.Position
}

// replAuth is the authentication the replicator presents to a remote
// cluster (from its ClusterData): method "" for none.
type replAuth struct {
	method string
	data   []byte
}

// replAuthFrom maps ClusterData's authenticationPlugin and
// authenticationParameters to a CONNECT authentication: token plugins
// ("...AuthenticationToken", "token") with parameters "token:XYZ" or a
// bare token.
func replAuthFrom(plugin, params string) (replAuth, error) {
	if plugin == "" {
		return replAuth{}, nil
	}
	lp := strings.ToLower(plugin)
	switch {
	case strings.HasSuffix(lp, "authenticationtoken") || lp == "token":
		tok := strings.TrimPrefix(params, "token:")
		return replAuth{method: "token", data: []byte(tok)}, nil
	case strings.HasSuffix(lp, "authenticationtls") || lp == "tls":
		// The identity is the TLS client certificate.
		return replAuth{method: "tls"}, nil
	}
	return replAuth{}, fmt.Errorf("replication: authentication plugin %q is not supported (token or tls)", plugin)
}

// replTarget is how a replicator reaches a remote cluster: the service
// URL, its TLS settings and the CONNECT authentication.
type replTarget struct {
	url      string
	auth     replAuth
	tls      bool   // url is pulsar+ssl://
	trust    string // CA bundle ("": the system roots)
	insecure bool   // no certificate check
	certFile string // client certificate (TLS authentication)
	keyFile  string
}

// replTargetOf reads the remote cluster's ClusterData as Pulsar's
// replicator does: with brokerClientTlsEnabled it dials
// brokerServiceUrlTls, trusting brokerClientTrustCertsFilePath (the
// system roots when empty; nothing checked with
// tlsAllowInsecureConnection) and, for TLS authentication, presenting
// brokerClientCertificateFilePath / brokerClientKeyFilePath; otherwise
// brokerServiceUrl in plaintext.
//
// A ClusterData without an authenticationPlugin falls back, as Pulsar's
// replication client does with authentication enabled, to the broker's
// own credentials (own: brokerClientAuthenticationPlugin/Parameters in
// force, nil for none): a token, or a TLS certificate presented with
// brokerClientTlsEnabled.
func replTargetOf(name string, cd policy.ClusterData, own *auth.ClientAuth) (replTarget, error) {
	a, err := replAuthFrom(cd.AuthenticationPlugin, cd.AuthenticationParameters)
	if err != nil {
		return replTarget{}, err
	}
	certFile, keyFile := cd.BrokerClientCertificateFilePath, cd.BrokerClientKeyFilePath
	if cd.AuthenticationPlugin == "" && own != nil {
		switch own.Method {
		case auth.MethodToken:
			tok, err := own.Data()
			if err != nil {
				return replTarget{}, fmt.Errorf("replication: the broker's token: %w", err)
			}
			a = replAuth{method: "token", data: tok}
		case auth.MethodTLS:
			a = replAuth{method: "tls"}
			certFile, keyFile = own.CertFile, own.KeyFile
		default:
			return replTarget{}, fmt.Errorf("replication: the broker's %s credentials are not supported (token or tls)", own.Method)
		}
	}
	if !cd.BrokerClientTLSEnabled {
		if cd.BrokerServiceURL == "" {
			return replTarget{}, errors.New("replication: cluster " + name + " has no brokerServiceUrl (and brokerClientTlsEnabled is false)")
		}
		if a.method == "tls" {
			return replTarget{}, errors.New("replication: cluster " + name + ": TLS authentication needs brokerClientTlsEnabled")
		}
		return replTarget{url: cd.BrokerServiceURL, auth: a}, nil
	}
	if cd.BrokerClientTLSEnabledWithKeyStore {
		return replTarget{}, errors.New("replication: cluster " + name + ": key stores are not supported; give brokerClientTrustCertsFilePath and PEM files")
	}
	if cd.BrokerServiceURLTLS == "" {
		return replTarget{}, errors.New("replication: cluster " + name + " has brokerClientTlsEnabled but no brokerServiceUrlTls")
	}
	if a.method == "tls" && (certFile == "" || keyFile == "") {
		return replTarget{}, errors.New("replication: cluster " + name + ": TLS authentication needs brokerClientCertificateFilePath and brokerClientKeyFilePath")
	}
	return replTarget{url: cd.BrokerServiceURLTLS, auth: a, tls: true, trust: cd.BrokerClientTrustCertsFilePath,
		insecure: cd.TLSAllowInsecureConnection, certFile: certFile, keyFile: keyFile}, nil
}

// hostOf returns the first host:port of a pulsar:// or pulsar+ssl://
// service URL.
func hostOf(serviceURL string) (string, error) {
	rest, ok := strings.CutPrefix(serviceURL, "pulsar://")
	if !ok {
		rest, ok = strings.CutPrefix(serviceURL, "pulsar+ssl://")
	}
	if !ok {
		return "", fmt.Errorf("replication: broker service URL %q is not pulsar:// or pulsar+ssl://", serviceURL)
	}
	host, _, _ := strings.Cut(rest, ",")
	host = strings.TrimSuffix(host, "/")
	if host == "" {
		return "", fmt.Errorf("replication: broker service URL %q has no host", serviceURL)
	}
	return host, nil
}

// dialReplProducer connects to the cluster at serviceURL, looks topic up
// (following redirects) and creates producer name on it.
func dialReplProducer(ctx context.Context, to replTarget, topic, name string) (*replProducer, error) {
	if _, err := hostOf(to.url); err != nil {
		return nil, err
	}
	opts := pulsarclient.ClientOptions{URL: to.url, OperationTimeout: replConnectTimeout, ConnectionTimeout: replConnectTimeout}
	switch to.auth.method {
	case "token":
		opts.Authentication = pulsarclient.NewAuthenticationToken(string(to.auth.data))
	case "tls":
		opts.Authentication = pulsarclient.NewAuthenticationTLS(to.certFile, to.keyFile)
	}
	if to.tls {
		opts.TLSTrustCertsFilePath = to.trust
		opts.TLSAllowInsecureConnection = to.insecure
		opts.TLSValidateHostname = !to.insecure
	}
	cl, err := pulsarclient.NewClient(opts)
	if err != nil {
		return nil, fmt.Errorf("replication: %w", err)
	}
	p := &replProducer{cl: cl, since: time.Now(), receipts: make(chan replReceipt, 1024), done: make(chan struct{})}
	ep, err := cl.CreateEntryProducer(ctx, pulsarclient.EntryProducerOptions{Topic: topic, Name: name,
		Receipt: func(seq uint64, ledger, entry int64) {
			select {
			case p.receipts <- replReceipt{seq: seq, pos: storage.Position{LedgerID: ledger, EntryID: entry}}:
			case <-p.done:
			}
		},
		Closed: func(err error) { p.close(fmt.Errorf("replication: %w", err)) },
	})
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("replication: %w", err)
	}
	p.ep, p.addr = ep, strings.TrimPrefix(ep.Addr(), "pulsar://")
	return p, nil
}

// send queues a SEND of entry (a complete payload section); the client
// writes queued frames in order, so flush has nothing to do.
func (p *replProducer) send(h *pulsarproto.SendHeader, entry []byte, _ bool) error {
	return p.ep.Send(h, entry)
}

func (p *replProducer) flush() error { return nil }

// close ends the producer and its connection once; err is why.
func (p *replProducer) close(err error) {
	p.once.Do(func() {
		p.err = err
		close(p.done)
		go p.cl.Close() // not on the client's goroutines (Closed runs there)
	})
}
