package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata"
)

// registerRoutes declares the broker's own HTTP route, /metrics. The
// admin REST API (package admin: lookup, cluster, bundles, tenants,
// ...) is declared on the same table (Router) before Start.
func (b *Broker) registerRoutes(rt *httpapi.Table) {
	m := b.metricsHandler()
	rt.Add(httpapi.Route{Method: "GET", Pattern: "/metrics", Access: auth.AccessMetrics,
		Handler: func(w http.ResponseWriter, r *http.Request, _ httpapi.Params) { m.ServeHTTP(w, r) }})
}

// LookupData is the answer of an HTTP topic lookup (Pulsar's LookupData).
type LookupData struct {
	BrokerURL    string `json:"brokerUrl"`
	BrokerURLTLS string `json:"brokerUrlTls"`
	HTTPURL      string `json:"httpUrl"`
	HTTPURLTLS   string `json:"httpUrlTls"`
	NativeURL    string `json:"nativeUrl"`
	BrokerURLSsl string `json:"brokerUrlSsl,omitempty"`
}

// LookupTopic answers an HTTP lookup of topic: the owner's URLs, or
// (redirect != "") the broker that decides, to ask again there. Errors
// wrap ErrInvalidTopicName, ErrNamespaceNotFound or cluster.ErrNoBroker;
// any other is internal.
func (b *Broker) LookupTopic(ctx context.Context, topic string, authoritative bool) (data LookupData, redirect string, err error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return data, "", err
	}
	exists, err := b.reg.namespaceExists(ctx, tn.NamespaceName())
	if err != nil {
		return data, "", err
	}
	if !exists {
		return data, "", fmt.Errorf("%w: %s", ErrNamespaceNotFound, tn.NamespaceName())
	}
	if b.cluster == nil {
		plain, _ := b.lookupURLs()
		return LookupData{BrokerURL: plain, BrokerURLTLS: b.ServiceURLTLS(), HTTPURL: b.webURL(), HTTPURLTLS: b.WebURLTLS(), NativeURL: plain}, "", nil
	}
	res, err := b.cluster.Lookup(ctx, tn.String(), authoritative)
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		return data, "", fmt.Errorf("%w: %s", ErrNamespaceNotFound, tn.NamespaceName())
	case err != nil:
		return data, "", err
	case res.Redirect:
		return data, res.Target.HTTPURL + lookupURLPath(tn) + "?authoritative=" + strconv.FormatBool(res.Authoritative), nil
	}
	t := res.Target
	return LookupData{BrokerURL: t.NativeURL, BrokerURLTLS: t.NativeURLTLS, HTTPURL: t.HTTPURL, HTTPURLTLS: t.HTTPURLTLS, NativeURL: t.NativeURL}, "", nil
}
