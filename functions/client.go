package functions

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// ClientOptions are the worker's own identity and trust on its outgoing
// connections: to brokers (a function's trigger) and to the other
// workers (an instance's status from the worker running it). Pulsar's
// brokerClient* settings fill them.
type ClientOptions struct {
	// Auth is the worker's credentials (brokerClientAuthenticationPlugin
	// and Parameters); nil: none.
	Auth *auth.ClientAuth
	// TrustCertsFile verifies brokers' certificates on pulsar+ssl
	// (brokerClientTrustCertsFilePath; "": the system roots).
	TrustCertsFile string
	// TLS is the client TLS configuration towards other workers' HTTPS
	// listeners (nil: the defaults).
	TLS *tls.Config
}

// clientAuthentication adapts the worker's credentials to the client.
type clientAuthentication struct{ a *auth.ClientAuth }

func (c clientAuthentication) Name() string          { return c.a.Method }
func (c clientAuthentication) Data() ([]byte, error) { return c.a.Data() }

// brokerClientOptions are the options of the worker's own broker clients.
func (w *Worker) brokerClientOptions() pulsarclient.ClientOptions {
	o := pulsarclient.ClientOptions{URL: w.serviceURL, OperationTimeout: 30 * time.Second,
		TLSTrustCertsFilePath: w.opts.Client.TrustCertsFile}
	switch a := w.opts.Client.Auth; {
	case a == nil:
	case a.Method == auth.MethodTLS:
		o.Authentication = pulsarclient.NewAuthenticationTLS(a.CertFile, a.KeyFile)
	default:
		o.Authentication = clientAuthentication{a}
	}
	return o
}

// peerDo sends a request to another worker with the worker's own
// credentials.
func (w *Worker) peerDo(req *http.Request) (*http.Response, error) {
	if a := w.opts.Client.Auth; a != nil {
		h, err := a.HTTPHeader()
		if err != nil {
			return nil, err
		}
		if h != "" {
			req.Header.Set("Authorization", h)
		}
	}
	return w.peers.Do(req)
}
