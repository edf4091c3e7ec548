package pulsarclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// HTTP service URLs (http://host:port, https://host:port): topics are
// looked up with GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}
// (LookupData: brokerUrl, brokerUrlTls) and the binary protocol is then
// spoken with the broker found; partitioned metadata is asked of that
// broker, and a namespace's topics come from
// GET /admin/v2/namespaces/{tenant}/{ns}/topics.

func (cl *Client) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cl.service.https {
		cfg, err := cl.tlsConfig(cl.service.hosts[0])
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Transport: tr, Timeout: cl.opts.OperationTimeout}, nil
}

// httpGet fetches path from the service and decodes its JSON into v.
func (cl *Client) httpGet(ctx context.Context, path string, v any) error {
	hc, err := cl.httpClient()
	if err != nil {
		return err
	}
	scheme := "http://"
	if cl.service.https {
		scheme = "https://"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+cl.service.hosts[0]+path, nil)
	if err != nil {
		return err
	}
	if a := cl.opts.Authentication; a != nil {
		data, err := a.Data()
		if err != nil {
			return err
		}
		switch a.Name() {
		case "token":
			req.Header.Set("Authorization", "Bearer "+string(data))
		case "basic":
			u, p, _ := strings.Cut(string(data), ":")
			req.SetBasicAuth(u, p)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConnectionClosed, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pulsarclient: GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("pulsarclient: GET %s: %w", path, err)
	}
	return nil
}

func topicPath(topic string) (string, error) {
	tn, err := pulsarproto.ParseTopicName(topic)
	if err != nil {
		return "", err
	}
	return tn.Domain + "/" + url.PathEscape(tn.Tenant) + "/" + url.PathEscape(tn.Namespace) + "/" + url.PathEscape(tn.Local), nil
}

// httpLookup returns a connection to the broker serving topic.
func (cl *Client) httpLookup(ctx context.Context, topic string) (*conn, error) {
	p, err := topicPath(topic)
	if err != nil {
		return nil, err
	}
	var ld struct {
		BrokerURL    string `json:"brokerUrl"`
		BrokerURLTLS string `json:"brokerUrlTls"`
	}
	if err := cl.httpGet(ctx, "/lookup/v2/topic/"+p, &ld); err != nil {
		return nil, fmt.Errorf("pulsarclient: lookup %s: %w", topic, err)
	}
	u := ld.BrokerURL
	if cl.service.https {
		u = ld.BrokerURLTLS
	}
	if u == "" {
		return nil, fmt.Errorf("pulsarclient: lookup %s: no broker URL in %+v", topic, ld)
	}
	return cl.getConn(ctx, u, u)
}

func (cl *Client) httpTopicsOfNamespace(ctx context.Context, ns string) ([]string, error) {
	tenant, name, err := pulsarproto.ParseNamespace(ns)
	if err != nil {
		return nil, err
	}
	var out []string
	err = cl.httpGet(ctx, "/admin/v2/namespaces/"+url.PathEscape(tenant)+"/"+url.PathEscape(name)+"/topics?mode=PERSISTENT", &out)
	return out, err
}
