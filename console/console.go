package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/brokeradmin"
	"github.com/magnetar-mq/magnetar/brokercluster"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/topichistory"
	"github.com/magnetar-mq/magnetar/topicstats"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Source is what the console reads of the broker: the catalog of
// tenants, namespaces and topics, and what runs (stats, history,
// cluster). BrokerSource makes one of a broker.
type Source interface {
	Catalog
	Live
}

// Catalog names the tenants, namespaces and topics.
type Catalog interface {
	ClusterName() string
	Policies() *policy.Store
	TopicsOfNamespace(ctx context.Context, ns string, persistent, nonPersistent bool) ([]string, error)
	PartitionedTopics(ctx context.Context, ns, domain string) ([]string, error)
	Partitions(ctx context.Context, topic string) (int, error)
	TopicExists(ctx context.Context, topic string) (bool, error)
	TopicStats(ctx context.Context, topic string) (topicstats.TopicStats, error)
}

// Live is the running broker: its URLs, bookies, sampled history,
// loaded-only stats and (when clustered) the cluster.
type Live interface {
	ServiceURL() string
	WebURL() string
	Bookies() []bookieinfo.Status
	History
	LoadedTopicStats(topic string) (topicstats.TopicStats, bool)
	Cluster() *cluster.Service
}

// History is the topics' sampled history (*topichistory.Sampler).
type History interface {
	TopicHistory(topic string) []topichistory.Sample
	HistoryInterval() time.Duration
}

// BrokerSource is the Source of b: its node, topic administration and
// topic reads, its cluster, h, the history sampler registered on b, and
// bookies, the storage nodes (nil: none known).
func BrokerSource(b *broker.Broker, h History, bookies bookieinfo.Source) Source {
	r := brokeradmin.For(b)
	return brokerSource{Node: r.Node, Topics: r.Topics, Reads: r.Reads, History: h, b: b, bookies: bookies}
}

type brokerSource struct {
	brokeradmin.Node
	brokeradmin.Topics
	brokeradmin.Reads
	History
	b       *broker.Broker
	bookies bookieinfo.Source
}

func (s brokerSource) Bookies() []bookieinfo.Status {
	if s.bookies == nil {
		return nil
	}
	return s.bookies.Bookies()
}

func (s brokerSource) Cluster() *cluster.Service { return brokercluster.Service(s.b) }
func (s brokerSource) LoadedTopicStats(topic string) (topicstats.TopicStats, bool) {
	t, ok := s.b.LoadedTopic(topic)
	if !ok {
		return topicstats.TopicStats{}, false
	}
	return topicstats.For(s.b).Full(t), true
}

// Console serves the pages. It holds no state of its own beyond the
// parsed templates: every page is built from Source on each request.
type Console struct {
	src   Source
	pages map[string]*template.Template
	log   *slog.Logger
}

// Prefix is where the console is served.
const Prefix = "/console"

// pageNames are the templates under templates/, each rendered inside
// layout.html.
var pageNames = []string{"overview", "tenant", "namespace", "topic", "bookies", "brokers", "error"}

// Register installs the console's routes on rt (before the broker
// starts). log may be nil.
func Register(rt *httpapi.Table, src Source, log *slog.Logger) (*Console, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Console{src: src, pages: map[string]*template.Template{}, log: log}
	for _, n := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+n+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", n, err)
		}
		c.pages[n] = t
	}
	rt.Handle("GET", Prefix, auth.AccessSuperUser, c.overview)
	rt.Handle("GET", Prefix+"/tenants/{tenant}", auth.AccessTenantAdmin, c.tenant)
	rt.Handle("GET", Prefix+"/namespaces/{tenant}/{ns}", auth.AccessNamespaceConsume, c.namespace)
	rt.Handle("GET", Prefix+"/topics/{domain}/{tenant}/{ns}/{topic}", auth.AccessTopicLookup, c.topic)
	rt.Handle("GET", Prefix+"/topics/{domain}/{tenant}/{ns}/{topic}/history", auth.AccessTopicLookup, c.history)
	rt.Handle("GET", Prefix+"/bookies", auth.AccessSuperUser, c.bookies)
	rt.Handle("GET", Prefix+"/brokers", auth.AccessSuperUser, c.brokers)
	rt.Handle("GET", Prefix+"/static/{file}", auth.AccessAny, c.static)
	rt.Handle("GET", Prefix+"/{rest...}", auth.AccessSuperUser, func(w http.ResponseWriter, r *http.Request, _ httpapi.Params) {
		c.errorPage(w, r, http.StatusNotFound, "No such console page: "+r.URL.Path)
	})
	return c, nil
}

// page is what every template gets: the layout's fields and the page's
// own data.
type page struct {
	Title   string
	Cluster string
	Crumbs  []crumb
	Status  int
	Message string
	Data    any
}

type crumb struct{ Name, Href string }

// render executes a page into a buffer first, so a template error gives
// a clean 500 instead of half a page.
func (c *Console) render(w http.ResponseWriter, status int, name string, p page) {
	p.Cluster = c.src.ClusterName()
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, p); err != nil {
		c.log.Error("console template", "page", name, "err", err)
		http.Error(w, "console: cannot render page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorPage renders the error page with status.
func (c *Console) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, status, "error", page{Title: http.StatusText(status), Status: status, Message: msg,
		Crumbs: []crumb{{"Overview", Prefix}}})
}

// fail maps a Service or policy error to its error page: not-found
// errors are 404, bad names 400, anything else 500 (whose detail goes to
// the log, not the page).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	msg := err.Error()
	if code == http.StatusInternalServerError {
		c.log.Error("console page failed", "path", r.URL.Path, "err", err)
		msg = "Internal server error; the broker log has the details"
	}
	c.errorPage(w, r, code, msg)
}

func statusOf(err error) int {
	var bad *policy.BadValueError
	switch {
	case errors.Is(err, broker.ErrTopicNotFound), errors.Is(err, broker.ErrNamespaceNotFound),
		errors.Is(err, broker.ErrSubscriptionNotFound),
		errors.Is(err, policy.ErrNamespaceNotFound), errors.Is(err, policy.ErrTenantNotFound):
		return http.StatusNotFound
	case errors.Is(err, broker.ErrInvalidTopicName), errors.Is(err, policy.ErrInvalidName), errors.As(err, &bad):
		return http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// static serves the embedded stylesheet and script.
func (c *Console) static(w http.ResponseWriter, r *http.Request, p httpapi.Params) {
	name := p["file"]
	data, err := fs.ReadFile(assets, "static/"+name)
	if err != nil || strings.Contains(name, "/") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	switch path.Ext(name) {
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.Header().Set("Cache-Control", "max-age=300")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(data)
}
