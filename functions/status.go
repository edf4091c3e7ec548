package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// instanceView is one instance's status and stats as this worker (or the
// owner it asked) sees it.
type instanceView struct {
	ID       int           `json:"instanceId"`
	Running  bool          `json:"running"`
	Error    string        `json:"error"`
	Restarts int64         `json:"numRestarts"`
	WorkerID string        `json:"workerId"`
	Stats    InstanceStats `json:"stats"`
}

func (w *Worker) localView(k instKey) instanceView {
	v := instanceView{ID: k.id, WorkerID: w.opts.ID}
	if in := w.local(k); in != nil {
		v.Stats, v.Running, v.Error, v.Restarts = in.stats()
	}
	return v
}

// view returns instance k's view: local, or fetched from its owner.
func (w *Worker) view(c *call, k instKey, stopped bool) instanceView {
	if in := w.local(k); in != nil || c.fwdLocal || stopped {
		return w.localView(k)
	}
	id, base := w.ownerURL(k)
	if id == w.opts.ID || base == "" {
		return instanceView{ID: k.id, WorkerID: id, Error: "not yet started"}
	}
	u := fmt.Sprintf("%s/admin/v3/%s/%s/%s/%s/%d/status?view=raw", base, k.kind, url.PathEscape(c.tenant), url.PathEscape(c.ns), url.PathEscape(c.name), k.id)
	req, _ := http.NewRequestWithContext(c.ctx, http.MethodGet, u, nil)
	req.Header.Set(forwardedHeader, w.opts.ID)
	resp, err := w.peerDo(req)
	if err != nil {
		return instanceView{ID: k.id, WorkerID: id, Error: "owner unreachable: " + err.Error()}
	}
	defer resp.Body.Close()
	var v instanceView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		return instanceView{ID: k.id, WorkerID: id, Error: fmt.Sprintf("owner answered %d", resp.StatusCode)}
	}
	return v
}

func (w *Worker) views(c *call) ([]instanceView, *Record, bool) {
	r, _, err := w.st.get(c.ctx, c.kind, c.tenant, c.ns, c.name)
	if err != nil {
		c.fail(err)
		return nil, nil, false
	}
	if c.instance >= r.Spec.Parallelism {
		c.fail(fmt.Errorf("%w: instance %d of %s (parallelism %d)", ErrNotFound, c.instance, r.Spec.FQFN(), r.Spec.Parallelism))
		return nil, nil, false
	}
	var out []instanceView
	for i := 0; i < r.Spec.Parallelism; i++ {
		if c.instance >= 0 && i != c.instance {
			continue
		}
		out = append(out, w.view(c, instKey{kind: c.kind, fqfn: r.Spec.FQFN(), id: i}, r.Stopped[i]))
	}
	return out, r, true
}

func avgLatency(s InstanceStats) float64 {
	if s.LatencyCount == 0 {
		return 0
	}
	return s.LatencySumMs / float64(s.LatencyCount)
}

// statusOf renders Pulsar's per-instance status object for kind k.
func statusOf(k Kind, v instanceView) map[string]any {
	s := v.Stats
	m := map[string]any{"running": v.Running, "error": v.Error, "numRestarts": v.Restarts,
		"numSystemExceptions": s.SystemExceptions, "latestSystemExceptions": nonNil(s.LatestSystemExceptio), "workerId": v.WorkerID}
	switch k {
	case KindFunction:
		m["numReceived"] = s.Received
		m["numSuccessfullyProcessed"] = s.Processed
		m["numUserExceptions"] = s.UserExceptions
		m["latestUserExceptions"] = nonNil(s.LatestUserException)
		m["averageLatency"] = avgLatency(s)
		m["lastInvocationTime"] = s.LastInvocation
	case KindSource:
		m["numReceivedFromSource"] = s.Received
		m["numWritten"] = s.Processed
		m["numSourceExceptions"] = s.UserExceptions
		m["latestSourceExceptions"] = nonNil(s.LatestUserException)
		m["lastReceivedTime"] = s.LastInvocation
	case KindSink:
		m["numReadFromPulsar"] = s.Received
		m["numWrittenToSink"] = s.Processed
		m["numSinkExceptions"] = s.UserExceptions
		m["latestSinkExceptions"] = nonNil(s.LatestUserException)
		m["lastReceivedTime"] = s.LastInvocation
	}
	return m
}

func nonNil(e []ExceptionInfo) []ExceptionInfo {
	if e == nil {
		return []ExceptionInfo{}
	}
	return e
}

func (w *Worker) handleStatus(c *call) {
	if c.fwdLocal && c.r.URL.Query().Get("view") == "raw" && c.hasInstance {
		r, _, err := w.st.get(c.ctx, c.kind, c.tenant, c.ns, c.name)
		if err != nil {
			c.fail(err)
			return
		}
		httpapi.WriteJSON(c.w, http.StatusOK, w.localView(instKey{kind: c.kind, fqfn: r.Spec.FQFN(), id: c.instance}))
		return
	}
	vs, r, ok := w.views(c)
	if !ok {
		return
	}
	if c.hasInstance {
		httpapi.WriteJSON(c.w, http.StatusOK, statusOf(c.kind, vs[0]))
		return
	}
	running := 0
	insts := []map[string]any{}
	for _, v := range vs {
		if v.Running {
			running++
		}
		insts = append(insts, map[string]any{"instanceId": v.ID, "status": statusOf(c.kind, v)})
	}
	httpapi.WriteJSON(c.w, http.StatusOK, map[string]any{"numInstances": r.Spec.Parallelism, "numRunning": running, "instances": insts})
}

func statsOf(s InstanceStats) map[string]any {
	m := map[string]any{"receivedTotal": s.Received, "processedSuccessfullyTotal": s.Processed,
		"systemExceptionsTotal": s.SystemExceptions, "userExceptionsTotal": s.UserExceptions,
		"avgProcessLatency": avgLatency(s), "lastInvocation": s.LastInvocation}
	if s.UserMetrics != nil {
		m["userMetrics"] = s.UserMetrics
	}
	return m
}

func (w *Worker) handleStats(c *call) {
	vs, _, ok := w.views(c)
	if !ok {
		return
	}
	if c.hasInstance {
		httpapi.WriteJSON(c.w, http.StatusOK, statsOf(vs[0].Stats))
		return
	}
	var total InstanceStats
	insts := []map[string]any{}
	for _, v := range vs {
		total.add(v.Stats)
		insts = append(insts, map[string]any{"instanceId": v.ID, "metrics": statsOf(v.Stats)})
	}
	out := statsOf(total)
	delete(out, "userMetrics")
	out["instances"] = insts
	httpapi.WriteJSON(c.w, http.StatusOK, out)
}

func (w *Worker) handleGetState(c *call) {
	st, err := w.st.getState(c.ctx, c.tenant, c.ns, c.name, c.key)
	if err != nil {
		c.fail(err)
		return
	}
	httpapi.WriteJSON(c.w, http.StatusOK, st)
}

// handlePutState takes Pulsar's multipart "state" part (FunctionState
// JSON) or a JSON body.
func (w *Worker) handlePutState(c *call) {
	key := c.key
	var raw []byte
	if ct := c.r.Header.Get("Content-Type"); len(ct) >= 16 && ct[:16] == "application/json" {
		raw, _ = io.ReadAll(io.LimitReader(c.r.Body, MaxStateValue*3))
	} else {
		c.r.Body = http.MaxBytesReader(c.w, c.r.Body, MaxStateValue*3)
		if err := c.r.ParseMultipartForm(MaxStateValue * 3); err != nil {
			c.fail(badf("multipart form: %v", err))
			return
		}
		raw = []byte(c.r.FormValue("state"))
	}
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		c.fail(badf("state JSON: %v", err))
		return
	}
	if st.Key != "" && st.Key != key {
		c.fail(badf("state key %q differs from %q in the path", st.Key, key))
		return
	}
	st.Key = key
	if err := w.exists(c); err != nil {
		c.fail(err)
		return
	}
	out, err := w.st.putState(c.ctx, c.tenant, c.ns, c.name, &st)
	if err != nil {
		c.fail(err)
		return
	}
	httpapi.WriteJSON(c.w, http.StatusOK, out)
}

// exists checks that a function, source or sink named by c is deployed
// (state is shared by the three kinds of one name).
func (w *Worker) exists(c *call) error {
	var err error
	for _, k := range []Kind{KindFunction, KindSource, KindSink} {
		if _, _, err = w.st.get(c.ctx, k, c.tenant, c.ns, c.name); err == nil {
			return nil
		}
	}
	return err
}

// handleIncr adds the decimal body (or ?delta=) to a counter.
func (w *Worker) handleIncr(c *call) {
	ds := c.r.URL.Query().Get("delta")
	if ds == "" {
		b, _ := io.ReadAll(io.LimitReader(c.r.Body, 64))
		ds = string(b)
	}
	d, err := strconv.ParseInt(ds, 10, 64)
	if err != nil {
		c.fail(badf("counter delta %q: %v", ds, err))
		return
	}
	if err := w.exists(c); err != nil {
		c.fail(err)
		return
	}
	n, err := w.st.incrCounter(c.ctx, c.tenant, c.ns, c.name, c.key, d)
	if err != nil {
		c.fail(err)
		return
	}
	httpapi.WriteJSON(c.w, http.StatusOK, State{Key: c.key, NumberValue: &n})
}

// handleTrigger publishes the "data" part to the function's input (or the
// "topic" part) and answers with the first message that then appears on
// its output topic (empty when the function has none).
func (w *Worker) handleTrigger(c *call) {
	r, _, err := w.st.get(c.ctx, KindFunction, c.tenant, c.ns, c.name)
	if err != nil {
		c.fail(err)
		return
	}
	if err := c.r.ParseMultipartForm(8 << 20); err != nil {
		c.fail(badf("multipart form: %v", err))
		return
	}
	value := []byte(c.r.FormValue("data"))
	if fh, ok := c.r.MultipartForm.File["dataStream"]; ok && len(fh) > 0 {
		f, err := fh[0].Open()
		if err == nil {
			value, _ = io.ReadAll(io.LimitReader(f, 8<<20))
			f.Close()
		}
	}
	topic := c.r.FormValue("topic")
	if topic == "" {
		if len(r.Spec.Inputs) == 0 {
			c.fail(badf("function has no input topic to trigger; give topic"))
			return
		}
		topic = r.Spec.Inputs[0]
	}
	topic = qualify(topic, c.tenant, c.ns)
	cl, err := pulsarclient.NewClient(w.brokerClientOptions())
	if err != nil {
		c.fail(err)
		return
	}
	defer cl.Close()
	var rd *pulsarclient.Reader
	if r.Spec.Output != "" {
		if rd, err = cl.CreateReader(pulsarclient.ReaderOptions{Topic: r.Spec.Output, StartMessageID: pulsarclient.LatestMessageID()}); err != nil {
			c.fail(fmt.Errorf("reader on %s: %w", r.Spec.Output, err))
			return
		}
		defer rd.Close()
	}
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic})
	if err != nil {
		c.fail(fmt.Errorf("producer on %s: %w", topic, err))
		return
	}
	defer p.Close()
	if _, err := p.Send(c.ctx, &pulsarclient.ProducerMessage{Payload: value}); err != nil {
		c.fail(fmt.Errorf("publish to %s: %w", topic, err))
		return
	}
	if rd == nil {
		c.w.WriteHeader(http.StatusOK)
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	m, err := rd.Next(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			httpapi.WriteError(c.w, http.StatusRequestTimeout, "Request Timed Out: no output within 30s")
			return
		}
		c.fail(err)
		return
	}
	c.w.Header().Set("Content-Type", "text/plain")
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(m.Payload())
}
