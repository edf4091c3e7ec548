package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// Spec is the instance configuration the worker passes in
// MAGNETAR_FUNCTION_SPEC (the worker's functions.Spec).
type Spec struct {
	Kind                 string         `json:"kind"`
	Tenant               string         `json:"tenant"`
	Namespace            string         `json:"namespace"`
	Name                 string         `json:"name"`
	Inputs               []string       `json:"inputs,omitempty"`
	TopicsPattern        string         `json:"topicsPattern,omitempty"`
	Output               string         `json:"output,omitempty"`
	LogTopic             string         `json:"logTopic,omitempty"`
	DeadLetterTopic      string         `json:"deadLetterTopic,omitempty"`
	MaxMessageRetries    int            `json:"maxMessageRetries"`
	SubName              string         `json:"subName"`
	SubscriptionType     string         `json:"subscriptionType"`
	SubscriptionPosition string         `json:"subscriptionPosition,omitempty"`
	ProcessingGuarantees string         `json:"processingGuarantees"`
	AutoAck              bool           `json:"autoAck"`
	UserConfig           map[string]any `json:"userConfig,omitempty"`
	Secrets              map[string]any `json:"secrets,omitempty"`
	Parallelism          int            `json:"parallelism"`
}

// FQFN is tenant/namespace/name.
func (s *Spec) FQFN() string { return s.Tenant + "/" + s.Namespace + "/" + s.Name }

// Stats is the report written to the stats pipe (cumulative).
type Stats struct {
	Received         int64              `json:"received"`
	Processed        int64              `json:"processed"`
	UserExceptions   int64              `json:"userExceptions"`
	SystemExceptions int64              `json:"systemExceptions"`
	LatencySumMs     float64            `json:"latencySumMs"`
	LatencyCount     int64              `json:"latencyCount"`
	LastInvocation   int64              `json:"lastInvocation"`
	LatestUser       []Exception        `json:"latestUserExceptions,omitempty"`
	LatestSystem     []Exception        `json:"latestSystemExceptions,omitempty"`
	UserMetrics      map[string]float64 `json:"userMetrics,omitempty"`
}

// Exception is one recent error.
type Exception struct {
	ExceptionString string `json:"exceptionString"`
	TimestampMs     int64  `json:"timestampMs"`
}

// Instance is a running instance: configuration, client, stats.
type Instance struct {
	Spec      Spec
	ID        int
	Client    *pulsarclient.Client
	Log       *slog.Logger
	workerURL string
	stateDir  string

	mu        sync.Mutex
	stats     Stats
	producers map[string]*pulsarclient.Producer
	logProd   *pulsarclient.Producer
	http      *http.Client
	// authHeader authenticates state calls to the worker ("": none).
	authHeader string
	stopping   atomic.Bool
}

// Context is what a handler sees for one message.
type Context struct {
	inst  *Instance
	msg   *pulsarclient.Message
	ctx   context.Context
	extra []*pulsarclient.ProducerMessage
}

func (c *Context) Context() context.Context          { return c.ctx }
func (c *Context) InputTopic() string                { return c.msg.Topic() }
func (c *Context) Message() *pulsarclient.Message    { return c.msg }
func (c *Context) MessageID() pulsarclient.MessageID { return c.msg.ID() }
func (c *Context) Key() string                       { return c.msg.Key() }
func (c *Context) Properties() map[string]string {
	return c.msg.Properties()
}
func (c *Context) Instance() *Instance          { return c.inst }
func (c *Context) InstanceID() int              { return c.inst.ID }
func (c *Context) FunctionName() string         { return c.inst.Spec.Name }
func (c *Context) Tenant() string               { return c.inst.Spec.Tenant }
func (c *Context) Namespace() string            { return c.inst.Spec.Namespace }
func (c *Context) OutputTopic() string          { return c.inst.Spec.Output }
func (c *Context) UserConfig() map[string]any   { return c.inst.Spec.UserConfig }
func (c *Context) Logger() *slog.Logger         { return c.inst.Log }
func (c *Context) UserConfigValue(k string) any { return c.inst.Spec.UserConfig[k] }

// Publish sends payload to topic; with ATLEAST_ONCE or EFFECTIVELY_ONCE
// the input is acknowledged only after these sends are persisted.
func (c *Context) Publish(topic string, payload []byte, key string) {
	c.extra = append(c.extra, &pulsarclient.ProducerMessage{Payload: payload, Key: key, Properties: map[string]string{"__topic": topic}})
}

// RecordMetric sets a user metric (reported in stats and /metrics).
func (c *Context) RecordMetric(name string, v float64) { c.inst.RecordMetric(name, v) }

// IncrCounter adds delta to the function's durable counter key.
func (c *Context) IncrCounter(key string, delta int64) (int64, error) {
	return c.inst.IncrCounter(c.ctx, key, delta)
}

// GetCounter reads a counter (0 when absent).
func (c *Context) GetCounter(key string) (int64, error) { return c.inst.GetCounter(c.ctx, key) }

// PutState stores value under key, durably.
func (c *Context) PutState(key string, value []byte) error { return c.inst.PutState(c.ctx, key, value) }

// GetState reads key (nil, nil when absent).
func (c *Context) GetState(key string) ([]byte, error) { return c.inst.GetState(c.ctx, key) }

// RecordMetric sets a user metric.
func (in *Instance) RecordMetric(name string, v float64) {
	in.mu.Lock()
	if in.stats.UserMetrics == nil {
		in.stats.UserMetrics = map[string]float64{}
	}
	in.stats.UserMetrics[name] = v
	in.mu.Unlock()
}

// Dir is a directory private to this instance that survives restarts.
func (in *Instance) Dir() string { return in.stateDir }

func (in *Instance) stateURL(kind, key string) string {
	return fmt.Sprintf("%s/admin/v3/functions/%s/%s/%s/%s/%s", in.workerURL, url.PathEscape(in.Spec.Tenant),
		url.PathEscape(in.Spec.Namespace), url.PathEscape(in.Spec.Name), kind, url.PathEscape(key))
}

type stateJSON struct {
	Key         string `json:"key"`
	ByteValue   []byte `json:"byteValue,omitempty"`
	NumberValue *int64 `json:"numberValue,omitempty"`
}

func (in *Instance) do(ctx context.Context, method, u string, body []byte, ct string) ([]byte, int, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
		if err != nil {
			return nil, 0, err
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if in.authHeader != "" {
			req.Header.Set("Authorization", in.authHeader)
		}
		resp, err := in.http.Do(req)
		if err != nil {
			lastErr = err
			select {
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			case <-time.After(time.Duration(100<<attempt) * time.Millisecond):
			}
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			lastErr = fmt.Errorf("state: %s %d: %s", method, resp.StatusCode, b)
			continue
		}
		return b, resp.StatusCode, nil
	}
	return nil, 0, lastErr
}

// IncrCounter adds delta to counter key and returns the new value.
func (in *Instance) IncrCounter(ctx context.Context, key string, delta int64) (int64, error) {
	b, code, err := in.do(ctx, http.MethodPost, in.stateURL("counter", key), []byte(strconv.FormatInt(delta, 10)), "text/plain")
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("counter %q: %d %s", key, code, b)
	}
	var st stateJSON
	if err := json.Unmarshal(b, &st); err != nil || st.NumberValue == nil {
		return 0, fmt.Errorf("counter %q: bad answer %s", key, b)
	}
	return *st.NumberValue, nil
}

// GetCounter reads counter key (0 when absent).
func (in *Instance) GetCounter(ctx context.Context, key string) (int64, error) {
	b, code, err := in.do(ctx, http.MethodGet, in.stateURL("state", key), nil, "")
	if err != nil {
		return 0, err
	}
	if code == http.StatusNotFound {
		return 0, nil
	}
	var st stateJSON
	if code != http.StatusOK || json.Unmarshal(b, &st) != nil {
		return 0, fmt.Errorf("counter %q: %d %s", key, code, b)
	}
	if st.NumberValue == nil {
		return 0, fmt.Errorf("key %q is not a counter", key)
	}
	return *st.NumberValue, nil
}

// PutState stores value under key.
func (in *Instance) PutState(ctx context.Context, key string, value []byte) error {
	body, _ := json.Marshal(stateJSON{Key: key, ByteValue: value})
	b, code, err := in.do(ctx, http.MethodPost, in.stateURL("state", key), body, "application/json")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("put state %q: %d %s", key, code, b)
	}
	return nil
}

// GetState reads key; nil, nil when absent.
func (in *Instance) GetState(ctx context.Context, key string) ([]byte, error) {
	b, code, err := in.do(ctx, http.MethodGet, in.stateURL("state", key), nil, "")
	if err != nil {
		return nil, err
	}
	if code == http.StatusNotFound {
		return nil, nil
	}
	var st stateJSON
	if code != http.StatusOK || json.Unmarshal(b, &st) != nil {
		return nil, fmt.Errorf("get state %q: %d %s", key, code, b)
	}
	return st.ByteValue, nil
}

// producer returns the cached producer for topic; name, when set, fixes
// the producer name (EFFECTIVELY_ONCE).
func (in *Instance) producer(topic, name string) (*pulsarclient.Producer, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	k := topic + "\x00" + name
	if p, ok := in.producers[k]; ok {
		return p, nil
	}
	opts := pulsarclient.ProducerOptions{Topic: topic, Name: name, SendTimeout: 60 * time.Second,
		BatchingMaxPublishDelay: time.Millisecond}
	if name != "" {
		// Dedup needs one sequence id per message.
		opts.DisableBatching = true
	}
	p, err := in.Client.CreateProducer(opts)
	if err != nil {
		return nil, err
	}
	in.producers[k] = p
	return p, nil
}

func (in *Instance) userError(err error) {
	in.mu.Lock()
	in.stats.UserExceptions++
	in.stats.LatestUser = appendExc(in.stats.LatestUser, err)
	in.mu.Unlock()
}

func (in *Instance) systemError(err error) {
	in.mu.Lock()
	in.stats.SystemExceptions++
	in.stats.LatestSystem = appendExc(in.stats.LatestSystem, err)
	in.mu.Unlock()
	in.Log.Warn("system exception", "err", err)
}

func appendExc(l []Exception, err error) []Exception {
	l = append(l, Exception{ExceptionString: err.Error(), TimestampMs: time.Now().UnixMilli()})
	if len(l) > 10 {
		l = l[len(l)-10:]
	}
	return l
}

// Snapshot returns the current stats.
func (in *Instance) Snapshot() Stats {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := in.stats
	s.LatestUser = append([]Exception(nil), s.LatestUser...)
	s.LatestSystem = append([]Exception(nil), s.LatestSystem...)
	if s.UserMetrics != nil {
		m := make(map[string]float64, len(s.UserMetrics))
		for k, v := range s.UserMetrics {
			m[k] = v
		}
		s.UserMetrics = m
	}
	return s
}

// Received and Processed count one message (used by sources and sinks).
func (in *Instance) Received(n int64) {
	in.mu.Lock()
	in.stats.Received += n
	in.stats.LastInvocation = time.Now().UnixMilli()
	in.mu.Unlock()
}

func (in *Instance) processed(n int64, lat time.Duration) {
	in.mu.Lock()
	in.stats.Processed += n
	in.stats.LatencySumMs += float64(lat.Microseconds()) / 1000
	in.stats.LatencyCount += n
	in.mu.Unlock()
}

// Processed counts n messages done, with their total latency.
func (in *Instance) Processed(n int64, lat time.Duration) { in.processed(n, lat) }

// UserError and SystemError count a failure of the user side or of the
// runtime.
func (in *Instance) UserError(err error)   { in.userError(err) }
func (in *Instance) SystemError(err error) { in.systemError(err) }

// Stopping reports whether SIGTERM arrived.
func (in *Instance) Stopping() bool { return in.stopping.Load() }

// Start connects the instance: spec from the environment, client, logger
// (stderr plus the log topic), stats reporter. The returned context ends
// on SIGTERM/SIGINT.
func Start() (*Instance, context.Context, func(), error) {
	var spec Spec
	raw := os.Getenv("MAGNETAR_FUNCTION_SPEC")
	if raw == "" {
		return nil, nil, nil, errors.New("MAGNETAR_FUNCTION_SPEC is not set: run this program as a Magnetar function instance")
	}
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return nil, nil, nil, fmt.Errorf("MAGNETAR_FUNCTION_SPEC: %w", err)
	}
	id, _ := strconv.Atoi(os.Getenv("MAGNETAR_INSTANCE_ID"))
	// The function's own credentials (its submitter's token), on the
	// configuration pipe: for brokers and for the worker's state API.
	cred, err := readCredentials()
	if err != nil {
		return nil, nil, nil, err
	}
	opts := pulsarclient.ClientOptions{URL: os.Getenv("MAGNETAR_SERVICE_URL"),
		OperationTimeout: 30 * time.Second, ConnectionTimeout: 10 * time.Second}
	hc, authHeader, err := cred.apply(&opts)
	if err != nil {
		return nil, nil, nil, err
	}
	cl, err := pulsarclient.NewClient(opts)
	if err != nil {
		return nil, nil, nil, err
	}
	in := &Instance{Spec: spec, ID: id, Client: cl, workerURL: os.Getenv("MAGNETAR_WORKER_URL"),
		stateDir: os.Getenv("MAGNETAR_INSTANCE_DIR"), producers: map[string]*pulsarclient.Producer{},
		http: hc, authHeader: authHeader}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if spec.LogTopic != "" {
		if p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: spec.LogTopic}); err == nil {
			in.logProd = p
			h = &topicHandler{Handler: h, p: p, fqfn: spec.FQFN(), id: id}
		}
	}
	in.Log = slog.New(h).With("fqfn", spec.FQFN(), "instance", id)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	statsFile := os.NewFile(3, "stats")
	reportDone := make(chan struct{})
	report := func() {
		if statsFile == nil {
			return
		}
		b, _ := json.Marshal(in.Snapshot())
		_, _ = statsFile.Write(append(b, '\n'))
	}
	go func() {
		defer close(reportDone)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				report()
			}
		}
	}()
	go func() {
		<-ctx.Done()
		in.stopping.Store(true)
	}()
	closeAll := func() {
		stop()
		<-reportDone
		in.mu.Lock()
		for _, p := range in.producers {
			_ = p.FlushWithCtx(context.Background())
			p.Close()
		}
		in.mu.Unlock()
		if in.logProd != nil {
			_ = in.logProd.FlushWithCtx(context.Background())
			in.logProd.Close()
		}
		report()
		cl.Close()
	}
	return in, ctx, closeAll, nil
}

// topicHandler also publishes every log record's message to the log topic.
type topicHandler struct {
	slog.Handler
	p    *pulsarclient.Producer
	fqfn string
	id   int
}

func (h *topicHandler) Handle(ctx context.Context, r slog.Record) error {
	var sb strings.Builder
	sb.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		sb.WriteString(" " + a.String())
		return true
	})
	h.p.SendAsync(context.Background(), &pulsarclient.ProducerMessage{Payload: []byte(sb.String()),
		Properties: map[string]string{"fqfn": h.fqfn, "instance": strconv.Itoa(h.id), "loglevel": r.Level.String()}}, nil)
	return h.Handler.Handle(ctx, r)
}

func (h *topicHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &topicHandler{Handler: h.Handler.WithAttrs(a), p: h.p, fqfn: h.fqfn, id: h.id}
}

func (h *topicHandler) WithGroup(n string) slog.Handler {
	return &topicHandler{Handler: h.Handler.WithGroup(n), p: h.p, fqfn: h.fqfn, id: h.id}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "magnetar function:", err)
	os.Exit(1)
}
