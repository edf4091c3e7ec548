package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/magnetar-mq/magnetar/metadata"
)

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
func (o Ownership) LookupTopic(ctx context.Context, topic string, authoritative bool) (data LookupData, redirect string, err error) {
	b := o.b
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
	if b.cluster.svc == nil {
		plain, secure := b.net.lookupURLs()
		return LookupData{BrokerURL: plain, BrokerURLTLS: secure, HTTPURL: b.net.webURL(), HTTPURLTLS: b.net.webURLTLS(), NativeURL: plain}, "", nil
	}
	res, err := b.cluster.svc.Lookup(ctx, tn.String(), authoritative)
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
