package brokeradmin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/brokercluster"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
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
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return data, "", err
	}
	exists, err := o.b.Registry().NamespaceExists(ctx, tn.NamespaceName())
	if err != nil {
		return data, "", err
	}
	if !exists {
		return data, "", fmt.Errorf("%w: %s", broker.ErrNamespaceNotFound, tn.NamespaceName())
	}
	svc := brokercluster.Service(o.b)
	if svc == nil {
		u := o.b.URLs()
		return LookupData{BrokerURL: u.Lookup, BrokerURLTLS: u.LookupTLS, HTTPURL: u.Web, HTTPURLTLS: u.WebTLS, NativeURL: u.Lookup}, "", nil
	}
	res, err := svc.Lookup(ctx, tn.String(), authoritative)
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		return data, "", fmt.Errorf("%w: %s", broker.ErrNamespaceNotFound, tn.NamespaceName())
	case err != nil:
		return data, "", err
	case res.Redirect:
		return data, res.Target.HTTPURL + lookupURLPath(tn) + "?authoritative=" + strconv.FormatBool(res.Authoritative), nil
	}
	t := res.Target
	return LookupData{BrokerURL: t.NativeURL, BrokerURLTLS: t.NativeURLTLS, HTTPURL: t.HTTPURL, HTTPURLTLS: t.HTTPURLTLS, NativeURL: t.NativeURL}, "", nil
}

// lookupURLPath rebuilds the HTTP lookup path of a topic.
func lookupURLPath(tn pulsarproto.TopicName) string {
	return "/lookup/v2/topic/" + tn.Domain + "/" + tn.Tenant + "/" + tn.Namespace + "/" + escapePathSegment(tn.Local)
}

func escapePathSegment(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "%", "%25"), "/", "%2F")
}
